/**
 * The HTTP `CONNECT` tunnel (RFC 9110 §9.3.6): asks an HTTP proxy for a byte stream to
 * `host:port`, with `Proxy-Authorization` from the proxy URL's user info. The request head is
 * the kernel's, and the answer's head is read with the kernel's one exchange of heads under its
 * own limits; a 2xx opens the tunnel (any framing headers on it are ignored, as the RFC says),
 * 1xx interim answers are skipped, and anything else is a {@link ProxyStatusError} carrying the
 * proxy's status and headers.
 */
import type net from 'node:net';
import { Headers, ParseError, ProtocolError, hostPort } from '../../kernel/index.js';
import { exchangeHead, requestFraming, serializeRequestHead, type ExchangedHead } from '../../kernel/protocol.js';
import type { ProxyEndpoint } from './endpoint.js';
import { ProxyError, ProxyStatusError } from './errors.js';

/** Largest CONNECT answer head accepted, in bytes (a proxy's error page body is never read). */
export const CONNECT_MAX_HEADER_BYTES = 65536;
/** Longest line of a CONNECT answer head, in bytes. */
export const CONNECT_MAX_LINE_BYTES = 16384;

/** Sends `CONNECT host:port` on `socket` (connected to `proxy`) and resolves once the tunnel is open. */
export async function httpConnect(socket: net.Socket, proxy: ProxyEndpoint, host: string, port: number): Promise<void> {
  const authority = hostPort(host, port);
  const step = `the CONNECT handshake for ${authority}`;
  const headers = new Headers();
  if (proxy.authorization !== null) headers.push('Proxy-Authorization', proxy.authorization);
  const head = serializeRequestHead('CONNECT', authority, headers, null, requestFraming('CONNECT', headers, 0).field);
  // Until the socket's next owner attaches one, a late error must not crash the process.
  socket.on('error', noop);
  let answer: ExchangedHead;
  try {
    answer = await exchangeHead(socket, head, {
      maxLineBytes: CONNECT_MAX_LINE_BYTES,
      maxHeaderBytes: CONNECT_MAX_HEADER_BYTES,
      closedError: (received) => new ProxyError(proxy.href, `proxy ${proxy.href} closed the connection during ${step}${received > 0 ? ` (after ${received} bytes of reply)` : ' (before replying)'}`),
    });
  } catch (err) {
    if (err instanceof ProxyError) throw err;
    if (err instanceof ProtocolError) {
      const what = err.limit !== null ? 'a CONNECT answer head over the limit' : 'an invalid CONNECT answer';
      throw new ProtocolError(`proxy ${proxy.href} sent ${what} (${err.message})`, { cause: err, limit: err.limit ?? undefined, line: err.line });
    }
    if (err instanceof ParseError) throw new ParseError(`proxy ${proxy.href} sent an invalid CONNECT answer: ${err.message}`, { cause: err });
    throw new ProxyError(proxy.href, `connection to proxy ${proxy.href} failed during ${step}: ${(err as Error).message}`, { cause: err });
  }
  const status = answer.status;
  if (status < 200 || status >= 300) throw new ProxyStatusError(proxy.href, authority, status, answer.reason, answer.headers, proxy.authorization !== null);
  // Bytes the proxy sent past its answer are the tunnel's: the next reader takes them first.
  if (answer.rest.length > 0) socket.unshift(answer.rest);
}

function noop(): void {}
