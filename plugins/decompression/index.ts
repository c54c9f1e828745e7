/**
 * The decompression plugin: asks for compressed responses and decodes them as they stream.
 *
 * - `client.onRequest` (`Stage.DEFAULT`): adds `Accept-Encoding: gzip, deflate, br` unless the
 *   request has an `Accept-Encoding` already or the call passes `decompress: false`.
 * - `client.onResponseHead` (`Stage.DECOMPRESS`): for a body with `Content-Encoding` gzip,
 *   x-gzip, deflate (zlib-wrapped or raw, told apart by the first two bytes) or br, replaces
 *   `response.body` with a {@link DecodingBody} that decodes while it is read. Decoding happens
 *   whenever `decompress` is not false, also when the caller sent its own `Accept-Encoding`
 *   (pass `decompress: false` to get the encoded bytes).
 *
 * Decisions:
 * - The decoded response loses `Content-Encoding` and `Content-Length` (its length is not
 *   known: `contentLength` is -1), as Go and axios do, so code that reads headers sees what the
 *   body is. The removed value is kept: {@link decodedContentEncoding}`(response)`.
 * - Several codings (`Content-Encoding: gzip, br`) are decoded in reverse order, up to
 *   {@link MAX_CODINGS} of them; `identity` is ignored. A list with an unknown coding (zstd,
 *   compress, …) or longer than that is left alone: body and headers as received.
 * - HEAD, 1xx, 204 and 304 responses and empty bodies are not touched; a body that ends
 *   without a byte decodes to nothing.
 * - Two bounds on each decoding step (of a chain, each step), checked at every decoded chunk:
 *   `maxDecompressedBytes` (default 256 MiB, 0 = none) on the decoded bytes, and
 *   `maxDecompressionRatio` (default 200, 0 = none) on decoded bytes per compressed byte of
 *   the body, once more than {@link RATIO_GRACE_BYTES} are decoded. The read that passes one
 *   throws `DecompressionLimitError` (its `bound` says which) and closes the decoder and the
 *   source body (and so the connection): a bomb costs at most about a MiB of decoding, not
 *   the whole size bound. Memory stays at a few chunks however large the claimed size: the
 *   source is read only as fast as the decoder's output is.
 * - A corrupt or truncated stream surfaces zlib's own error (`Z_BUF_ERROR` "unexpected end of
 *   file", `Z_DATA_ERROR`, …) from the read; an error of the source body (a truncated
 *   transfer's `ParseError`) surfaces as it is.
 * - `node:zlib` is loaded (`nodeZlib()`) on the first read of the first compressed body.
 */
import { Buffer } from 'node:buffer';
import type { Transform } from 'node:stream';
import {
  AbstractBody,
  ArgumentError,
  checkPluginOptions,
  OptionChecks,
  type OptionCheck,
  BytesBody,
  ChunkBody,
  Stage,
  definePlugin,
  getCallOptions,
  nodeZlib,
  type Headers,
  type Response,
} from '../../kernel/index.js';
import { DecompressionLimitError } from './errors.js';

export { DecompressionLimitError, type DecompressionBound } from './errors.js';

const NAME = 'decompression';

/** The decompression options: per call, as `Client` defaults, or as the plugin's own defaults. */
export interface DecompressionOptions {
  /** Send `Accept-Encoding` and decode compressed bodies. Default true. */
  decompress?: boolean;
  /** Most decoded bytes of one body before `DecompressionLimitError`; 0 = no bound. Default 256 MiB. */
  maxDecompressedBytes?: number;
  /**
   * Most decoded bytes per compressed byte of one body, checked once more than 1 MiB is decoded,
   * before `DecompressionLimitError`; 0 = no bound. Default 200.
   */
  maxDecompressionRatio?: number;
}

// Typed options: merged into the kernel's `CallOptions` (per call) and `ClientOptions` (client
// defaults) through the public entry, which re-exports both. NOTE for the build: tsup's bundled
// dist/plugins/index.d.ts copies this specifier verbatim, where it must read '../kernel/index.js'
// (or 'switchyard/kernel'); until the build rewrites it, published typings lose this merge.
// Option types join CallOptions and ClientOptions in ../options.ts (one place, valid in dist/ too).

