/**
 * A switchyard request (a client `Request`, or a server `Stream`'s request with its body still
 * on the connection) as the web's global `Request`, and the one rule for the absolute URL a
 * server request has on the web side.
 */
import { ArgumentError, ProtocolError } from '../errors.js';
import { AbstractBody } from '../message/body.js';
import { describeType } from '../message/message.js';
import { Request } from '../message/request.js';
import { Stream } from '../server/stream.js';
import { toWebHeaders } from './headers.js';
import { readableOf, readableOfBody } from './readable.js';

// A host (name or IPv4, optional port up to 65535) the URL parser would leave as it is.
const PLAIN_HOST = /^[a-z0-9.-]+(?::(?:[0-9]{1,4}|[0-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?$/;

// Bytes the URL parser leaves as they are in a path and a query: visible ASCII but '#' (a
// fragment), the backslash (read as '/') and those it percent-encodes: the double quote,
// '<', '>', the backquote, '{', '}', and the single quote in the query of an http(s) URL.
const PLAIN: Uint8Array = (() => {
  const t = new Uint8Array(128);
  for (let c = 0x21; c <= 0x7e; c++) t[c] = 1;
  for (const c of '#\\"<>`{}\'') t[c.charCodeAt(0)] = 0;
  return t;
})();

// The last authority seen and the origin it made: a server answers under one name (or a few)
// far more often than not, so the host is checked and the origin joined once, not per request.
let lastHost: string | null = null;
let lastTls = false;
let lastOrigin = '';

/**
 * True when `target` is already a normalized path (no dot segment, backslash, fragment or byte
 * the URL parser would escape), which is joined to the origin as it is, without the parser.
 */
function plainPath(target: string): boolean {
  let prev = 0x2f; // the leading '/'
  for (let i = 1; i < target.length; i++) {
    const c = target.charCodeAt(i);
    // A '.' right after a '/' may start a dot segment.
    if (c > 0x7e || PLAIN[c] === 0 || (c === 0x2e && prev === 0x2f)) return false;
    prev = c;
  }
  return true;
}

/**
 * The absolute URL of a server request as the web sees it (`Request.url`): the scheme from the
 * connection (`tls`), the authority from the request (HTTP/2 `:authority`, else `Host`;
 * `localhost` for an HTTP/1.0 request with neither), the path as the URL parser normalizes it
 * (dot segments resolved, so a router sees the path the application will). An absolute-form
 * target (a proxy request) is taken as it is. Throws `ProtocolError` for an authority or target
 * that does not make a URL (answered 400).
 */
export function webRequestUrl(req: Request, tls: boolean): string {
  const target = req.target;
  if (target.charCodeAt(0) !== 0x2f /* '/' */) {
    if (target.startsWith('http://') || target.startsWith('https://')) {
      try {
        return new URL(target).href;
      } catch (err) {
        throw new ProtocolError(`request target ${JSON.stringify(target)} is not a valid URL`, { cause: err });
      }
    }
    throw new ProtocolError(`request target ${JSON.stringify(target)} has no path a URL can hold (origin or absolute form expected)`);
  }
  const host = req.host ?? req.headers.get('host') ?? 'localhost';
  let origin: string;
  if (host === lastHost && tls === lastTls) origin = lastOrigin;
  else {
    const scheme = tls ? 'https://' : 'http://';
    origin = scheme + (PLAIN_HOST.test(host) ? host : checkedHost(scheme, host));
    lastHost = host;
    lastTls = tls;
    lastOrigin = origin;
  }
  if (plainPath(target)) return origin + target;
  try {
    return new URL(origin + target).href;
  } catch (err) {
    throw new ProtocolError(`request target ${JSON.stringify(target)} is not a valid URL path`, { cause: err });
  }
}

/** `host` as the URL parser writes it, when it is an authority and nothing more (no user info, path or query smuggled in). */
function checkedHost(scheme: string, host: string): string {
  let u: URL;
  try {
    u = new URL(scheme + host);
  } catch (err) {
    throw new ProtocolError(`request authority ${JSON.stringify(host)} is not a valid host`, { cause: err });
  }
  if (u.username !== '' || u.password !== '' || u.pathname !== '/' || u.search !== '' || u.hash !== '' || host.endsWith('/') || host === '') {
    throw new ProtocolError(`request authority ${JSON.stringify(host)} is not a valid host`);
  }
  return u.host;
}

/**
 * The web's global `Request` for `req`: method, headers (combined per name as the web type
 * keeps them; trailers dropped, as the web type has none), the context's `signal` (aborts
 * when the client goes away or the request is canceled) and the body as a `ReadableStream`.
 *
 * - A server {@link Stream}: the URL is absolute (see {@link webRequestUrl}); the body is read
 *   from the connection as the stream is read (backpressure holds), and cancelling it closes
 *   the read side.
 * - A `Request`: its `url` (set by the client) or, without one, the URL built from its host
 *   and target over `http`; a body in memory is given as bytes, a streamed one as a stream.
 *
 * Throws `ArgumentError` for anything else, `ProtocolError` for a target or host that does not
 * make a URL, and the web type's `TypeError` for a method it forbids (`CONNECT`, `TRACE`).
 */
export function toWebRequest(req: Request | Stream): globalThis.Request {
  if (req instanceof Stream) {
    const r = req.request;
    return webRequest(r, webRequestUrl(r, req.server.tls), bodyOfStream(req));
  }
  if (!(req instanceof Request)) throw new ArgumentError(`toWebRequest takes a Request or a server Stream, got ${describeType(req)}`);
  const url = req.url !== '' ? req.url : webRequestUrl(req, false);
  const body = req.body;
  return webRequest(req, url, body instanceof AbstractBody ? readableOfBody(body) : body === null || body.length === 0 ? null : body);
}

/** @internal The request body still on `stream`'s connection, as a web stream read on demand. */
export function bodyOfStream(stream: Stream): ReadableStream<Uint8Array> {
  return readableOf(
    () => stream.read(),
    () => void stream.closeRead(),
  );
}

/**
 * @internal The global `Request` for `req` at `url` with `body`; `headers` when the web headers
 * were made already (else from the request's).
 */
export function webRequest(req: Request, url: string, body: ReadableStream<Uint8Array> | Uint8Array | string | null, headers: globalThis.Headers | null = null): globalThis.Request {
  const method = req.method;
  const init: RequestInit & { duplex?: 'half' } = { method, headers: headers ?? toWebHeaders(req.headers), signal: req.ctx.signal };
  if (body !== null && method !== 'GET' && method !== 'HEAD') {
    init.body = body;
    if (body instanceof ReadableStream) init.duplex = 'half';
  } else if (body instanceof ReadableStream) {
    // A GET's body (it has none, in practice) is not read: closing it lets the connection go on.
    void body.cancel();
  }
  return new globalThis.Request(url, init);
}
