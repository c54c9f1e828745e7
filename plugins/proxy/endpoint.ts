/**
 * One proxy server, parsed from its URL: `http://user:pass@host:3128`, `socks5://host`,
 * `socks5h://host:1080`, `https://…` (accepted here, refused when a request would use it), or a
 * bare `host:port` (taken as `http://`, as curl and Go do).
 */
import { Buffer } from 'node:buffer';
import { ArgumentError, hostPort } from '../../kernel/index.js';

/** Proxy URL schemes. */
export type ProxyProtocol = 'http:' | 'https:' | 'socks5:' | 'socks5h:';

const DEFAULT_PORTS: Readonly<Record<ProxyProtocol, number>> = { 'http:': 80, 'https:': 443, 'socks5:': 1080, 'socks5h:': 1080 };

/** A proxy server: scheme, address and credentials (percent-decoded from the URL's user info). */
export class ProxyEndpoint {
  /** `http:`, `https:`, `socks5:` or `socks5h:`. */
  readonly protocol: ProxyProtocol;
  /** Host name or IP (IPv6 without brackets). */
  readonly host: string;
  /** Port (default 80 for http, 443 for https, 1080 for SOCKS). */
  readonly port: number;
  /** User name, percent-decoded; empty when none. */
  readonly username: string;
  /** Password, percent-decoded; empty when none. */
  readonly password: string;
  /** `scheme://host:port`, without credentials: safe for messages and logs. */
  readonly href: string;
  /** `Basic …` for `Proxy-Authorization`, or null without credentials (HTTP proxies). */
  readonly authorization: string | null;

  /** Parses a proxy URL; throws `ArgumentError` naming what is wrong. */
  constructor(url: string | URL, what = 'proxy URL') {
    let u: URL;
    if (url instanceof URL) u = url;
    else {
      if (typeof url !== 'string') throw new ArgumentError(`${what} must be a URL string, got ${url === null ? 'null' : typeof url}`);
      const s = url.trim();
      if (s === '') throw new ArgumentError(`${what} is empty`);
      try {
        u = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(s) ? s : `http://${s}`);
      } catch {
        throw new ArgumentError(`${what} ${JSON.stringify(redact(s))} is not a valid URL`);
      }
    }
    const protocol = u.protocol.toLowerCase();
    if (protocol !== 'http:' && protocol !== 'https:' && protocol !== 'socks5:' && protocol !== 'socks5h:') {
      throw new ArgumentError(`${what}: unsupported proxy scheme ${protocol}// (use http://, socks5:// or socks5h://)`);
    }
    this.protocol = protocol;
    // Special schemes (http, https) parse hosts; for socks5 the URL parser leaves an opaque host.
    const raw = u.hostname;
    if (raw === '') throw new ArgumentError(`${what} ${JSON.stringify(redact(u.href))} has no host`);
    this.host = (raw.startsWith('[') && raw.endsWith(']') ? raw.slice(1, -1) : raw).toLowerCase();
    this.port = u.port !== '' ? Number(u.port) : DEFAULT_PORTS[protocol];
    this.username = decode(u.username);
    this.password = decode(u.password);
    this.href = `${protocol}//${hostPort(this.host, this.port)}`;
    if (protocol === 'socks5:' || protocol === 'socks5h:') {
      // RFC 1929 carries each in one length byte.
      if (Buffer.byteLength(this.username) > 255 || Buffer.byteLength(this.password) > 255) {
        throw new ArgumentError(`${what}: SOCKS5 user name and password are limited to 255 bytes each`);
      }
      if (this.username === '' && this.password !== '') throw new ArgumentError(`${what}: SOCKS5 needs a user name with the password`);
      this.authorization = null;
    } else {
      this.authorization = this.username !== '' || this.password !== '' ? `Basic ${Buffer.from(`${this.username}:${this.password}`, 'utf8').toString('base64')}` : null;
    }
  }

  /** `host:port` (IPv6 in brackets). */
  get address(): string {
    return hostPort(this.host, this.port);
  }

  /** The URL without credentials. */
  toString(): string {
    return this.href;
  }
}

/** Percent-decoded user info (the reference decodes it); a malformed escape is kept as written. */
function decode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** A URL string with its password replaced, for error messages. */
function redact(s: string): string {
  return s.replace(/\/\/([^:/@]*):[^@/]*@/, '//$1:***@');
}
