/**
 * `FrameConnection`: the frame codec of a WebSocket connection (RFC 6455) on a socket whose HTTP
 * handshake is done. The parser reads straight off the socket's 'data' events and a small
 * message goes out as one buffer in one write, so a handler's echo reaches the write syscall
 * sooner than through ws's stream-based receiver and corked two-part writes (measured in
 * bench/diagnostics/ws-latency.ts). With permessage-deflate agreed (RFC 7692), messages go
 * through a `MessageDeflate` (message-zlib.ts: zlib under the agreed window and
 * context-takeover rules, its bound on decompressed size), one at a time each way, in order;
 * a message is compressed when the
 * context is kept, or else from 1 KiB, as ws decides. Events, as ws's WebSocket has them:
 * 'message' (data, isBinary), 'pong', 'error' (a protocol violation, before the close it
 * causes), 'close' (code, reason).
 *
 * Rules kept (the close code sent for each in parentheses): frames from a client must be
 * masked and from a server must not (1002); RSV1 only on the first frame of a data message of
 * a compressed connection, RSV2 and RSV3 never (1002); reserved opcodes (1002); control frames
 * are final and at most 125 bytes (1002); a continuation needs a message started, a new
 * message needs the last one ended (1002); a frame or message past `maxPayload` is refused
 * from its declared length, before its payload (1009), and a compressed one that inflates past
 * it (1009) or does not inflate (1007); more fragments than `maxFragments` (1008); text must
 * be UTF-8 (1007); a close frame carries no code or a valid one (1002) and a UTF-8 reason
 * (1007). Pings are answered with a pong of the same data.
 *
 * Closing: `close()` sends a close frame and waits for the peer's (at most `closeTimeout` ms,
 * then the socket is destroyed); a close frame received is answered with one echoing its code
 * and reason, and the socket ends once both went (after the last is written). After a
 * protocol error the close frame goes out and the socket ends without waiting. The code
 * reported on 'close' is the peer's (1005 when its frame had none), the one we sent when we
 * failed the connection for a protocol error (1002, 1007, 1008, 1009), or 1006 when the
 * connection ended without a close frame.
 */