/**
 * Default of `maxDecompressedBytes`: 256 MiB. Four times the client's buffered-body bound
 * (`maxResponseBytes`), so a buffered call meets that one first and its error says how to
 * stream; a streamed body may decode to this much.
 */
export const DEFAULT_MAX_DECOMPRESSED_BYTES = 256 * 1024 * 1024;
/**
 * Default of `maxDecompressionRatio`: 200 decoded bytes per compressed byte, Apache httpd's
 * `DeflateInflateRatioLimit` (Envoy's decompressor uses 100). Text, JSON and HTML compress
 * 3 to 30 times; deflate itself cannot pass about 1032, brotli can pass millions.
 */
export const DEFAULT_MAX_DECOMPRESSION_RATIO = 200;
/** Decoded bytes of a body before `maxDecompressionRatio` applies: small, very repetitive bodies pass. */
export const RATIO_GRACE_BYTES = 1024 * 1024;
/** The `Accept-Encoding` the plugin sends. */
export const ACCEPT_ENCODING = 'gzip, deflate, br';
/** Longest `Content-Encoding` list that is decoded (curl's bound too). */
export const MAX_CODINGS = 5;

/** A coding this plugin decodes. */
export type Coding = 'gzip' | 'deflate' | 'br';

const decoded = new WeakMap<Response, string>();

/**
 * The `Content-Encoding` a response had before the plugin decoded it and removed the header
 * (`'gzip'`, `'gzip, br'`, …), or null when its body was not decoded.
 */
export function decodedContentEncoding(response: Response): string | null {
  return decoded.get(response) ?? null;
}

/** The plugin's options (per call, `Client` defaults, `register`) and their checks. */
const CALL_OPTIONS: Readonly<Record<keyof DecompressionOptions, OptionCheck>> = {
  decompress: OptionChecks.boolean,
  maxDecompressedBytes: (v) => (typeof v === 'number' && v >= 0 && (!Number.isFinite(v) || Number.isInteger(v)) ? null : 'a whole number of bytes >= 0 (0 = no bound)'),
  maxDecompressionRatio: (v) => (isRatio(v) ? null : 'a number >= 0 (0 = no bound)'),
};

/** The `decompression` plugin. Options given at `register` are defaults under `Client` and per-call options. */
export const decompression = definePlugin({
  name: NAME,
  callOptions: CALL_OPTIONS,
  register(kernel, options: DecompressionOptions) {
    checkPluginOptions(options, CALL_OPTIONS, 'register(decompression, …)');
    const base = options;

    kernel.hooks.client.onRequest.tap({ name: NAME, stage: Stage.DEFAULT }, (req, ctx) => {
      if (req.headers.has('Accept-Encoding')) return;
      if ((getCallOptions(ctx).decompress ?? base.decompress) === false) return;
      req.headers.push('Accept-Encoding', ACCEPT_ENCODING);
    });

    kernel.hooks.client.onResponseHead.tap({ name: NAME, stage: Stage.DECOMPRESS }, (res, ctx) => {
      const headers = res.headers;
      if (!headers.has('Content-Encoding')) return;
      const status = res.status;
      if (status < 200 || status === 204 || status === 304) return;
      if (res.request !== null && res.request.method === 'HEAD') return;
      const body = res.body;
      if (body === null || (!(body instanceof AbstractBody) && body.length === 0)) return;
      const call = getCallOptions(ctx);
      if ((call.decompress ?? base.decompress) === false) return;
      const value = headers.getAll('Content-Encoding').join(', ');
      const codings = parseCodings(value);
      if (codings === null || codings.length === 0) return;
      const limit = call.maxDecompressedBytes ?? base.maxDecompressedBytes ?? DEFAULT_MAX_DECOMPRESSED_BYTES;
      checkLimit(limit, 'maxDecompressedBytes');
      const ratio = call.maxDecompressionRatio ?? base.maxDecompressionRatio ?? DEFAULT_MAX_DECOMPRESSION_RATIO;
      checkRatio(ratio, 'maxDecompressionRatio');

      let decoding: AbstractBody = body instanceof AbstractBody ? body : new BytesBody(body);
      for (let i = codings.length - 1; i >= 0; i--) decoding = new DecodingBody(decoding, codings[i]!, limit, ratio);
      res.body = decoding;
      res.contentLength = -1;
      headers.delete('Content-Encoding');
      headers.delete('Content-Length');
      decoded.set(res, value);
    });
  },
});

