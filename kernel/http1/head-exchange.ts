/**
 * One HTTP/1.1 exchange of heads on a byte stream: a request head written, the response head
 * read back with the codec's parser and limits, interim (1xx) answers skipped. It is what a
 * connection does before it changes hands — a protocol upgrade before the new protocol takes
 * the socket, a proxy's CONNECT before the tunnel carries TLS or the first request — so no
 * body is read: the bytes that came after the head are returned for the next owner.
 */
import { Buffer } from 'node:buffer';
import process from 'node:process';
import type { Duplex } from 'node:stream';
import { ParseError, ProtocolError } from '../errors.js';
import type { Headers } from '../message/headers.js';
import { HeadParser, type HeadLimits } from './head-parser.js';

/** Options of {@link exchangeHead}: the response head's limits, and how the exchange ends. */
export interface HeadExchangeOptions extends HeadLimits {
  /** Aborting it stops the exchange: the promise rejects with the signal's reason. */
  signal?: AbortSignal | null;
  /** Called for each read that leaves the response head incomplete (to time gaps between bytes). */
  onProgress?: (() => void) | null;
  /**
   * The error for a stream that ends before the response head is complete; `received` counts
   * every byte read, `headBytes` those of the head in progress (0 when the stream ended between
   * an interim answer and the final one). Default: a `ParseError` that says so.
   */
  closedError?: ((received: number, headBytes: number) => Error) | null;
  /**
   * Leave the stream explicitly paused (`isPaused()`), for a next owner that resumes it. Default
   * false: the stream is left as a fresh one is (not flowing, not paused), so that whoever reads
   * it next the usual way (a `'data'` listener, TLS) starts it.
   */
  pause?: boolean;
}

/** The response head {@link exchangeHead} read. */
export interface ExchangedHead {
  /** Status of the final answer, or 101. */
  readonly status: number;
  /** Reason phrase as sent (may be empty). */
  readonly reason: string;
  /** Header fields as sent. */
  readonly headers: Headers;
  /** 1 for HTTP/1.1, 0 for HTTP/1.0. */
  readonly versionMinor: number;
  /** Bytes read past the head: the start of what follows it (a body, the new protocol's stream). */
  readonly rest: Uint8Array;
}

const EMPTY = new Uint8Array(0);

/**
 * Interim (1xx) answers a client takes before the final one; more is a `ProtocolError`. A peer
 * that only ever sends interim answers would otherwise keep it parsing them until a timeout;
 * Go's client stops after 5, this one a little later.
 */
export const MAX_INTERIM_RESPONSES = 10;

function closedByDefault(received: number, headBytes: number): Error {
  return new ParseError(received === 0 ? 'the connection closed before a response arrived' : `the connection closed inside the response head (after ${headBytes} bytes)`);
}

/**
 * Writes `head` (a latin1 request head from `serializeRequestHead`) to `socket`, then reads
 * the response head: interim answers (1xx other than 101) are skipped, and the final one, or a
 * 101, resolves the promise. Only the head is read; nothing past it is consumed from the stream
 * except the bytes of the read that completed it, which come back as `rest`. When the promise
 * settles, none of the exchange's listeners is left on `socket`, which stays open (closing it
 * after a failure is the caller's choice).
 *
 * Rejects with what the parser throws (`ParseError` for bytes that are not a response head,
 * `ProtocolError` for one over `maxLineBytes`/`maxHeaderBytes`), `ProtocolError` after more than
 * {@link MAX_INTERIM_RESPONSES} interim answers, the socket's `'error'`,
 * `options.closedError` when it ends first, or the reason of `options.signal`.
 */
export function exchangeHead(socket: Duplex, head: string, options: HeadExchangeOptions = {}): Promise<ExchangedHead> {
  const parser = new HeadParser('response', { maxLineBytes: options.maxLineBytes, maxHeaderBytes: options.maxHeaderBytes });
  const signal = options.signal ?? null;
  const onProgress = options.onProgress ?? null;
  const pause = options.pause === true;
  return new Promise<ExchangedHead>((resolve, reject) => {
    let done = false;
    let received = 0;
    let interim = 0;
    const finish = (): boolean => {
      if (done) return false;
      done = true;
      socket.removeListener('readable', onReadable);
      socket.removeListener('end', onEnd);
      socket.removeListener('close', onEnd);
      socket.removeListener('error', onError);
      signal?.removeEventListener('abort', onAbort);
      // Removing the last 'readable' listener resets the flow state on the next tick; a pause
      // asked for is applied after that reset, or it would be undone.
      if (pause) process.nextTick(pauseStream, socket);
      return true;
    };
    const fail = (err: unknown): void => {
      if (finish()) reject(err);
    };
    const onReadable = (): void => {
      let chunk: Buffer | null;
      while (!done && (chunk = socket.read() as Buffer | null) !== null) {
        received += chunk.length;
        let off = 0;
        for (;;) {
          try {
            off += parser.execute(chunk, off, chunk.length);
          } catch (err) {
            fail(err);
            return;
          }
          if (!parser.complete) break;
          const status = parser.status;
          if (status < 200 && status !== 101) {
            // Interim (100, 103): the final answer follows on the same connection.
            if (++interim > MAX_INTERIM_RESPONSES) {
              fail(new ProtocolError(`the server sent more than ${MAX_INTERIM_RESPONSES} informational (1xx) responses before a final one`));
              return;
            }
            parser.reset();
            if (off < chunk.length) continue;
            break;
          }
          const result: ExchangedHead = {
            status,
            reason: parser.reason,
            headers: parser.headers,
            versionMinor: parser.versionMinor,
            rest: off < chunk.length ? chunk.subarray(off) : EMPTY,
          };
          if (finish()) resolve(result);
          return;
        }
        onProgress?.();
      }
    };
    const onEnd = (): void => fail((options.closedError ?? closedByDefault)(received, parser.bytesSeen));
    const onError = (err: Error): void => fail(err);
    const onAbort = (): void => fail(signal!.reason);

    if (signal !== null && signal.aborted) {
      reject(signal.reason);
      return;
    }
    socket.on('readable', onReadable);
    socket.on('end', onEnd);
    socket.on('close', onEnd);
    socket.on('error', onError);
    signal?.addEventListener('abort', onAbort, { once: true });
    socket.write(Buffer.from(head, 'latin1'));
  });
}

function pauseStream(socket: Duplex): void {
  socket.pause();
}
