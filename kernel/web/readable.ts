/**
 * The one way a switchyard body becomes a web `ReadableStream`: both `fetch`'s response
 * bodies and a fetch-style handler's request bodies go through here.
 */
import { AbstractBody } from '../message/body.js';

/** Bytes asked of a streamed body per pull when its length is unknown or larger. */
const PULL_SIZE = 16384;

/**
 * A readable byte stream (`type: 'bytes'`, as the Fetch standard's bodies are) fed by `next`,
 * one call per pull, so a reader that stops reading stops the source (backpressure holds and
 * bytes stream as they arrive). `next` resolves to a chunk, or null at the end; a rejection
 * errors the stream. `cancel` runs once when the reader cancels (or the stream is dropped by
 * `Response.body.cancel()`), with the reader's reason.
 *
 * A byte stream takes ownership of each chunk's `ArrayBuffer` (it is transferred, and the
 * original detached): a chunk that does not span its whole buffer (a slice of a socket read, a
 * pooled `Buffer`) is copied first, so no other view of that memory breaks.
 */
export function readableOf(next: () => Promise<Uint8Array | null>, cancel: (reason: unknown) => void): ReadableStream<Uint8Array> {
  return byteStream(next, cancel, true, null);
}

/**
 * {@link readableOf}; `copy`: chunks may share their buffer with other views (else they are the
 * stream's to take); `failure`, when given, turns a rejection of `next` into the stream's error.
 */
function byteStream(next: () => Promise<Uint8Array | null>, cancel: (reason: unknown) => void, copy: boolean, failure: ((err: unknown) => unknown) | null): ReadableStream<Uint8Array> {
  let done = false;
  return new ReadableStream({
    type: 'bytes',
    async pull(controller) {
      let chunk: Uint8Array | null;
      if (failure === null) chunk = await next();
      else
        try {
          chunk = await next();
        } catch (err) {
          throw failure(err);
        }
      if (chunk === null) {
        done = true;
        controller.close();
        // A BYOB read waiting when the end came is answered with 0 bytes.
        controller.byobRequest?.respond(0);
        return;
      }
      if (chunk.length === 0) return;
      controller.enqueue(copy ? owned(chunk) : chunk);
    },
    cancel(reason) {
      if (done) return;
      done = true;
      cancel(reason);
    },
  });
}

/**
 * A readable byte stream over a streamed body (see {@link readableOf}): each pull reads up to
 * 16 KiB (or the body's known length, if smaller) into a fresh buffer that the stream then
 * owns, so no byte is copied twice. Cancelling the stream closes the body, and so does its end
 * (reading to the end does not close a body: this releases what it holds at once). `failure`,
 * when given, maps a read's error to the one the stream errors with (fetch's `TypeError`).
 */
export function readableOfBody(body: AbstractBody, failure?: (err: unknown) => unknown): ReadableStream<Uint8Array> {
  return byteStream(
    async () => {
      const known = body.length;
      if (known !== 0) {
        const buf = new Uint8Array(known > 0 && known < PULL_SIZE ? known : PULL_SIZE);
        const n = await body.read(buf);
        if (n !== 0) return n === buf.length ? buf : buf.subarray(0, n);
      }
      body.close();
      return null;
    },
    () => body.close(),
    false,
    failure ?? null,
  );
}

/** `chunk` when it spans its whole `ArrayBuffer` (a stream may take that over), else a copy. */
function owned(chunk: Uint8Array): Uint8Array {
  return chunk.byteOffset === 0 && chunk.byteLength === chunk.buffer.byteLength && !(chunk.buffer instanceof SharedArrayBuffer) ? chunk : new Uint8Array(chunk);
}
