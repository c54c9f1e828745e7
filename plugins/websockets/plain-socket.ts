/**
 * `PlainSocket`: a WebSocket connection with uncompressed frames (RFC 6455), on a socket whose
 * HTTP handshake is done. The frame parser reads straight off the socket's 'data' events and
 * a small message goes out as one buffer in one write, so a handler's echo reaches the write
 * syscall sooner than through ws's stream-based receiver and corked two-part writes (measured
 * in bench/diagnostics/ws-latency.ts). Connections that agreed permessage-deflate use ws (see
 * ws-lib.ts), which this class mirrors event for event: 'message' (data, isBinary), 'pong',
 * 'error' (a protocol violation, before the close it causes), 'close' (code, reason).
 *
 * Rules kept (the close code sent for each in parentheses): frames from a client must be
 * masked and from a server must not (1002); RSV bits need an extension (1002); reserved
 * opcodes (1002); control frames are final and at most 125 bytes (1002); a continuation needs
 * a message started, a new message needs the last one ended (1002); a frame or message past
 * `maxPayload` is refused from its declared length, before its payload (1009); more fragments
 * than `maxFragments` (1008); text must be UTF-8 (1007); a close frame carries no code or a
 * valid one (1002) and a UTF-8 reason (1007). Pings are answered with a pong of the same data.
 *
 * Closing: `close()` sends a close frame and waits for the peer's (at most `closeTimeout` ms,
 * then the socket is destroyed); a close frame received is answered with one echoing its code,
 * and the socket ends once both went. After a protocol error the close frame goes out and the
 * socket ends without waiting. The code reported on 'close' is the peer's (1005 when its frame
 * had none), or 1006 when the connection ended without one.
 */
import { isUtf8 } from 'node:buffer';
import { randomFillSync } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { Duplex } from 'node:stream';

/** What the WebSocket class uses of a connection: ws's `WebSocket` and {@link PlainSocket} both have it. */
export interface FrameSocket {
  /** 0 connecting, 1 open, 2 closing, 3 closed (as ws and the browser API number them). */
  readonly readyState: number;
  /** The extensions agreed (`permessage-deflate …`), or ''. */
  readonly extensions: string;
  /** Bytes queued for the socket but not written yet. */
  readonly bufferedAmount: number;
  send(data: string | Uint8Array, cb?: (err?: Error | null) => void): void;
  ping(data: string | Uint8Array): void;
  pong(data: string | Uint8Array): void;
  close(code: number, reason: string): void;
  terminate(): void;
  pause(): void;
  resume(): void;
  on(event: 'message', fn: (data: Buffer, isBinary: boolean) => void): unknown;
  on(event: 'pong', fn: (data: Buffer) => void): unknown;
  on(event: 'error', fn: (err: Error) => void): unknown;
  once(event: 'close', fn: (code: number, reason: Buffer) => void): unknown;
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

/** Options of a {@link PlainSocket}. */
export interface PlainSocketOptions {
  /** Server side: expects masked frames, sends unmasked ones. */
  readonly isServer: boolean;
  /** Largest frame and message payload (0: unbounded). */
  readonly maxPayload: number;
  /** Most fragments per message (0: unbounded). */
  readonly maxFragments: number;
  /** How long `close()` waits for the peer's close frame before dropping the connection. */
  readonly closeTimeout: number;
}

/** @internal A WebSocket connection with uncompressed frames (see the module notes). */
export class PlainSocket extends EventEmitter implements FrameSocket {
  readyState = OPEN;
  readonly extensions = '';
  private readonly socket: Duplex;
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
  private fragmentOpcode = 0;
  private closeSent = false;
  private closeReceived = false;
  private failed = false;
  private closeCode = 1006;
  private closeReason: Buffer = EMPTY;
  private closeTimer: NodeJS.Timeout | null = null;

  constructor(socket: Duplex, head: Uint8Array, o: PlainSocketOptions) {
    super();
    this.socket = socket;
    this.isServer = o.isServer;
    this.maxPayload = o.maxPayload;
    this.maxFragments = o.maxFragments;
    this.closeTimeout = o.closeTimeout;
    const s = socket as Duplex & { setTimeout?(ms: number): void; setNoDelay?(on?: boolean): void };
    s.setTimeout?.(0);
    s.setNoDelay?.(true);
    // Bytes read past the handshake are parsed first, on the socket's next 'data', once the
    // caller has listened to 'message'.
    if (head.length > 0) socket.unshift(Buffer.isBuffer(head) ? head : Buffer.from(head.buffer, head.byteOffset, head.length));
    socket.on('data', this.onData);
    socket.on('end', this.onEnd);
    socket.on('error', this.onError);
    socket.once('close', this.onClose);
  }

  get bufferedAmount(): number {
    return this.socket.writableLength;
  }

  // ---- sending -----------------------------------------------------------------------------

  send(data: string | Uint8Array, cb?: (err?: Error | null) => void): void {
    if (typeof data === 'string') this.frame(1, Buffer.from(data, 'utf8'), cb);
    else this.frame(2, Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength), cb);
  }

