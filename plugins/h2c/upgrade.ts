/**
 * HTTP/1.1 `Upgrade: h2c` (RFC 7540 §3.2) on the server. node:http2 has no server-side
 * upgrade, so the request is replayed into a fresh HTTP/2 session as what it becomes after
 * the upgrade, stream 1 (half-closed by the client):
 *
 * 1. answer `101 Switching Protocols`;
 * 2. read the client's connection preface: the 24-byte magic and its first frame, SETTINGS;
 * 3. hand node:http2 the magic, that SETTINGS frame, then a HEADERS frame for stream 1 built
 *    from the upgraded request (END_STREAM: only requests without a body are upgraded), then
 *    whatever the client sent after its SETTINGS.
 *
 * The HTTP2-Settings header is not applied separately: a client repeats those values in the
 * SETTINGS frame of its preface (nghttp2, curl, Go do), and applying them twice through
 * node:http2 would make it acknowledge a SETTINGS frame the client never sent, which the
 * client must treat as a connection error.
 */
import { Buffer } from 'node:buffer';
import type { Duplex } from 'node:stream';
import { eqIgnoreCase, headerContains, URI, type Request, type UpgradeInfo } from '../../kernel/index.js';
import { H2_PREFACE } from '../../kernel/protocol.js';
import { serveH2 } from '../h2/index.js';
import { allowsH2c } from './options.js';
import { hpackLiteral } from './hpack.js';

/** Longest wait for the client's preface after the 101, when the server sets no readHeaderTimeout. */
const PREFACE_TIMEOUT_MS = 10_000;
/** Largest HEADERS payload per frame (the default SETTINGS_MAX_FRAME_SIZE). */
const MAX_FRAME = 16384;
const SWITCHING = 'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n';
/** Fields that stay behind in HTTP/1.1 (connection-specific, or the upgrade's own). */
const SKIP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'http2-settings', 'host', 'te', 'content-length']);

/** True for a request asking to switch to h2c: `Upgrade: h2c` with one `HTTP2-Settings` header. */
export function isH2cUpgrade(request: Request): boolean {
  return headerContains(request.headers, 'Upgrade', 'h2c') && request.headers.getAll('HTTP2-Settings').length === 1;
}

/**
 * Switches the connection of an `Upgrade: h2c` request to HTTP/2 and answers the request as
 * stream 1. Resolves to `true` when it took the socket, `undefined` when the upgrade is not
 * served here (h2c not allowed on this listener, an HTTP/1.0 request, a request body, a server
 * closing): the request then goes on as HTTP/1.1. `info` is what the `server.onUpgrade` tap got.
 */
export async function upgradeToH2c(request: Request, socket: Duplex, info: UpgradeInfo): Promise<true | undefined> {
  const { host, head } = info;
  if (!allowsH2c(info.server) || host.closing) return undefined;
  // RFC 9110 §7.8: a server MUST ignore Upgrade in an HTTP/1.0 request.
  if (request.protoMajor === 1 && request.protoMinor === 0) return undefined;
  // The body would have to be read before switching; such requests stay HTTP/1.1 (RFC 7540 §3.2 allows it).
  if (request.contentLength > 0 || request.headers.has('Transfer-Encoding')) return undefined;
  const block = requestBlock(request);
  socket.write(SWITCHING);
  let buf: Buffer = head.length > 0 ? Buffer.from(head.buffer, head.byteOffset, head.length) : Buffer.alloc(0);
  const timeoutMs = host.limits.readHeaderTimeout > 0 ? host.limits.readHeaderTimeout : PREFACE_TIMEOUT_MS;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => finish(false), timeoutMs);
    timer.unref();
    const finish = (ok: boolean): void => {
      clearTimeout(timer);
      socket.removeListener('data', onData);
      socket.removeListener('close', onClose);
      socket.pause();
      if (!ok) socket.destroy();
      resolve();
    };
    const check = (): void => {
      const need = prefaceLength(buf);
      if (need === -1) finish(false);
      else if (need > 0 && buf.length >= need) {
        const rest = buf.subarray(need);
        const replay = Buffer.concat([buf.subarray(0, need), headersFrames(block), rest]);
        finish(true);
        try {
          serveH2(socket, host, replay);
        } catch (err) {
          host.reportError(err, request);
          socket.destroy();
        }
      }
    };
    const onData = (chunk: Buffer): void => {
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      check();
    };
    const onClose = (): void => finish(false);
    socket.on('data', onData);
    socket.once('close', onClose);
    socket.on('error', noop);
    check();
    if (!socket.destroyed && socket.listenerCount('data') > 0) socket.resume();
  });
  return true;
}

