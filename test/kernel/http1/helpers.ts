/** Shared helpers of the HTTP/1 codec tests: seeded PRNG, split feeding, byte sinks. */
import { EventEmitter } from 'node:events';
import { HeadParser, type HeadKind, type HeadLimits } from '../../../kernel/http1/head-parser.js';
import { ChunkedDecoder, type ChunkedDecoderOptions } from '../../../kernel/http1/chunked.js';

/** mulberry32: small, fast, seeded; failures reproduce from the seed in the test name. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Random integer in [0, n). */
export function randInt(rnd: () => number, n: number): number {
  return Math.floor(rnd() * n);
}

/** Bytes of a latin1 string. */
export function b(s: string): Buffer {
  return Buffer.from(s, 'latin1');
}

/** Cuts `buf` into pieces: every byte (`'bytes'`), or at random points drawn from `rnd`. */
export function pieces(buf: Uint8Array, how: 'whole' | 'bytes' | (() => number)): Uint8Array[] {
  if (how === 'whole') return [buf];
  const out: Uint8Array[] = [];
  if (how === 'bytes') {
    for (let i = 0; i < buf.length; i++) out.push(Buffer.from(buf.subarray(i, i + 1)));
    return out;
  }
  let i = 0;
  while (i < buf.length) {
    const n = 1 + Math.floor(how() * Math.min(64, buf.length));
    out.push(Buffer.from(buf.subarray(i, i + n)));
    i += n;
  }
  return out;
}

/** Result of {@link feedHead}. */
export interface FeedResult {
  parser: HeadParser;
  /** Head bytes consumed (the offset of the first byte after the head), or -1 if incomplete. */
  consumed: number;
}

/** Feeds pieces to a fresh parser until the head completes; throws what the parser throws. */
export function feedHead(kind: HeadKind, parts: Uint8Array[], limits?: HeadLimits): FeedResult {
  const parser = new HeadParser(kind, limits);
  let offset = 0;
  for (const part of parts) {
    const n = parser.execute(part);
    if (parser.complete) return { parser, consumed: offset + n };
    if (n !== part.length) throw new Error(`parser consumed ${n} of ${part.length} bytes without completing`);
    offset += n;
  }
  return { parser, consumed: -1 };
}

/** A snapshot of what a parser produced, for comparing split and whole parses. */
export function snapshot(p: HeadParser): unknown {
  return {
    method: p.method,
    target: p.target,
    versionMinor: p.versionMinor,
    status: p.status,
    reason: p.reason,
    headers: p.headers.toArray(),
    contentLength: p.contentLength,
    chunked: p.chunked,
    hasTransferEncoding: p.hasTransferEncoding,
    connection: p.connection,
    headBytes: p.headBytes,
  };
}

/** Decodes a whole chunked body from pieces; returns data, trailers, and the bytes left after it. */
export function decodeChunked(parts: Uint8Array[], options?: ChunkedDecoderOptions): { data: Buffer; trailers: [string, string][]; leftover: Buffer; done: boolean } {
  const dec = new ChunkedDecoder(options);
  const data: Buffer[] = [];
  const leftover: Buffer[] = [];
  for (const part of parts) {
    let pos = 0;
    while (pos < part.length) {
      if (dec.done) {
        leftover.push(Buffer.from(part.subarray(pos)));
        break;
      }
      pos += dec.execute(part, pos, part.length);
      if (dec.dataEnd > dec.dataStart) data.push(Buffer.from(part.subarray(dec.dataStart, dec.dataEnd)));
    }
  }
  return { data: Buffer.concat(data), trailers: dec.trailers.toArray(), leftover: Buffer.concat(leftover), done: dec.done };
}

/** A sink collecting what is written; `write` returns false every `pressureEvery` calls and emits 'drain' later. */
export class MemorySink extends EventEmitter {
  chunks: Buffer[] = [];
  writes = 0;
  destroyed = false;
  constructor(private readonly pressureEvery = 0) {
    super();
  }
  write(chunk: Uint8Array): boolean {
    if (this.destroyed) return false;
    this.chunks.push(Buffer.from(chunk));
    this.writes++;
    if (this.pressureEvery > 0 && this.writes % this.pressureEvery === 0) {
      setTimeout(() => this.emit('drain'), 1);
      return false;
    }
    return true;
  }
  get bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }
  get text(): string {
    return this.bytes.toString('latin1');
  }
}
