/**
 * sseConnect(): a reconnecting event-stream client, as a browser's EventSource behaves:
 * reconnects with `Last-Event-ID` after the server's `retry` delay, until its context is
 * canceled. Needs no plugin: it parses the stream itself (the kernel's `open`).
 */
import { Buffer } from 'node:buffer';
import { AbstractBody, ArgumentError, Client, Headers, ProtocolError, RequestContext, Response, StatusError, type CallOptions } from '../../kernel/index.js';
import { deliverEvents, type SSECallback } from './callback.js';
import type { SSEEvent } from './event.js';
import { SSEParser } from './parser.js';
import { isEventStream } from './response.js';

/** Options of {@link sseConnect}: those of a call (headers, timeouts, proxy, …) plus these. */
export interface SSEConnectOptions extends CallOptions {
  /** The client to connect with; default a private `Client` (see `new Client()` for its kernel), closed at the end. */
  client?: Client;
  /** The id to resume from on the first connection (sent as `Last-Event-ID`). */
  lastEventId?: string;
  /** Delay before reconnecting, in ms, until the server sends `retry`. Default 3000. */
  retryDelay?: number;
  /** Largest event in bytes. Default 16 MiB. */
  maxLen?: number;
  /** Called with each response that opens an event stream (before its events); if it throws, sseConnect rejects with that. */
  onOpen?: (response: Response) => unknown;
  /** Called with each failure that leads to a reconnect (network errors, 408, 429, 5xx); if it throws, sseConnect rejects with that. */
  onError?: (error: unknown) => unknown;
}

/** The names sseConnect reads itself; the rest of its options are the calls'. */
const OWN_OPTIONS = ['client', 'lastEventId', 'retryDelay', 'maxLen', 'onOpen', 'onError'] as const satisfies readonly (keyof SSEConnectOptions)[];

/** Default reconnection delay: 3 s, what browsers use. */
export const DEFAULT_SSE_RETRY_DELAY = 3000;

/** Statuses after which the client reconnects instead of failing: the server may recover. */
const TRANSIENT = new Set([408, 429, 500, 502, 503, 504]);
/** Error bodies kept for a `StatusError`. */
const ERROR_BODY_LIMIT = 64 * 1024;

/**
 * Opens `url` as an event stream and calls `callback(event, response)` with each event
 * (awaiting a returned promise before the next). When the stream ends or the connection
 * fails, it waits the reconnection time (the server's last `retry`, else `retryDelay`) and
 * connects again, sending `Last-Event-ID` when an id is in effect.
 *
 * Resolves when `options.context` is canceled or `options.signal` aborts, or when the server
 * answers 204 (its way to say "stop"). Rejects, without reconnecting, when the callback
 * throws, with `StatusError` for a status that is not 2xx and not transient (408, 429, 5xx
 * reconnect), with `ProtocolError` for a 2xx that is not `text/event-stream`, and with
 * `SSEEventTooLargeError` for an event over `maxLen`.
 */
