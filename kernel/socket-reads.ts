/**
 * How the kernel reads a plain TCP socket, through net's user-buffer reads (the machinery
 * behind `net.connect({ onread })`), three ways:
 * - bounded ({@link boundReads}): a connection's first bytes, never past the preface a protocol
 *   tap declared (see `ProtocolTapOptions`), so what follows it stays in the socket for the taker;
 * - direct ({@link readDirect}): every read handed to one function as a view of a shared buffer,
 *   no Buffer and no stream machinery per read (the HTTP/1.1 server and client connections);
 * - as a stream again ({@link unboundReads}): for whoever takes the socket over.
 *
 * Why bounded, with HTTP/2 (h2c) as the case that made it matter: bytes read in JavaScript and then
 * given to node:http2 (`unshift`, which the session takes on its next tick) are parsed inside
 * that JavaScript call, and the streams in them run their whole lifecycle nested in it, in an
 * order they never have otherwise. V8 learns from those first streams, and the whole process
 * then serves HTTP/2 5-8% slower for good (measured with `bench/h2.ts`; see bench/README.md,
 * "Where the h2c gap was"). A detector that reads at most the 24 preface bytes leaves the
 * client's first frames in the kernel's socket buffer, for the session to read natively like
 * any later ones.
 *
 * How: the handle reads into a buffer we size, so a read never takes more than the preface
 * still missing. A server's
 * sockets cannot be given `onread` by option, so this sets the same fields (own symbols of every
 * `net.Socket`, found once by description) and calls the handle's `useUserBuffer`. Those are
 * node internals: where they are not as expected, {@link boundReads} returns false, changes
 * nothing, and the caller reads the socket as a stream instead (correct, only slower for h2c).
 */
import { Buffer } from 'node:buffer';
import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';

interface UserBufferKeys {
  /** The buffer the handle reads into next (net: `kBuffer`). */
  readonly buffer: symbol;
  /** `(nread, buffer) => boolean`, called with each read; false stops reading (net: `kBufferCb`). */
  readonly callback: symbol;
  /** `() => Uint8Array`, the buffer for the read after this one (net: `kBufferGen`). */
  readonly generator: symbol;
}

type SocketFields = Socket & Record<symbol, unknown> & { _handle?: { useUserBuffer?: unknown } | null };

/** undefined until the first socket is looked at; null when this runtime lacks the fields. */
let keys: UserBufferKeys | null | undefined;

function userBufferKeys(socket: Socket): UserBufferKeys | null {
  if (keys !== undefined) return keys;
  let buffer: symbol | undefined;
  let callback: symbol | undefined;
  let generator: symbol | undefined;
  for (const s of Object.getOwnPropertySymbols(socket)) {
    if (s.description === 'kBuffer') buffer = s;
    else if (s.description === 'kBufferCb') callback = s;
    else if (s.description === 'kBufferGen') generator = s;
  }
  keys = buffer !== undefined && callback !== undefined && generator !== undefined ? { buffer, callback, generator } : null;
  return keys;
}

/** Largest read: one buffer for every socket's reads, each copied out before the next can happen. */
export const READ_MAX = 64 * 1024;

let shared: Buffer | null = null;
/** Views of `shared` by length, so a socket's bounded reads allocate nothing per read. */
const views = new Map<number, Buffer>();

function view(length: number): Buffer {
  shared ??= Buffer.allocUnsafeSlow(READ_MAX);
  if (length >= READ_MAX) return shared;
  let v = views.get(length);
  if (v === undefined) {
    v = shared.subarray(0, length);
    if (views.size < 64) views.set(length, v);
  }
  return v;
}

/**
 * Reads `socket` at most `first` bytes, then at most what `onBytes` asks for each time.
 * `onBytes(bytes, full)` gets each read as a view that is valid only during the call (copy
 * what you keep) and whether it filled the buffer (when it did, more may be waiting and the
 * same libuv read loop goes on; when not, this was the last read for now). It returns how
 * many bytes the next read may take at most (up to {@link READ_MAX}): 0 stops reading (the
 * handle stops; `socket.resume()` starts it again). Reads stay bounded until
 * {@link unboundReads}, which `onBytes` may call itself (its return value then only says
 * whether to go on reading). End of stream and errors go to the socket's events as usual.
 * Returns false, having changed nothing, where node's internals are not as this module
 * expects (or the socket already reads into a user buffer).
 */