import { Buffer } from 'node:buffer';
import { isUtf8 } from 'node:buffer';
import { EventEmitter } from 'node:events';
import { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { nodeCrypto } from '../../kernel/index.js';

/** The compression of a connection that agreed permessage-deflate (message-zlib.ts's `MessageZlib`). */
export interface MessageDeflate {
  /** The parameters agreed. */
  readonly params: Record<string, unknown> | null;
  /** Compresses one message (`fin`: its last part). */
  compress(data: Buffer, fin: boolean, cb: (err: Error | null, out?: Buffer) => void): void;
  /**
   * Inflates one frame's payload (`fin`: the message's last); a RangeError once the message's
   * frames together inflate past the size bound (zlib stopped there, memory bounded).
   */
  decompress(data: Buffer, fin: boolean, cb: (err: Error | null, out?: Buffer) => void): void;
  /** Releases the zlib streams. */
  cleanup(): void;
}

/** Name of the permessage-deflate extension, as the handshake and `extensions` spell it. */
export const PERMESSAGE_DEFLATE = 'permessage-deflate';
/** Below this size a message is sent uncompressed when the context is not kept (ws's threshold). */
const DEFLATE_THRESHOLD = 1024;

/** A frame waiting behind a compression in flight. */
interface Queued {
  opcode: number;
  payload: Buffer;
  cb: ((err?: Error | null) => void) | undefined;
  compress: boolean;
}

/** The events of a {@link FrameConnection}, typed. */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging -- typed events for the class below
export interface FrameConnection {
  on(event: 'message', fn: (data: Buffer, isBinary: boolean) => void): this;
  on(event: 'pong', fn: (data: Buffer) => void): this;
  on(event: 'error', fn: (err: Error) => void): this;
  once(event: 'close', fn: (code: number, reason: Buffer) => void): this;
}

/** A protocol violation by the peer, with the close code it is answered with. */
export class FrameError extends Error {
  /** The close code sent for it. */
  readonly closeCode: number;
  constructor(closeCode: number, message: string) {
    super(message);
    this.name = 'FrameError';
    this.closeCode = closeCode;
  }
}

const OPEN = 1;
const CLOSING = 2;
const CLOSED = 3;

/** Payloads up to this size are copied behind their header and written in one piece. */
const COPY_LIMIT = 16 * 1024;
const EMPTY = Buffer.alloc(0);

// Masks for client frames come from a pool of random bytes, refilled when used up.
const MASK_POOL = Buffer.alloc(8192);
let maskAt = MASK_POOL.length;

function validCloseCode(code: number): boolean {
  return (code >= 1000 && code <= 1014 && code !== 1004 && code !== 1005 && code !== 1006) || (code >= 3000 && code <= 4999);
}

/** XORs `data[from..from+n)` with the 4-byte mask at `mask[m..m+4)` into `out[at..)`. */
function applyMask(data: Buffer, from: number, n: number, mask: Buffer, m: number, out: Buffer, at: number): void {
  const m0 = mask[m]!;
  const m1 = mask[m + 1]!;
  const m2 = mask[m + 2]!;
  const m3 = mask[m + 3]!;
  let i = 0;
  for (; i + 3 < n; i += 4) {
    out[at + i] = data[from + i]! ^ m0;
    out[at + i + 1] = data[from + i + 1]! ^ m1;
    out[at + i + 2] = data[from + i + 2]! ^ m2;
    out[at + i + 3] = data[from + i + 3]! ^ m3;
  }
  for (; i < n; i++) out[at + i] = data[from + i]! ^ mask[m + (i & 3)]!;
}

/** Options of a {@link FrameConnection}. */
export interface FrameConnectionOptions {
  /** Server side: expects masked frames, sends unmasked ones. */
  readonly isServer: boolean;
  /** Largest frame and message payload (0: unbounded). */
  readonly maxPayload: number;
  /** Most fragments per message (0: unbounded). */
  readonly maxFragments: number;
  /** How long `close()` waits for the peer's close frame before dropping the connection. */
  readonly closeTimeout: number;
  /** The permessage-deflate state when the handshake agreed it, else null. */
  readonly deflate: MessageDeflate | null;
}

/** @internal One WebSocket connection's frames, both ways (see the module notes). */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging -- see the events interface above
export class FrameConnection extends EventEmitter {
  /** 1 open, 2 closing, 3 closed (as ws and the browser API number them). */
  readyState = OPEN;
  /** The extensions agreed (`permessage-deflate`), or ''. */
  readonly extensions: string;
  private readonly socket: Duplex;
  private readonly deflate: MessageDeflate | null;
  /** Frames waiting while a message is being compressed (null when none is). */
  private queue: Queued[] | null = null;
  private queuedBytes = 0;
  /** A compressed frame is being inflated: parsing waits for it. */
  private inflating = false;
  /** The socket closed while a frame was being inflated: 'close' waits for what was read before it. */
  private closeDeferred = false;
  /** The message in progress is compressed; its inflated size so far. */
  private messageCompressed = false;
  private inflatedBytes = 0;
  /** Reading paused by the reader (`pause()`), or by us while inflating with much buffered. */
  private userPaused = false;
  private ownPaused = false;
  private readonly isServer: boolean;
  private readonly maxPayload: number;
  private readonly maxFragments: number;
  private readonly closeTimeout: number;
  /** Bytes received and not parsed yet: whole chunks, the first read from `offset`. */
  private chunks: Buffer[] = [];
  private offset = 0;
  private buffered = 0;
  /** Fragments of the data message in progress (null between messages), their total size and opcode. */
  private fragments: Buffer[] | null = null;
  private fragmentBytes = 0;
  private fragmentCount = 0;
  private fragmentOpcode = 0;
  private closeSent = false;
  /** Our close frame reached the socket. */
  private closeWritten = false;
  private closeReceived = false;
  private failed = false;
  private closeCode = 1006;
  private closeReason: Buffer = EMPTY;
  private closeTimer: NodeJS.Timeout | null = null;

  constructor(socket: Duplex, head: Uint8Array, o: FrameConnectionOptions) {
    super();
    this.socket = socket;
    this.isServer = o.isServer;
    this.maxPayload = o.maxPayload;
    this.maxFragments = o.maxFragments;
    this.closeTimeout = o.closeTimeout;
    this.deflate = o.deflate;
    this.extensions = o.deflate !== null ? PERMESSAGE_DEFLATE : '';
    const s = socket as Duplex & { setTimeout?(ms: number): void; setNoDelay?(on?: boolean): void };
    s.setTimeout?.(0);
    s.setNoDelay?.(true);
    // Bytes read past the handshake are parsed first, on the socket's next 'data', once the
    // caller has listened to 'message'.
    if (head.length > 0) socket.unshift(Buffer.isBuffer(head) ? head : Buffer.from(head.buffer, head.byteOffset, head.length));
    socket.on('data', this.onData);
    skipReadMoreTick(socket);
    socket.on('end', this.onEnd);
    socket.on('error', this.onError);
    socket.once('close', this.onClose);
  }

  /** Bytes queued for the socket (or behind a compression) and not written yet. */
  get bufferedAmount(): number {
    return this.socket.writableLength + this.queuedBytes;
  }

  // ---- sending -----------------------------------------------------------------------------

  /** Sends a message (a string as text, bytes as binary); `cb` once it reached the socket. */
  send(data: string | Uint8Array, cb?: (err?: Error | null) => void): void {
    const payload = typeof data === 'string' ? Buffer.from(data, 'utf8') : bytesOf(data);
    this.out(typeof data === 'string' ? 1 : 2, payload, cb, this.deflate !== null && this.compresses(payload.length));
  }

  /** ws's rule: every message while the compression context is kept, else from 1 KiB. */
  private compresses(n: number): boolean {
    const p = this.deflate!.params;
    return p === null || p[this.isServer ? 'server_no_context_takeover' : 'client_no_context_takeover'] !== true || n >= DEFLATE_THRESHOLD;
  }

  /** Sends a ping (at most 125 bytes; the caller checks). */
  ping(data: string | Uint8Array): void {
    this.out(9, typeof data === 'string' ? Buffer.from(data, 'utf8') : bytesOf(data), undefined, false);
  }

  /** Sends an unsolicited pong (at most 125 bytes; the caller checks). */
  pong(data: string | Uint8Array): void {
    this.out(10, typeof data === 'string' ? Buffer.from(data, 'utf8') : bytesOf(data), undefined, false);
  }

  /** Sends a frame, behind any compression in flight (frames leave in the order sent). */
  private out(opcode: number, payload: Buffer, cb: ((err?: Error | null) => void) | undefined, compress: boolean): void {
    if (this.queue !== null) {
      this.enqueue(opcode, payload, cb, compress);
      return;
    }
    if (!compress) {
      this.frame(opcode, payload, cb, false);
      return;
    }
    this.queue = [];
    this.queuedBytes += payload.length;
    this.deflate!.compress(payload, true, (_err, out) => {
      this.queuedBytes -= payload.length;
      const waiting = this.queue!;
      this.queue = null;
      if (this.socket.destroyed || out === undefined) {
        const err = new Error('the WebSocket connection closed before the message was sent');
        cb?.(err);
        for (const q of waiting) q.cb?.(err);
        this.queuedBytes = 0;
        return;
      }
      this.frame(opcode, out, cb, true);
      for (const q of waiting) {
        this.queuedBytes -= q.payload.length;
        this.out(q.opcode, q.payload, q.cb, q.compress);
      }
    });
  }

  private enqueue(opcode: number, payload: Buffer, cb: ((err?: Error | null) => void) | undefined, compress: boolean): void {
    this.queue!.push({ opcode, payload, cb, compress });
    this.queuedBytes += payload.length;
  }

  /** Writes one final frame of `opcode` carrying `payload` (`rsv1`: a compressed message). */
  private frame(opcode: number, payload: Buffer, cb: ((err?: Error | null) => void) | undefined, rsv1: boolean): void {
    const n = payload.length;
    const mask = !this.isServer;
    const lenBytes = n < 126 ? 0 : n < 65536 ? 2 : 8;
    const head = 2 + lenBytes + (mask ? 4 : 0);
    // A large payload goes out after its header in the same corked write, not copied; a
    // caller's bytes that must be masked are copied (never changed), but a compressed
    // message's are ours and are masked where they lie.
    const whole = n <= COPY_LIMIT || (mask && !rsv1);
    const out = Buffer.allocUnsafe(whole ? head + n : head);
    out[0] = (rsv1 ? 0xc0 : 0x80) | opcode;
    if (lenBytes === 0) out[1] = n;
    else if (lenBytes === 2) {
      out[1] = 126;
      out.writeUInt16BE(n, 2);
    } else {
      out[1] = 127;
      out.writeUInt32BE(Math.floor(n / 2 ** 32), 2);
      out.writeUInt32BE(n >>> 0, 6);
    }
    const socket = this.socket;
    if (mask) {
      out[1] |= 0x80;
      if (maskAt + 4 > MASK_POOL.length) {
        nodeCrypto().randomFillSync(MASK_POOL);
        maskAt = 0;
      }
      const m = head - 4;
      MASK_POOL.copy(out, m, maskAt, maskAt + 4);
      maskAt += 4;
      if (whole) {
        applyMask(payload, 0, n, out, m, out, head);
        socket.write(out, cb);
      } else {
        applyMask(payload, 0, n, out, m, payload, 0);
        socket.cork();
        socket.write(out);
        socket.write(payload, cb);
        socket.uncork();
      }
    } else if (whole) {
      payload.copy(out, head);
      socket.write(out, cb);
    } else {
      socket.cork();
      socket.write(out);
      socket.write(payload, cb);
      socket.uncork();
    }
  }

  // ---- closing -----------------------------------------------------------------------------

  /** Starts the closing handshake (1005: a close frame without a code); see the module notes. */
  close(code: number, reason: string): void {
    if (this.readyState === CLOSED) return;
    if (this.closeSent) {
      if (this.closeWritten && (this.closeReceived || this.failed)) this.socket.end();
      return;
    }
    this.readyState = CLOSING;
    this.closeSent = true;
    let payload = EMPTY;
    if (code !== 1005) {
      const r = Buffer.from(reason, 'utf8');
      payload = Buffer.allocUnsafe(2 + r.length);
      payload.writeUInt16BE(code, 0);
      r.copy(payload, 2);
    }
    // The socket ends once the frame is out (it may wait behind a compression) and, unless the
    // peer broke the protocol, the peer's close frame came.
    this.out(8, payload, this.afterCloseWritten, false);
    // Bounded either way: a peer that never answers, or never reads what we wrote, is dropped.
    if (this.closeTimer === null) this.closeTimer = setTimeout(() => this.socket.destroy(), this.closeTimeout);
  }

  private readonly afterCloseWritten = (err?: Error | null): void => {
    if (err) return;
    this.closeWritten = true;
    if (this.closeReceived || this.failed) this.socket.end();
  };

  /** Drops the connection without a closing handshake. */
  terminate(): void {
    if (this.readyState === CLOSED) return;
    this.readyState = CLOSING;
    this.socket.destroy();
  }

  /** Stops reading from the socket (the reader's backpressure). */
  pause(): void {
    this.userPaused = true;
    this.socket.pause();
  }

  /** Reads from the socket again. */
  resume(): void {
    this.userPaused = false;
    if (!this.ownPaused) this.socket.resume();
  }

  /** The peer broke the protocol: say why ('error'), close with `code`, end the socket at once. */
  private fail(code: number, message: string): void {
    this.failed = true;
    this.chunks = [];
    this.buffered = 0;
    this.socket.removeListener('data', this.onData);
    // Keep reading (and dropping) so the peer's FIN, and 'close', come.
    this.socket.resume();
    this.emit('error', new FrameError(code, message));
    if (this.readyState === OPEN) {
      // The peer's answer is not read after a failure: the code we sent is the one to report.
      this.closeCode = code;
      this.close(code, '');
    } else if (this.closeWritten) this.socket.end();
  }

  private readonly onEnd = (): void => {
    this.readyState = CLOSING;
    this.socket.end();
  };

  private readonly onError = (): void => {
    // The socket failed ('close' follows): nothing to say to a peer that is gone.
    this.readyState = CLOSING;
    this.socket.destroy();
  };

  private readonly onClose = (): void => {
    // A message still in zlib, and the frames read after it (its close frame, most often),
    // come first: the peer sent them before its FIN.
    if (this.inflating) {
      this.closeDeferred = true;
      return;
    }
    this.finishClose();
  };

  private finishClose(): void {
    this.closeDeferred = false;
    if (this.closeTimer !== null) clearTimeout(this.closeTimer);
    this.closeTimer = null;
    this.deflate?.cleanup();
    this.socket.removeListener('data', this.onData);
    this.readyState = CLOSED;
    this.emit('close', this.closeCode, this.closeReason);
  }

  // ---- receiving ---------------------------------------------------------------------------

  private readonly onData = (chunk: Buffer): void => {
    if (this.buffered === 0) {
      this.chunks.length = 0;
      this.offset = 0;
    }
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    if (this.inflating) {
      // Parsing waits for the inflation in flight; past 64 KiB waiting, so does the peer.
      if (this.buffered > 65536 && !this.ownPaused) {
        this.ownPaused = true;
        this.socket.pause();
      }
      return;
    }
    this.pump();
  };

  private pump(): void {
    while (this.buffered >= 2 && !this.failed && !this.closeReceived && !this.inflating && this.parseFrame());
  }

  /** The byte `i` positions into what is buffered (in the first chunk, almost always). */
  private byteAt(i: number): number {
    const first = this.chunks[0]!;
    const at = this.offset + i;
    return at < first.length ? first[at]! : this.byteAfterFirst(at - first.length);
  }

  private byteAfterFirst(at: number): number {
    for (let k = 1; k < this.chunks.length; k++) {
      const c = this.chunks[k]!;
      if (at < c.length) return c[at]!;
      at -= c.length;
    }
    return 0;
  }

  /** Takes the next `n` buffered bytes (a view into a chunk when they lie in one). */
  private take(n: number): Buffer {
    this.buffered -= n;
    const first = this.chunks[0]!;
    if (first.length - this.offset >= n) {
      const out = first.subarray(this.offset, this.offset + n);
      this.offset += n;
      if (this.offset === first.length) {
        this.chunks.shift();
        this.offset = 0;
      }
      return out;
    }
    const out = Buffer.allocUnsafe(n);
    let at = 0;
    while (at < n) {
      const c = this.chunks[0]!;
      const k = Math.min(c.length - this.offset, n - at);
      c.copy(out, at, this.offset, this.offset + k);
      at += k;
      this.offset += k;
      if (this.offset === c.length) {
        this.chunks.shift();
        this.offset = 0;
      }
    }
    return out;
  }

  /**
   * Takes the next frame (`total` bytes: a `head`-byte header, the mask when `masked`, the
   * payload) and returns its payload unmasked: a view into the chunk it lies in (almost
   * always), else into a copy. Unmasked in place: the bytes are ours.
   */
  private takePayload(total: number, head: number, masked: boolean): Buffer {
    const first = this.chunks[0]!;
    const o = this.offset;
    let buf = first;
    let start = o;
    if (first.length - o >= total) {
      this.buffered -= total;
      this.offset = o + total;
      if (this.offset === first.length) {
        this.chunks.shift();
        this.offset = 0;
      }
    } else {
      buf = this.take(total);
      start = 0;
    }
    const at = start + head + (masked ? 4 : 0);
    if (masked) applyMask(buf, at, start + total - at, buf, start + head, buf, at);
    return buf.subarray(at, start + total);
  }

  /** Parses one frame if it is all there: true to go on, false to wait for more bytes (or after a failure). */
  private parseFrame(): boolean {
    const b0 = this.byteAt(0);
    const b1 = this.byteAt(1);
    const fin = (b0 & 0x80) !== 0;
    const opcode = b0 & 0x0f;
    const masked = (b1 & 0x80) !== 0;
    const rsv1 = (b0 & 0x40) !== 0;
    if ((b0 & 0x30) !== 0 || (rsv1 && (this.deflate === null || opcode === 0 || opcode >= 8))) {
      return (this.fail(1002, 'RSV bits set where no extension defines them'), false);
    }
    if (masked !== this.isServer) return (this.fail(1002, this.isServer ? 'a client frame is not masked' : 'a server frame is masked'), false);
    if (opcode >= 8) {
      if (opcode > 10) return (this.fail(1002, `reserved opcode ${opcode}`), false);
      if (!fin) return (this.fail(1002, 'a control frame is fragmented'), false);
      if ((b1 & 0x7f) > 125) return (this.fail(1002, 'a control frame is longer than 125 bytes'), false);
    } else if (opcode > 2) {
      return (this.fail(1002, `reserved opcode ${opcode}`), false);
    } else if (opcode === 0 ? this.fragments === null : this.fragments !== null) {
      return (this.fail(1002, opcode === 0 ? 'a continuation frame without a message to continue' : 'a new message before the last one ended'), false);
    }
    let len = b1 & 0x7f;
    let head = 2;
    if (len === 126) {
      if (this.buffered < 4) return false;
      len = (this.byteAt(2) << 8) | this.byteAt(3);
      head = 4;
    } else if (len === 127) {
      if (this.buffered < 10) return false;
      const hi = ((this.byteAt(2) << 24) >>> 0) + (this.byteAt(3) << 16) + (this.byteAt(4) << 8) + this.byteAt(5);
      const lo = ((this.byteAt(6) << 24) >>> 0) + (this.byteAt(7) << 16) + (this.byteAt(8) << 8) + this.byteAt(9);
      // RFC 6455 §5.2: the most significant bit MUST be 0 (a protocol error); below it, a length
      // JavaScript cannot count exactly is too big.
      if (hi >= 0x80000000) return (this.fail(1002, 'a 64-bit frame length with its most significant bit set'), false);
      if (hi > 0x1fffff) return (this.fail(1009, 'frame length over 2^53 - 1'), false);
      len = hi * 2 ** 32 + lo;
      head = 10;
    }
    if (opcode < 8 && this.maxPayload > 0 && this.fragmentBytes + len > this.maxPayload) {
      return (this.fail(1009, `message longer than maxFrameSize (${this.maxPayload} bytes)`), false);
    }
    const total = head + (masked ? 4 : 0) + len;
    if (this.buffered < total) return false;
    const payload = this.takePayload(total, head, masked);
    if (opcode >= 8) return this.control(opcode, payload);
    if (this.maxFragments > 0 && this.fragmentCount + 1 > this.maxFragments) {
      return (this.fail(1008, `message in more than maxFragmentation (${this.maxFragments}) fragments`), false);
    }
    if (opcode !== 0) this.messageCompressed = rsv1;
    if (this.messageCompressed) return this.inflate(opcode, payload, fin);
    if (!fin) {
      this.fragmentCount++;
      if (this.fragments === null) {
        this.fragments = [];
        this.fragmentOpcode = opcode;
      }
      this.fragments.push(payload);
      this.fragmentBytes += len;
      return true;
    }
    let data = payload;
    let type = opcode;
    if (this.fragments !== null) {
      this.fragments.push(payload);
      data = Buffer.concat(this.fragments, this.fragmentBytes + len);
      type = this.fragmentOpcode;
      this.endMessage();
    }
    return this.deliver(data, type);
  }

  private endMessage(): void {
    this.fragments = null;
    this.fragmentBytes = 0;
    this.fragmentCount = 0;
    this.inflatedBytes = 0;
  }

  /** A whole message: text must be UTF-8. False after a failure. */
  private deliver(data: Buffer, type: number): boolean {
    if (type === 1 && !isUtf8(data)) return (this.fail(1007, 'a text message is not valid UTF-8'), false);
    this.emit('message', data, type === 2);
    return true;
  }

  /** Inflates a frame of a compressed message; parsing goes on when it is done. */
  private inflate(opcode: number, payload: Buffer, fin: boolean): boolean {
    if (this.fragments === null) {
      this.fragments = [];
      this.fragmentOpcode = opcode;
    }
    this.fragmentCount++;
    this.fragmentBytes += payload.length;
    this.inflating = true;
    this.deflate!.decompress(payload, fin, (err, out) => {
      this.inflating = false;
      this.inflated(err, out, fin);
      if (this.closeDeferred && !this.inflating) this.finishClose();
    });
    return false;
  }

  /** A frame of a compressed message came out of zlib: deliver the message at its end, parse on. */
  private inflated(err: Error | null | undefined, out: Buffer | undefined, fin: boolean): void {
    if (this.failed || this.readyState === CLOSED) return;
    if (err) {
      this.fail(err instanceof RangeError ? 1009 : 1007, `a compressed message ${err instanceof RangeError ? 'inflates past maxFrameSize' : 'does not inflate'}: ${err.message}`);
      return;
    }
    // The inflater bounds the whole message by maxPayload (a RangeError above).
    if (out !== undefined && out.length > 0) {
      this.inflatedBytes += out.length;
      this.fragments!.push(out);
    }
    if (fin) {
      const parts = this.fragments!;
      const data = parts.length === 1 ? parts[0]! : Buffer.concat(parts, this.inflatedBytes);
      const type = this.fragmentOpcode;
      this.endMessage();
      if (!this.deliver(data, type)) return;
    }
    this.pump();
    if (this.ownPaused && !this.inflating) {
      this.ownPaused = false;
      if (!this.userPaused) this.socket.resume();
    }
  }

  private control(opcode: number, payload: Buffer): boolean {
    if (opcode === 9) {
      if (this.readyState === OPEN) this.out(10, payload, undefined, false);
      return true;
    }
    if (opcode === 10) {
      this.emit('pong', payload);
      return true;
    }
    // Close.
    if (payload.length === 1) return (this.fail(1002, 'a close frame with a 1-byte payload'), false);
    let code = 1005;
    let reason: Buffer = EMPTY;
    if (payload.length >= 2) {
      code = payload.readUInt16BE(0);
      if (!validCloseCode(code)) return (this.fail(1002, `invalid close code ${code}`), false);
      reason = payload.subarray(2);
      if (!isUtf8(reason)) return (this.fail(1007, 'a close reason is not valid UTF-8'), false);
    }
    this.closeReceived = true;
    this.closeCode = code;
    this.closeReason = Buffer.from(reason);
    this.chunks = [];
    this.buffered = 0;
    this.socket.removeListener('data', this.onData);
    this.socket.resume();
    // Answered with a close frame echoing the code and reason (none when it had none).
    if (this.closeWritten) this.socket.end();
    else if (!this.closeSent) this.close(code, code === 1005 ? '' : this.closeReason.toString('utf8'));
    return false;
  }
}

/**
 * After every chunk a flowing stream delivers, node's Readable schedules a `process.nextTick`
 * (`maybeReadMore`) that asks the stream to read more. For a TCP or TLS socket that is a no-op
 * (its handle keeps reading until paused, and resuming restarts it), but a scheduled tick makes
 * node run its JavaScript tick loop before the microtasks that resume a handler waiting in
 * `receive()`: measured, ~0.3 µs more from a message's bytes to the handler's answer
 * (bench/diagnostics/ws-latency.ts). Marking the state as already reading more skips that tick
 * for the socket's life. Only for node's own sockets; any other stream may rely on it to be read.
 */
function skipReadMoreTick(socket: Duplex): void {
  if (!(socket instanceof Socket)) return;
  const state = (socket as Socket & { _readableState?: { readingMore?: boolean } })._readableState;
  if (state !== undefined && typeof state.readingMore === 'boolean') state.readingMore = true;
}

/** `data` as a Buffer over the same bytes. */
function bytesOf(data: Uint8Array): Buffer {
  return Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}