export async function sseConnect(url: string | URL, callback: SSECallback, options: SSEConnectOptions = {}): Promise<void> {
  if (typeof callback !== 'function') throw new ArgumentError('sseConnect(url, callback, options): callback must be a function (event, response) => void');
  if (typeof options !== 'object' || options === null) throw new ArgumentError('sseConnect: options must be an object');
  const { client: given, lastEventId, retryDelay = DEFAULT_SSE_RETRY_DELAY, maxLen, onOpen, onError, context, signal, sseCallback: _cb, sseMaxLen: _ml, ...call } = options;
  if (given !== undefined && !(given instanceof Client)) throw new ArgumentError('sseConnect: client must be a Client');
  if (typeof retryDelay !== 'number' || !Number.isFinite(retryDelay) || retryDelay < 0)
    throw new ArgumentError(`sseConnect: retryDelay must be a number of milliseconds >= 0, got ${String(retryDelay)}`);
  if (onOpen !== undefined && typeof onOpen !== 'function') throw new ArgumentError('sseConnect: onOpen must be a function');
  if (onError !== undefined && typeof onError !== 'function') throw new ArgumentError('sseConnect: onError must be a function');
  if (context !== undefined && !(context instanceof RequestContext)) throw new ArgumentError('sseConnect: context must be a RequestContext');
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw new ArgumentError('sseConnect: signal must be an AbortSignal');
  const parser = new SSEParser({ maxLen, lastEventId });

  const ctx = new RequestContext({ parent: context });
  const onAbort = (): void => ctx.cancel(reasonOf(signal!));
  if (signal !== undefined) {
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  }
  const client = given ?? new Client();
  try {
    // Checked now: the loop below would take a refused call for a failed connection and retry it.
    client.checkOptions(options, 'sseConnect', OWN_OPTIONS);
    while (!ctx.canceled) {
      const headers = new Headers(call.headers ?? undefined);
      if (!headers.has('Accept')) headers.set('Accept', 'text/event-stream');
      if (!headers.has('Cache-Control')) headers.set('Cache-Control', 'no-cache');
      if (parser.lastEventId !== '') headers.set('Last-Event-ID', parser.lastEventId);
      else headers.delete('Last-Event-ID');
      const conn = ctx.child();
      let fatal: unknown = null;
      let stop = false;
      try {
        await client.open(
          'GET',
          url,
          async (stream) => {
            const res = await stream.startRead();
            const body = res.body;
            const status = res.status;
            if (status === 204) {
              stop = true;
              return;
            }
            if (status < 200 || status >= 300) {
              const err = new StatusError(status, await withErrorBody(res));
              if (TRANSIENT.has(status)) throw err;
              fatal = err;
              return;
            }
            const ct = res.headers.get('Content-Type') ?? '';
            if (!isEventStream(ct)) {
              fatal = new ProtocolError(`sseConnect: ${url.toString()} answered ${status} with Content-Type ${JSON.stringify(ct)}, not text/event-stream`);
              return;
            }
            if (onOpen !== undefined) {
              try {
                await onOpen(res);
              } catch (err) {
                fatal = err;
                throw err;
              }
            }
            if (!(body instanceof AbstractBody)) return;
            const out: SSEEvent[] = [];
            const stopped = (): boolean => ctx.canceled;
            for await (const chunk of body) {
              // A failed callback or a too-large event ends the stream for good; a failed read may reconnect.
              try {
                if (!(await deliverEvents(parser, chunk, out, callback, res, stopped))) return;
              } catch (err) {
                fatal = err;
                throw err;
              }
            }
          },
          { ...call, headers, context: conn, statusException: false },
        );
      } catch (err) {
        if (fatal === null && !ctx.canceled && onError !== undefined) {
          try {
            await onError(err);
          } catch (e) {
            fatal = e;
          }
        }
      } finally {
        conn.detach();
        // A stream that ended inside an event drops it; the id and retry in effect stay.
        parser.reset();
      }
      if (fatal !== null) throw fatal;
      if (stop || ctx.canceled) return;
      if (!(await sleep(parser.retry ?? retryDelay, ctx))) return;
    }
  } finally {
    if (signal !== undefined) signal.removeEventListener('abort', onAbort);
    ctx.detach();
    if (given === undefined) client.close();
  }
}

/**
 * A copy of the response with its body read (up to 64 KiB) into bytes, for a `StatusError`
 * (a copy: `open` empties the original's body when the exchange ends).
 */
async function withErrorBody(res: Response): Promise<Response> {
  const b = res.body;
  const parts: Uint8Array[] = [];
  if (!(b instanceof AbstractBody)) {
    if (b !== null && b.length > 0) parts.push(typeof b === 'string' ? Buffer.from(b, 'utf8') : b);
    return copyWith(res, parts);
  }
  let n = 0;
  try {
    for await (const c of b) {
      parts.push(c);
      n += c.length;
      if (n >= ERROR_BODY_LIMIT) break;
    }
  } catch {
    // The status says enough; a broken error body is not worth a different error.
  } finally {
    b.close();
  }
  return copyWith(res, parts);
}

function copyWith(res: Response, parts: Uint8Array[]): Response {
  const copy = new Response(res.status, Buffer.concat(parts).subarray(0, ERROR_BODY_LIMIT), {
    headers: res.headers,
    reason: res.reason,
    protoMajor: res.protoMajor,
    protoMinor: res.protoMinor,
    request: res.request,
  });
  copy.url = res.url;
  return copy;
}

/** Waits `ms`; resolves false (at once) when `ctx` is canceled first. */
function sleep(ms: number, ctx: RequestContext): Promise<boolean> {
  return new Promise((resolve) => {
    const t = setTimeout(() => {
      remove();
      resolve(true);
    }, ms);
    const remove = ctx.onCancel(() => {
      clearTimeout(t);
      resolve(false);
    });
  });
}

function reasonOf(signal: AbortSignal): string {
  const r: unknown = signal.reason;
  return r instanceof Error ? r.message : typeof r === 'string' ? r : 'sseConnect aborted by its AbortSignal';
}