/**
 * Bytes of the client preface in `buf` (magic plus the first frame) once all are there: the
 * total length, 0 while more are needed, -1 when it is not an HTTP/2 preface.
 */
function prefaceLength(buf: Buffer): number {
  const m = Math.min(buf.length, H2_PREFACE.length);
  for (let i = 0; i < m; i++) if (buf[i] !== H2_PREFACE[i]) return -1;
  if (buf.length < H2_PREFACE.length + 9) return 0;
  const o = H2_PREFACE.length;
  const len = (buf[o]! << 16) | (buf[o + 1]! << 8) | buf[o + 2]!;
  if (buf[o + 3] !== 0x4) return -1; // the first frame must be SETTINGS
  // RFC 9113 §6.5, §4.2: six bytes a setting, and no frame over the initial 16 KiB maximum; a
  // larger declared length would have this wait for (and hold) bytes no valid preface has.
  if (len % 6 !== 0 || len > 16384) return -1;
  return o + 9 + len;
}

/** The upgraded request as an HTTP/2 header block (HPACK literals, no dynamic table). */
function requestBlock(req: Request): Buffer {
  const parts: Buffer[] = [];
  let authority = req.headers.get('Host') ?? req.host ?? '';
  let path = req.target;
  const abs = absoluteForm(path);
  if (abs !== null) {
    // RFC 9112 §3.2.2: the target's authority, not Host, names the resource; HTTP/2 carries it
    // as :authority and only the path as :path, so the handler sees one authority.
    authority = abs.authority;
    path = abs.path;
  }
  parts.push(hpackLiteral(':method', req.method), hpackLiteral(':scheme', 'http'), hpackLiteral(':path', path), hpackLiteral(':authority', authority));
  const names = req.headers._names;
  const values = req.headers._values;
  for (let i = 0; i < names.length; i++) {
    const n = names[i]!.toLowerCase();
    if (SKIP.has(n)) continue;
    if (eqIgnoreCase(n, 'te') && values[i]!.trim().toLowerCase() !== 'trailers') continue;
    parts.push(hpackLiteral(n, values[i]!));
  }
  return Buffer.concat(parts);
}

/** The authority and the path of an absolute-form request target (`http://host/p?q`), or null for another form. */
function absoluteForm(target: string): { authority: string; path: string } | null {
  if (target.charCodeAt(0) === 0x2f || target === '*') return null;
  let u: URI;
  try {
    u = new URI(target);
  } catch {
    return null;
  }
  if (u.scheme === '') return null;
  const host = u.host.includes(':') ? `[${u.host}]` : u.host;
  return { authority: u.port === '' ? host : `${host}:${u.port}`, path: u.target };
}

/** HEADERS for stream 1 with END_STREAM, split into CONTINUATION frames past the frame size. */
function headersFrames(block: Buffer): Buffer {
  const frames: Buffer[] = [];
  let off = 0;
  let first = true;
  do {
    const n = Math.min(MAX_FRAME, block.length - off);
    const last = off + n >= block.length;
    const hdr = Buffer.alloc(9);
    hdr[0] = (n >> 16) & 0xff;
    hdr[1] = (n >> 8) & 0xff;
    hdr[2] = n & 0xff;
    hdr[3] = first ? 0x1 : 0x9; // HEADERS or CONTINUATION
    hdr[4] = (first ? 0x1 : 0) | (last ? 0x4 : 0); // END_STREAM on HEADERS, END_HEADERS on the last
    hdr.writeUInt32BE(1, 5);
    frames.push(hdr, block.subarray(off, off + n));
    off += n;
    first = false;
  } while (off < block.length);
  return Buffer.concat(frames);
}

function noop(): void {}
