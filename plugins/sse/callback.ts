/**
 * The client side of `sseCallback`: a body that parses an event stream as it is read and hands
 * each event to the callback, and the checks of the call options.
 */
import { AbstractBody, ArgumentError, type Headers, type Response } from '../../kernel/index.js';
import { checkMaxLen, type SSEEvent } from './event.js';
import { SSEParser } from './parser.js';

/** Receives each event of a response as it arrives; a returned promise is awaited before the next. */
export type SSECallback = (event: SSEEvent, response: Response) => unknown;

/** The sse plugin's call options (per call, as `Client` defaults). */
export interface SSEOptions {
  /**
   * Called with each event of a `text/event-stream` response (status 2xx) as it arrives; the
   * call resolves when the stream ends, with an empty `response.body` (the events went to the
   * callback). Not with `responseStream`.
   */
  sseCallback?: SSECallback;
  /** Largest event in bytes; a larger one fails the call with `SSEEventTooLargeError`. Default 16 MiB. */
  sseMaxLen?: number;
}

/**
 * A body that reads its source to the end, parsing events and calling the callback with each;
 * it yields no bytes itself (what a reader of the response sees is an empty body). Reading it
 * once consumes the whole stream; closing it closes the source (and so the connection).
 */
export class SSECallbackBody extends AbstractBody {
  /** The parser in use (its `lastEventId` and `retry` are the stream's). */
  readonly parser: SSEParser;
  private readonly source: AbstractBody;
  private readonly callback: SSECallback;
  private readonly response: Response;
  private done = false;
  private isClosed = false;

  /** Parses `source` (the response's body) for `response`, calling `callback` with each event. */
  constructor(source: AbstractBody, callback: SSECallback, response: Response, parser: SSEParser = new SSEParser()) {
    super();
    if (!(source instanceof AbstractBody)) throw new ArgumentError('SSECallbackBody takes an AbstractBody source');
    if (typeof callback !== 'function') throw new ArgumentError('SSECallbackBody takes a callback function');
    this.source = source;
    this.callback = callback;
    this.response = response;
    this.parser = parser;
  }

  /** Consumes the whole stream, calling back with each event; resolves to 0 (no bytes for the reader). */
  async read(_dst: Uint8Array): Promise<number> {
    if (this.done || this.isClosed) return 0;
    this.done = true;
    const out: SSEEvent[] = [];
    const parser = this.parser;
    const stopped = (): boolean => this.isClosed;
    try {
      for await (const chunk of this.source) {
        if (!(await deliverEvents(parser, chunk, out, this.callback, this.response, stopped))) return 0;
      }
    } catch (err) {
      this.close();
      throw err;
    }
    // An event without its closing blank line is dropped (WHATWG).
    parser.reset();
    return 0;
  }

  /** Closes the source; closing twice does nothing. */
  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.source.close();
  }

  /** See {@link AbstractBody.closed}. */
  get closed(): boolean {
    return this.isClosed;
  }

  /** The source's trailers. */
  override trailers(): Headers {
    return this.source.trailers();
  }
}

/**
 * @internal Parses one chunk of an event stream into `out` and calls `callback` with each event
 * it completed, awaiting a returned promise before the next. Events completed before a
 * too-large one in the same chunk still reach the callback; then that one's error is thrown.
 * Resolves to false when `stopped()` turned true after an event (the rest are not delivered).
 */
export async function deliverEvents(parser: SSEParser, chunk: Uint8Array, out: SSEEvent[], callback: SSECallback, response: Response, stopped: () => boolean): Promise<boolean> {
  let tooLarge: unknown = null;
  try {
    parser.push(chunk, out);
  } catch (err) {
    tooLarge = err;
  }
  for (let i = 0; i < out.length; i++) {
    const r = callback(out[i]!, response);
    if (r !== null && typeof r === 'object' && typeof (r as PromiseLike<unknown>).then === 'function') await r;
    if (stopped()) return false;
  }
  out.length = 0;
  if (tooLarge !== null) throw tooLarge;
  return true;
}

/** @internal Checks the plugin's call options; `where` names the call. */
export function checkSSEOptions(o: { sseCallback?: unknown; sseMaxLen?: unknown; responseStream?: unknown }, where: string): void {
  if (o.sseCallback !== undefined && typeof o.sseCallback !== 'function') {
    throw new ArgumentError(`${where}: sseCallback must be a function (event, response) => void, got ${o.sseCallback === null ? 'null' : typeof o.sseCallback}`);
  }
  if (o.sseMaxLen !== undefined) checkMaxLen(o.sseMaxLen, `${where}: sseMaxLen`);
  if (o.sseCallback !== undefined && o.responseStream !== undefined) {
    throw new ArgumentError(`${where}: sseCallback cannot be combined with responseStream (the events go to the callback)`);
  }
}
