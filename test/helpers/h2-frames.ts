/**
 * A raw HTTP/2 frame writer and reader for the bad-input tests: a client that ignores the
 * rules on purpose (opens streams past SETTINGS_MAX_CONCURRENT_STREAMS, resets them at once,
 * sends oversized header blocks, never reads). Header blocks use HPACK literals only.
 */
import type { Socket } from 'node:net';

/** Frame types used here. */
export const T = { DATA: 0, HEADERS: 1, RST_STREAM: 3, SETTINGS: 4, PING: 6, GOAWAY: 7, WINDOW_UPDATE: 8, CONTINUATION: 9 } as const;
/** The client connection preface magic. */
export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/** One frame. */
export function frame(type: number, flags: number, stream: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const h = Buffer.alloc(9);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(stream & 0x7fffffff, 5);
  return Buffer.concat([h, payload]);
}

function int7(n: number): number[] {
  if (n < 127) return [n];
  const out = [127];
  n -= 127;
  while (n >= 128) {
    out.push((n % 128) + 128);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
}

/** An HPACK header block of literals (lowercase names). */
export function block(fields: [string, string][]): Buffer {
  const parts: Buffer[] = [];
  for (const [n, v] of fields) {
    parts.push(Buffer.from([0]), Buffer.from(int7(n.length)), Buffer.from(n, 'latin1'), Buffer.from(int7(v.length)), Buffer.from(v, 'latin1'));
  }
  return Buffer.concat(parts);
}

/** A GET for `path` as a HEADERS frame with END_STREAM|END_HEADERS. */
export function get(stream: number, path = '/', extra: [string, string][] = []): Buffer {
  return frame(T.HEADERS, 0x5, stream, block([[':method', 'GET'], [':scheme', 'http'], [':path', path], [':authority', 'localhost'], ...extra]));
}

/** SETTINGS with the given (id, value) pairs. */
export function settings(pairs: [number, number][] = []): Buffer {
  const p = Buffer.alloc(pairs.length * 6);
  pairs.forEach(([id, v], i) => {
    p.writeUInt16BE(id, i * 6);
    p.writeUInt32BE(v, i * 6 + 2);
  });
  return frame(T.SETTINGS, 0, 0, p);
}

/** RST_STREAM with an error code (8 = CANCEL). */
export function rst(stream: number, code = 8): Buffer {
  const p = Buffer.alloc(4);
  p.writeUInt32BE(code, 0);
  return frame(T.RST_STREAM, 0, stream, p);
}

/** A frame received from the server. */
export interface Frame {
  type: number;
  flags: number;
  stream: number;
  payload: Buffer;
}

/** Collects the frames the server sends on `socket` (after nothing: the server sends no preface magic). */
export class FrameReader {
  readonly frames: Frame[] = [];
  private buf = Buffer.alloc(0);
  closed = false;

  constructor(socket: Socket) {
    socket.on('data', (c: Buffer) => {
      this.buf = Buffer.concat([this.buf, c]);
      while (this.buf.length >= 9) {
        const len = this.buf.readUIntBE(0, 3);
        if (this.buf.length < 9 + len) break;
        this.frames.push({ type: this.buf[3]!, flags: this.buf[4]!, stream: this.buf.readUInt32BE(5) & 0x7fffffff, payload: this.buf.subarray(9, 9 + len) });
        this.buf = this.buf.subarray(9 + len);
      }
    });
    socket.on('close', () => (this.closed = true));
    socket.on('error', () => undefined);
  }

  /** Frames of one type. */
  of(type: number): Frame[] {
    return this.frames.filter((f) => f.type === type);
  }

  /** The error codes of the RST_STREAM frames received, by stream. */
  resets(): Map<number, number> {
    const m = new Map<number, number>();
    for (const f of this.of(T.RST_STREAM)) m.set(f.stream, f.payload.readUInt32BE(0));
    return m;
  }
}