/** The codings of a `Content-Encoding` value in the order they were applied; null when one is unknown or there are too many. */
export function parseCodings(value: string): Coding[] | null {
  const out: Coding[] = [];
  for (const raw of value.split(',')) {
    const t = raw.trim().toLowerCase();
    if (t === '' || t === 'identity') continue;
    if (t === 'gzip' || t === 'x-gzip') out.push('gzip');
    else if (t === 'deflate') out.push('deflate');
    else if (t === 'br') out.push('br');
    else return null;
  }
  return out.length > MAX_CODINGS ? null : out;
}

/** Output chunk size of the decoders. */
const CHUNK = 65536;

/** True when two bytes are a zlib (RFC 1950) header: deflate method, window ≤ 32 KiB, check bits. */
export function isZlibHeader(b0: number, b1: number): boolean {
  return (b0 & 0x0f) === 8 && b0 >> 4 <= 7 && ((b0 << 8) | b1) % 31 === 0;
}

/**
 * A body that decodes one content coding of `source` while it is read. Single-use. Reading
 * pulls from the source only as fast as decoded bytes are taken; closing it closes the source.
 */
export class DecodingBody extends ChunkBody {
  /** The coding it decodes. */
  readonly coding: Coding;
  /** Decoded bytes allowed (0: no bound). */
  readonly limit: number;
  /** Decoded bytes allowed per compressed byte once {@link RATIO_GRACE_BYTES} are decoded (0: no bound). */
  readonly ratio: number;
  private readonly source: AbstractBody;
  private decoder: Transform | null = null;
  private output: AsyncIterator<Buffer> | null = null;
  private total = 0;
  /** Source bytes handed to the decoder. */
  private fed = 0;
  private started = false;
  private done = false;
  private isClosed = false;

  /**
   * Decodes `coding` from `source`; `limit` bounds the decoded bytes and `ratio` the decoded
   * bytes per compressed byte (0: no bound).
   */
  constructor(source: AbstractBody, coding: Coding, limit = DEFAULT_MAX_DECOMPRESSED_BYTES, ratio = DEFAULT_MAX_DECOMPRESSION_RATIO) {
    super();
    if (!(source instanceof AbstractBody)) throw new ArgumentError('DecodingBody takes an AbstractBody source');
    if (coding !== 'gzip' && coding !== 'deflate' && coding !== 'br') throw new ArgumentError(`DecodingBody: unsupported coding ${JSON.stringify(coding)}`);
    checkLimit(limit, 'limit');
    checkRatio(ratio, 'ratio');
    this.source = source;
    this.coding = coding;
    this.limit = limit;
    this.ratio = ratio;
  }

  /** Decoded bytes produced so far. */
  get decodedBytes(): number {
    return this.total;
  }

  /**
   * Bytes of the body as received (before the first decoding step of a chain) the decoders
   * have taken so far: what {@link DecodingBody.ratio} divides by.
   */
  get compressedBytes(): number {
    if (this.source instanceof DecodingBody) return this.source.compressedBytes;
    // zlib counts what its engine consumed; what waits in its input buffer is not decoded yet.
    const d = this.decoder as { bytesWritten?: unknown } | null;
    return d !== null && typeof d.bytesWritten === 'number' ? d.bytesWritten : this.fed;
  }

  /** Iterates the decoded chunks as the decoder makes them (no copy); each is the caller's to keep. */
  override [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    return this.chunks();
  }

