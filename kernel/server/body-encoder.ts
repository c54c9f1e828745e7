/**
 * Response body encoders: how a `server.onResponseHead` tap changes the bytes of a body it does
 * not hold (a content coding of a streamed body, or of what a stream handler writes after the
 * head). The tap calls {@link encodeResponseBody}; the server then passes every body byte of
 * that response through the encoder, in both modes: a request handler's streamed body is
 * wrapped in an {@link EncodedBody}, a stream handler's writes go through it one by one.
 */
import { ArgumentError } from '../errors.js';
import { AbstractBody, BytesBody, ChunkBody, type Body } from '../message/body.js';
import type { Headers } from '../message/headers.js';
import { Response } from '../message/response.js';

/**
 * Encodes one response body as it is written. Calls come one at a time: the server waits for
 * each to settle before the next.
 */
export interface BodyEncoder {
  /**
   * Encodes `chunk`; resolves to the output that may go now (possibly empty). With `flush`,
   * the output so far holds everything written so far (a peer can decode it all at once): the
   * server asks for it when the chunk may be the last for a while (an event, a stream
   * handler's write).
   */
  write(chunk: Uint8Array, flush: boolean): Promise<Uint8Array>;
  /** Ends the encoding; resolves to the rest of the output. */
  end(): Promise<Uint8Array>;
  /** Releases what the encoder holds; called once the body ended, or ended early or failed. Calling it twice does nothing. */
  close(): void;
}

// Keyed by the Response a tap saw: nothing is stored on responses that are not encoded.
const encoders = new WeakMap<Response, BodyEncoder>();

/**
 * Called from a `server.onResponseHead` tap: the body of `response` goes to the wire through
 * `encoder`. The server drops the response's length (the encoded length is not known before
 * the end: chunked over HTTP/1.1), and closes the encoder unused when the response has no
 * body (HEAD, 204, 304). The tap sets the headers that say so itself (`Content-Encoding`).
 */
export function encodeResponseBody(response: Response, encoder: BodyEncoder): void {
  if (!(response instanceof Response)) throw new ArgumentError('encodeResponseBody(response, encoder): response must be a Response');
  const e = encoder as Partial<BodyEncoder> | null;
  if (typeof e !== 'object' || e === null || typeof e.write !== 'function' || typeof e.end !== 'function' || typeof e.close !== 'function') {
    throw new ArgumentError('encodeResponseBody(response, encoder): encoder must have write(chunk, flush), end() and close()');
  }
  const old = encoders.get(response);
  if (old !== undefined && old !== encoder) old.close();
  encoders.set(response, encoder);
}

/** @internal The encoder a tap gave `response`, removed from it; undefined when none. */
export function takeBodyEncoder(response: Response): BodyEncoder | undefined {
  const e = encoders.get(response);
  if (e !== undefined) encoders.delete(response);
  return e;
}

/**
 * A body read through a {@link BodyEncoder}: each read of the source is encoded, flushed when
 * the source's length is unknown (its reads are what a producer wrote: an event each), so a
 * streamed response reaches the peer as it is written.
 */
export class EncodedBody extends ChunkBody {
  private readonly source: AbstractBody;
  private encoder: BodyEncoder | null;
  private readonly flush: boolean;
  private buf: Uint8Array | null = null;
  private ended = false;
  private isClosed = false;

  /** Encodes `source` (bytes are read as a {@link BytesBody}) with `encoder`. */
  constructor(source: Body, encoder: BodyEncoder) {
    super();
    const s = source instanceof AbstractBody ? source : new BytesBody(source ?? new Uint8Array(0));
    this.source = s;
    this.encoder = encoder;
    this.flush = s.length < 0;
  }

  protected async nextChunk(): Promise<Uint8Array | null> {
    const enc = this.encoder;
    if (this.ended || enc === null) return null;
    const buf = (this.buf ??= new Uint8Array(16384));
    try {
      const n = await this.source.read(buf);
      if (this.isClosed) return null;
      if (n === 0) {
        this.ended = true;
        const last = await enc.end();
        this.encoder = null;
        enc.close();
        return last;
      }
      // The encoder may keep the chunk until it has taken it; the next read needs the buffer.
      const out = await enc.write(buf.slice(0, n), this.flush);
      return this.isClosed ? null : out;
    } catch (err) {
      this.close();
      throw err;
    }
  }

  /** The source's trailers (read to the end first). */
  override trailers(): Headers {
    return this.source.trailers();
  }

  /** Stops encoding and closes the source. */
  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.dropWaiting();
    const enc = this.encoder;
    this.encoder = null;
    if (enc !== null) enc.close();
    this.source.close();
  }

  /** See {@link AbstractBody.closed}. */
  get closed(): boolean {
    return this.isClosed;
  }
}
