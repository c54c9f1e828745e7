/**
 * Errors of the proxy plugin. A failed proxy handshake reaches the caller as the kernel's
 * `ConnectError(address, cause)` for the origin it was meant to reach; these classes are the
 * `cause`, carrying what the proxy said. (Failing to reach the proxy at all is a plain
 * `ConnectError` or `DNSError` for the proxy's own address.)
 */
import { HTTPError, type Headers } from '../../kernel/index.js';

/** A proxy broke off or refused a handshake. `proxy` is its URL without credentials. */
export class ProxyError extends HTTPError {
  /** `SWY_ERR_PROXY`, or a subclass's own code. */
  readonly code: string = 'SWY_ERR_PROXY';
  /** The proxy, as `scheme://host:port` (no credentials). */
  readonly proxy: string;
  constructor(proxy: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.proxy = proxy;
  }
}

/** An HTTP proxy answered `CONNECT` with a status other than 2xx (407: authentication required). */
export class ProxyStatusError extends ProxyError {
  /** Always `SWY_ERR_PROXY_STATUS`. */
  override readonly code = 'SWY_ERR_PROXY_STATUS';
  /** The proxy's status, such as 403 or 407. */
  readonly status: number;
  /** The reason phrase the proxy sent (possibly empty). */
  readonly reason: string;
  /** The headers of the proxy's answer (`Proxy-Authenticate` for a 407). */
  readonly headers: Headers;
  /** `credentialsSent`: the request carried `Proxy-Authorization` (a 407 then means they were refused). */
  constructor(proxy: string, target: string, status: number, reason: string, headers: Headers, credentialsSent = false) {
    const hint = status !== 407 ? '' : credentialsSent ? ': the proxy refused the credentials of the proxy URL' : ': proxy authentication required (put user:password in the proxy URL)';
    super(proxy, `proxy ${proxy} refused CONNECT ${target} with ${status}${reason !== '' ? ` ${reason}` : ''}${hint}`);
    this.status = status;
    this.reason = reason;
    this.headers = headers;
  }
}

/** What each SOCKS5 reply code means (RFC 1928 §6). */
export const SOCKS5_REPLIES: Readonly<Record<number, string>> = Object.freeze({
  1: 'general SOCKS server failure',
  2: 'connection not allowed by ruleset',
  3: 'network unreachable',
  4: 'host unreachable',
  5: 'connection refused',
  6: 'TTL expired',
  7: 'command not supported',
  8: 'address type not supported',
});

/** A SOCKS5 proxy refused: no acceptable authentication method, bad credentials, or a CONNECT reply code other than 0. */
export class Socks5Error extends ProxyError {
  /** Always `SWY_ERR_SOCKS5`. */
  override readonly code = 'SWY_ERR_SOCKS5';
  /** The CONNECT reply code (1 to 8, or an unassigned value); -1 when the greeting or authentication failed. */
  readonly reply: number;
  /** The step that failed. */
  readonly step: 'greeting' | 'authentication' | 'connect';
  constructor(proxy: string, step: Socks5Error['step'], reply: number, message: string) {
    super(proxy, message);
    this.step = step;
    this.reply = reply;
  }
}

/** The text for a SOCKS5 reply code. */
export function socks5ReplyText(code: number): string {
  return SOCKS5_REPLIES[code] ?? `unassigned reply code 0x${code.toString(16).padStart(2, '0')}`;
}