  /** Stops decoding and closes the source body; closing twice does nothing. */
  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.dropWaiting();
    this.output = null;
    const d = this.decoder;
    this.decoder = null;
    if (d !== null) d.destroy();
    this.source.close();
  }

  /** See {@link AbstractBody.closed}. */
  get closed(): boolean {
    return this.isClosed;
  }

  /** The source's trailers (read to the end first). */
  override trailers(): Headers {
    return this.source.trailers();
  }

  /** The next decoded chunk, or null at the end. */
  protected async nextChunk(): Promise<Uint8Array | null> {
    if (this.done || this.isClosed) return null;
    if (!this.started) {
      this.started = true;
      try {
        await this.start();
      } catch (err) {
        this.close();
        throw err;
      }
    }
    const out = this.output;
    if (out === null) return null;
    let r: IteratorResult<Buffer>;
    try {
      r = await out.next();
    } catch (err) {
      if (this.isClosed) return null;
      this.close();
      throw err;
    }
    if (this.isClosed) return null;
    if (r.done === true) {
      this.done = true;
      this.output = null;
      this.decoder = null;
      return null;
    }
    const c = r.value;
    this.total += c.length;
    if (this.limit > 0 && this.total > this.limit) {
      const compressed = this.compressedBytes;
      this.close();
      throw new DecompressionLimitError(this.limit, 'size', this.total, compressed);
    }
    if (this.ratio > 0 && this.total > RATIO_GRACE_BYTES) {
      const compressed = this.compressedBytes;
      if (this.total > this.ratio * compressed) {
        this.close();
        throw new DecompressionLimitError(this.ratio, 'ratio', this.total, compressed);
      }
    }
    return c;
  }

  /** Reads the first bytes (a deflate body needs two to pick its decoder), makes the decoder, starts the pump. */
  private async start(): Promise<void> {
    const zlib = nodeZlib();
    const input = this.source[Symbol.asyncIterator]();
    let first: Uint8Array | null = null;
    for (;;) {
      const r = await input.next();
      if (this.isClosed) return;
      if (r.done === true) break;
      if (r.value.length === 0) continue;
      first = first === null ? r.value : Buffer.concat([first, r.value]);
      if (this.coding !== 'deflate' || first.length >= 2) break;
    }
    if (first === null) {
      // An empty body decodes to nothing (a zero-byte gzip is not worth an error).
      this.done = true;
      return;
    }
    const opts = { chunkSize: CHUNK };
    let d: Transform;
    if (this.coding === 'gzip') d = zlib.createGunzip(opts);
    else if (this.coding === 'br') d = zlib.createBrotliDecompress(opts);
    else d = first.length >= 2 && isZlibHeader(first[0]!, first[1]!) ? zlib.createInflate(opts) : zlib.createInflateRaw(opts);
    // Errors reach the reader through the iterator (it reads `errored` even when it starts late);
    // this listener keeps one that fires before the first `next()` from being an uncaught 'error'.
    d.on('error', noop);
    this.decoder = d;
    this.output = d[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    void this.pump(d, first, input);
  }

  /** Feeds the source into the decoder, waiting whenever the decoder is full. */
  private async pump(d: Transform, first: Uint8Array, input: AsyncIterator<Uint8Array>): Promise<void> {
    try {
      let chunk: Uint8Array | null = first;
      while (chunk !== null) {
        this.fed += chunk.length;
        if (!d.write(chunk)) await drained(d);
        if (this.isClosed || d.destroyed) return;
        const r = await input.next();
        if (this.isClosed || d.destroyed) return;
        chunk = r.done === true ? null : r.value;
      }
      d.end();
    } catch (err) {
      // The source failed (a truncated transfer, a reset): the reader gets its error.
      if (!d.destroyed) d.destroy(err instanceof Error ? err : new Error(String(err)));
    }
  }
}

function noop(): void {}

/** Resolves when `d` can take more input, or is gone. */
function drained(d: Transform): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      d.off('drain', done);
      d.off('close', done);
      resolve();
    };
    d.on('drain', done);
    d.on('close', done);
  });
}

function isRatio(v: unknown): boolean {
  return typeof v === 'number' && v >= 0 && !Number.isNaN(v);
}

function checkRatio(v: unknown, name: string): void {
  if (!isRatio(v)) throw new ArgumentError(`${name} must be a number >= 0 (0 = no bound), got ${String(v)}`);
}

function checkLimit(v: unknown, name: string): void {
  if (typeof v !== 'number' || !(v >= 0) || (Number.isFinite(v) && !Number.isInteger(v))) {
    throw new ArgumentError(`${name} must be a whole number of bytes >= 0 (0 = no bound), got ${String(v)}`);
  }
}
