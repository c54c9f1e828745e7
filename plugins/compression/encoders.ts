/**
 * The zlib side of the compression plugin: which codings this Node has, a whole body compressed
 * in one call, and a {@link BodyEncoder} over a zlib stream for bodies that are streamed.
 */
import { Buffer } from 'node:buffer';
import type { Transform } from 'node:stream';
import { CanceledError, nodeZlib, type BodyEncoder } from '../../kernel/index.js';
import type { CompressionCoding } from './negotiate.js';

/** Compression levels: gzip 1-9, br 0-11, zstd 1-22 (the zlib defaults when absent). */
export interface CompressionLevels {
  /** gzip level, 1 (fastest) to 9 (smallest). Default 6, zlib's own. */
  gzip?: number;
  /** Brotli quality, 0 to 11. Default 4: quality 11 (zlib's default) costs tens of times more CPU for a few percent. */
  br?: number;
  /** zstd level, 1 to 22. Default 3, zstd's own. */
  zstd?: number;
}

/** @internal Levels with the defaults filled in. */
export type Levels = Required<CompressionLevels>;

/** The default levels. */
export const DEFAULT_LEVELS: Readonly<Levels> = Object.freeze({ gzip: 6, br: 4, zstd: 3 });

/** zstd is in `node:zlib` from Node 22.15 and 23.8 on; false on older Nodes (Node 20 has none). */
export function hasZstd(): boolean {
  return typeof (nodeZlib() as { createZstdCompress?: unknown }).createZstdCompress === 'function';
}

type ZstdZlib = {
  createZstdCompress(o: object): Transform;
  zstdCompressSync(b: Uint8Array, o: object): Buffer;
};

function options(coding: CompressionCoding, levels: Levels): object {
  const z = nodeZlib();
  const c = z.constants as unknown as Record<string, number>;
  if (coding === 'gzip') return { level: levels.gzip };
  if (coding === 'br') return { params: { [c.BROTLI_PARAM_QUALITY!]: levels.br } };
  return { params: { [c.ZSTD_c_compressionLevel!]: levels.zstd } };
}

/** Compresses a whole body in one call (a body already in memory). */
export function compressWhole(coding: CompressionCoding, levels: Levels, data: Uint8Array): Buffer {
  const z = nodeZlib();
  if (coding === 'gzip') return z.gzipSync(data, options(coding, levels));
  if (coding === 'br') return z.brotliCompressSync(data, options(coding, levels));
  return (z as unknown as ZstdZlib).zstdCompressSync(data, options(coding, levels));
}

function stream(coding: CompressionCoding, levels: Levels): Transform {
  const z = nodeZlib();
  // The output waits in the stream until a write's flush has settled and it is read: a
  // readable side that never says "full" keeps zlib from stopping halfway through a chunk.
  const o = { ...options(coding, levels), readableHighWaterMark: 2 ** 30 } as import('node:zlib').ZlibOptions & import('node:zlib').BrotliOptions;
  if (coding === 'gzip') return z.createGzip(o);
  if (coding === 'br') return z.createBrotliCompress(o);
  return (z as unknown as ZstdZlib).createZstdCompress(o);
}

function flushKind(coding: CompressionCoding): number {
  const c = nodeZlib().constants as unknown as Record<string, number>;
  if (coding === 'gzip') return c.Z_SYNC_FLUSH!;
  if (coding === 'br') return c.BROTLI_OPERATION_FLUSH!;
  return c.ZSTD_e_flush!;
}

const EMPTY = Buffer.alloc(0);

/** A write or end after `close()`: the response ended early (its client went away, or it failed). */
function closedError(): CanceledError {
  return new CanceledError('compression: the response body encoder was closed (the response ended early)');
}

/**
 * A {@link BodyEncoder} over a zlib compression stream. Each write resolves once zlib has
 * taken the chunk (and, with `flush`, emitted everything so far), with the output made by then.
 */
export class ZlibEncoder implements BodyEncoder {
  private z: Transform | null;
  private readonly kind: number;
  private failure: Error | null = null;

  /** A fresh stream for `coding` at `levels`. */
  constructor(coding: CompressionCoding, levels: Levels) {
    const z = stream(coding, levels);
    this.z = z;
    this.kind = flushKind(coding);
    z.on('error', (err: Error) => {
      this.failure = err;
    });
  }

  write(chunk: Uint8Array, flush: boolean): Promise<Uint8Array> {
    const z = this.z;
    if (z === null) return Promise.reject(this.failure ?? closedError());
    return new Promise((resolve, reject) => {
      const done = (err?: Error | null): void => {
        if (err != null || this.failure !== null) reject(err ?? this.failure);
        else resolve(this.take());
      };
      if (flush) {
        z.write(chunk);
        (z as Transform & { flush(kind: number, cb: () => void): void }).flush(this.kind, () => done());
      } else z.write(chunk, done);
    });
  }

  end(): Promise<Uint8Array> {
    const z = this.z;
    if (z === null) return Promise.reject(this.failure ?? closedError());
    const out: Buffer[] = [];
    const before = this.take();
    if (before.length > 0) out.push(before as Buffer);
    return new Promise((resolve, reject) => {
      z.on('data', (c: Buffer) => out.push(c));
      z.once('end', () => {
        this.z = null;
        resolve(out.length === 1 ? out[0]! : Buffer.concat(out));
      });
      z.once('error', reject);
      z.end();
    });
  }

  close(): void {
    const z = this.z;
    this.z = null;
    if (z !== null) z.destroy();
  }

  /** What the stream has made so far. */
  private take(): Uint8Array {
    const z = this.z;
    const c = z === null ? null : (z.read() as Buffer | null);
    return c ?? EMPTY;
  }
}