export function boundReads(socket: Socket, first: number, onBytes: (bytes: Buffer, full: boolean) => number): boolean {
  const k = userBufferKeys(socket);
  const s = socket as SocketFields;
  const handle = s._handle;
  if (k === null || handle == null || typeof handle.useUserBuffer !== 'function' || s[k.buffer] !== null) return false;
  // Never a zero-length buffer: libuv takes that for "no memory" and the read fails.
  let want = first > 0 ? first : 1;
  const buf = view(want);
  s[k.buffer] = buf;
  s[k.generator] = (): Buffer => view(want > 0 ? want : 1);
  s[k.callback] = (nread: number, b: Buffer): boolean => {
    want = onBytes(b.subarray(0, nread), nread === b.length);
    return want > 0;
  };
  handle.useUserBuffer(buf);
  return true;
}

function pushCopy(this: Socket, nread: number, buf: Buffer): boolean {
  const chunk = Buffer.allocUnsafe(nread);
  buf.copy(chunk, 0, 0, nread);
  return this.push(chunk);
}

function sharedBuffer(): Buffer {
  return view(READ_MAX);
}

/**
 * After {@link boundReads}: reads of up to {@link READ_MAX} again, each copied out of the
 * shared buffer and pushed to the socket's readable side, so 'data', `pause`/`resume` and
 * backpressure work as on any socket. (The handle keeps reading into a user buffer: node has
 * no way back from that.)
 */
export function unboundReads(socket: Socket): void {
  const k = keys;
  if (k == null) return;
  const s = socket as SocketFields;
  // The read in flight still lands in the bounded buffer: `k.buffer` stays until net takes the
  // generator's buffer after that read.
  s[k.generator] = sharedBuffer;
  s[k.callback] = pushCopy;
}

/**
 * Reads `socket` by calling `onRead(nread, buf)` with each read, as net calls the callback of
 * a `net.connect({ onread })` socket: `this` is the socket, `buf[0..nread)` the bytes, a view
 * of one buffer shared by every such socket and valid only during the call (copy what you
 * keep); false stops reading (`socket.resume()` starts it again). No Buffer is made per read and
 * the readable side's machinery (a push, its bookkeeping, a 'data' event) is skipped: a
 * keep-alive connection answering one small request per read spends a good part of its time
 * there. `pause`/`resume`, 'end', 'close' and errors work as on any socket. For a socket that
 * {@link boundReads} bounded, the read in flight still lands in the bounded buffer. Returns
 * false, having changed nothing, for a TLS socket and where node's internals are not as this
 * module expects; {@link unboundReads} gives the socket's reads back to its readable side.
 */
export function readDirect(socket: Socket, onRead: (this: Socket, nread: number, buf: Buffer) => boolean): boolean {
  if ((socket as Socket & { encrypted?: boolean }).encrypted === true) return false;
  const k = userBufferKeys(socket);
  if (k === null) return false;
  const s = socket as SocketFields;
  // A stream that is not a net socket has none of the fields.
  if (!(k.buffer in s) || s._handle == null) return false;
  if (s[k.buffer] === null) {
    const handle = s._handle;
    if (handle == null || typeof handle.useUserBuffer !== 'function') return false;
    const buf = sharedBuffer();
    s[k.buffer] = buf;
    handle.useUserBuffer(buf);
  }
  s[k.generator] = sharedBuffer;
  s[k.callback] = onRead;
  return true;
}

/**
 * Pauses the readable side of a socket that reads into a user buffer without stopping its
 * handle: net's `pause` on such a socket also stops reading, and the `resume` after it starts
 * again, two `epoll_ctl` calls per connection for nothing when the same read loop goes on.
 */
export function pauseReadable(socket: Socket): void {
  Duplex.prototype.pause.call(socket);
}