  ping(data: string | Uint8Array): void {
    this.frame(9, typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data.buffer, data.byteOffset, data.byteLength));
  }

  pong(data: string | Uint8Array): void {
    this.frame(10, typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data.buffer, data.byteOffset, data.byteLength));
  }

  /** Writes one final frame of `opcode` carrying `payload`. */
  private frame(opcode: number, payload: Buffer, cb?: (err?: Error | null) => void): void {
    const n = payload.length;
    const mask = !this.isServer;
    const lenBytes = n < 126 ? 0 : n < 65536 ? 2 : 8;
    const head = 2 + lenBytes + (mask ? 4 : 0);
    const whole = mask || n <= COPY_LIMIT;
    const out = Buffer.allocUnsafe(whole ? head + n : head);
    out[0] = 0x80 | opcode;
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
        randomFillSync(MASK_POOL);
        maskAt = 0;
      }
      const m = head - 4;
      MASK_POOL.copy(out, m, maskAt, maskAt + 4);
      maskAt += 4;
      applyMask(payload, 0, n, out, m, out, head);
      socket.write(out, cb);
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

  close(code: number, reason: string): void {
    if (this.readyState === CLOSED) return;
    if (this.closeSent) {
      if (this.closeReceived || this.failed) this.socket.end();
      return;
    }
    this.readyState = CLOSING;
    this.sendClose(code === 1005 ? -1 : code, reason);
    if (this.closeReceived || this.failed) this.socket.end();
    else if (this.closeTimer === null) this.closeTimer = setTimeout(() => this.socket.destroy(), this.closeTimeout);
  }

  /** Sends the close frame: `code` -1 for none. */
  private sendClose(code: number, reason: string): void {
    this.closeSent = true;
    if (code < 0) {
      this.frame(8, EMPTY, noop);
      return;
    }
    const r = Buffer.from(reason, 'utf8');
    const payload = Buffer.allocUnsafe(2 + r.length);
    payload.writeUInt16BE(code, 0);
    r.copy(payload, 2);
    this.frame(8, payload, noop);
  }

  terminate(): void {
    if (this.readyState === CLOSED) return;
    this.readyState = CLOSING;
    this.socket.destroy();
  }

  pause(): void {
    this.socket.pause();
  }

  resume(): void {
    this.socket.resume();
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
    if (this.readyState === OPEN) this.close(code, '');
    else if (this.closeSent) this.socket.end();
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
    if (this.closeTimer !== null) clearTimeout(this.closeTimer);
    this.closeTimer = null;
    this.socket.removeListener('data', this.onData);
    this.readyState = CLOSED;
    this.emit('close', this.closeCode, this.closeReason);
  };

  // ---- receiving ---------------------------------------------------------------------------

  private readonly onData = (chunk: Buffer): void => {
    if (this.buffered === 0) {
      this.chunks.length = 0;
      this.offset = 0;
    }
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    while (this.buffered >= 2 && !this.failed && !this.closeReceived && this.parseFrame());
  };

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

  /** Parses one frame if it is all there: true to go on, false to wait for more bytes (or after a failure). */
  private parseFrame(): boolean {
    const b0 = this.byteAt(0);
    const b1 = this.byteAt(1);
    const fin = (b0 & 0x80) !== 0;
    const opcode = b0 & 0x0f;
    const masked = (b1 & 0x80) !== 0;
    if ((b0 & 0x70) !== 0) return (this.fail(1002, 'RSV bits set without an extension that defines them'), false);
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
      if (hi > 0x1fffff) return (this.fail(1009, 'frame length over 2^53 - 1'), false);
      len = hi * 2 ** 32 + lo;
      head = 10;
    }
    if (opcode < 8 && this.maxPayload > 0 && this.fragmentBytes + len > this.maxPayload) {
      return (this.fail(1009, `message longer than maxFrameSize (${this.maxPayload} bytes)`), false);
    }
    const total = head + (masked ? 4 : 0) + len;
    if (this.buffered < total) return false;
    const frame = this.take(total);
    const at = head + (masked ? 4 : 0);
    // Unmasked in place: the bytes are ours (a socket chunk, or a copy).
    if (masked) applyMask(frame, at, len, frame, head, frame, at);
    const payload = frame.subarray(at);
    if (opcode >= 8) return this.control(opcode, payload);
    if (this.maxFragments > 0 && (this.fragments?.length ?? 0) + 1 > this.maxFragments) {
      return (this.fail(1008, `message in more than maxFragmentation (${this.maxFragments}) fragments`), false);
    }
    if (!fin) {
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
      this.fragments = null;
      this.fragmentBytes = 0;
    }
    if (type === 1 && !isUtf8(data)) return (this.fail(1007, 'a text message is not valid UTF-8'), false);
    this.emit('message', data, type === 2);
    return true;
  }

  private control(opcode: number, payload: Buffer): boolean {
    if (opcode === 9) {
      if (this.readyState === OPEN) this.frame(10, payload);
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
    if (this.closeSent) this.socket.end();
    else this.close(code, code === 1005 ? '' : this.closeReason.toString('utf8'));
    return false;
  }
}

function noop(): void {}
