/**
 * The WebSocket opening handshake (RFC 6455 §4, RFC 7692 §5), server side: is this request an
 * upgrade, is it a valid one, which subprotocol and permessage-deflate parameters to agree,
 * and the 101 (or refusal) to answer with. Also the `Sec-WebSocket-Accept` computation both
 * sides use.
 */
import { headerContains, Headers, nodeCrypto, type Request } from '../../kernel/index.js';
import { normalizeOrigin, type ResolvedCheckOrigin, type ResolvedServerOptions } from './options.js';
import { PERMESSAGE_DEFLATE, type Deflate, type WsModule } from './ws-lib.js';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
const KEY = /^[+/0-9A-Za-z]{21}[AQgw]==$/;

/** `Sec-WebSocket-Accept` for a `Sec-WebSocket-Key`. */
export function acceptKey(key: string): string {
  return nodeCrypto()
    .createHash('sha1')
    .update(key + GUID)
    .digest('base64');
}

/**
 * True when `request` asks for a WebSocket: a GET with `Connection: upgrade` and
 * `Upgrade: websocket` (the reference's `isupgrade(stream.message)`).
 */
export function isUpgrade(request: Request): boolean {
  const h = request.headers;
  return request.method === 'GET' && headerContains(h, 'Connection', 'upgrade') && headerContains(h, 'Upgrade', 'websocket');
}

/** What to answer: a 101 with what was agreed, or a refusal. */
export type Negotiation =
  | { readonly ok: true; readonly headers: Headers; readonly protocol: string | null; readonly deflate: Deflate | null }
  | { readonly ok: false; readonly status: number; readonly message: string; readonly headers: Headers };

function refuse(status: number, message: string, extra?: [string, string]): Negotiation {
  const headers = new Headers();
  if (extra !== undefined) headers.set(extra[0], extra[1]);
  return { ok: false, status, message, headers };
}

/**
 * True when `origin` names the host the request was sent to: the Origin's host and port
 * equal the `Host` header's, the port defaulting to the Origin scheme's where not written.
 */
function isSameOrigin(origin: string, host: string | undefined): boolean {
  if (host === undefined) return false;
  let o: URL;
  let h: URL;
  try {
    o = new URL(origin);
    const secure = o.protocol === 'https:' || o.protocol === 'wss:';
    if (!secure && o.protocol !== 'http:' && o.protocol !== 'ws:') return false;
    // Parsed under the Origin's scheme, so URL drops the same default port from both.
    h = new URL(`${secure ? 'https' : 'http'}://${host}`);
  } catch {
    return false;
  }
  if (h.username !== '' || h.password !== '' || h.pathname !== '/' || h.search !== '' || h.hash !== '') return false;
  return o.hostname === h.hostname && o.port === h.port;
}

async function originAllowed(check: ResolvedCheckOrigin, request: Request): Promise<boolean> {
  if (check === 'any') return true;
  const all = request.headers.getAll('Origin');
  // Two Origin fields are no origin a browser sends: refused unless anything goes.
  if (all.length > 1) return false;
  const origin = all.length === 1 ? all[0]!.trim() : null;
  if (typeof check === 'function') return (await check(origin, request)) === true;
  if (check === 'same-origin') {
    // A request without Origin does not come from a browser page: no ambient credentials to abuse.
    return origin === null || isSameOrigin(origin, request.headers.get('Host'));
  }
  // A list names exactly who may connect.
  if (origin === null) return false;
  const normalized = normalizeOrigin(origin);
  return normalized !== null && check.has(normalized);
}

/**
 * Checks an upgrade request and decides the answer: 426 (with `Upgrade: websocket`) for a
 * request that is not a WebSocket upgrade or speaks another version; 400 for an HTTP/1.0
 * request (RFC 6455 §4.2.1 asks for HTTP/1.1 or higher), for one declaring a body (its bytes
 * would be read as frames) and for a bad key; 403 when `checkOrigin` refuses. The subprotocol
 * is the first the client offers that the server lists; permessage-deflate is agreed when
 * both want it, and quietly left out when the client's offer cannot be accepted (plain
 * frames, RFC 7692 §5).
 */
export async function negotiate(mod: WsModule, request: Request, o: ResolvedServerOptions): Promise<Negotiation> {
  if (!isUpgrade(request)) {
    return refuse(426, 'this endpoint speaks WebSocket: send a GET with Connection: Upgrade and Upgrade: websocket', ['Upgrade', 'websocket']);
  }
  // 400, not 426: the client already asks for websocket; its request is what is wrong.
  if (request.protoMajor === 1 && request.protoMinor === 0) return refuse(400, 'a WebSocket handshake must be an HTTP/1.1 request, not HTTP/1.0');
  if (request.contentLength !== 0 || request.headers.has('Transfer-Encoding')) {
    return refuse(400, 'a WebSocket handshake has no body: send it without Content-Length or Transfer-Encoding');
  }
  const h = request.headers;
  const version = h.get('Sec-WebSocket-Version');
  if (version !== '13') return refuse(426, `unsupported Sec-WebSocket-Version ${JSON.stringify(version ?? '')}: version 13 only`, ['Sec-WebSocket-Version', '13']);
  const key = h.get('Sec-WebSocket-Key');
  if (key === undefined || !KEY.test(key)) return refuse(400, 'missing or invalid Sec-WebSocket-Key (16 bytes in base64)');
  if (!(await originAllowed(o.checkOrigin, request))) return refuse(403, `origin ${JSON.stringify(h.get('Origin') ?? null)} is not allowed`);

  const headers = new Headers();
  headers.push('Upgrade', 'websocket');
  headers.push('Connection', 'Upgrade');
  headers.push('Sec-WebSocket-Accept', acceptKey(key));

  let protocol: string | null = null;
  if (o.subprotocols.length > 0) {
    const offered = h.getAll('Sec-WebSocket-Protocol').join(',');
    for (const p of offered.split(',')) {
      const name = p.trim();
      if (name !== '' && o.subprotocols.includes(name)) {
        protocol = name;
        break;
      }
    }
    if (protocol !== null) headers.push('Sec-WebSocket-Protocol', protocol);
  }

  let deflate: Deflate | null = null;
  const ext = h.getAll('Sec-WebSocket-Extensions').join(',');
  if (o.compress && ext !== '') {
    try {
      const offers = mod.extension.parse(ext)[PERMESSAGE_DEFLATE];
      if (offers !== undefined) {
        const d = new mod.PerMessageDeflate({ isServer: true, maxPayload: o.maxFrameSize });
        d.accept(offers);
        headers.push('Sec-WebSocket-Extensions', mod.extension.format({ [PERMESSAGE_DEFLATE]: [d.params] }));
        deflate = d;
      }
    } catch {
      // An offer we cannot take (or cannot parse) is declined: the connection uses plain frames.
      deflate = null;
    }
  }
  return { ok: true, headers, protocol, deflate };
}
