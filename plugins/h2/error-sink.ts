/**
 * Listeners on HTTP/2 streams stored without the cost of `on()`, per stream on both sides: the
 * do-nothing 'error' listener every stream gets, and the client exchange's own.
 */
import type { Http2Stream } from 'node:http2';

function noop(): void {}

type EventsOf = { _events?: Record<string, unknown> | null; _eventsCount?: number };

/**
 * Adds `fn` as a listener of `event` on `stream` as `EventEmitter` stores a first listener,
 * without `on()`: that costs an EventEmitter.on and a 'newListener' emit into node:http2's
 * listener counting (which counts only 'priority' and 'frameError'), ~250 ns and ~100 bytes a
 * listener in profiles of both sides, paid per stream. For events only: not 'data' or
 * 'readable' (Readable.on also switches the stream's mode for those), nor 'priority' or
 * 'frameError' (node:http2 must count those). A stream whose event already has a listener, or
 * without node's `_events` table, gets `on()`.
 */
export function listenQuietly(stream: Http2Stream, event: string, fn: (...args: never[]) => void): void {
  const e = stream as unknown as EventsOf;
  const events = e._events;
  if (events !== null && typeof events === 'object' && events[event] === undefined && typeof e._eventsCount === 'number') {
    events[event] = fn;
    e._eventsCount++;
  } else {
    stream.on(event, fn as (...args: unknown[]) => void);
  }
}

/**
 * Gives `stream` an 'error' listener that does nothing (its owner learns of the end from
 * 'close' and `rstCode`). node:http2 emits 'error' on a stream closed with a code other than
 * NO_ERROR or CANCEL; unheard, that is an uncaught exception.
 */
export function sinkErrors(stream: Http2Stream): void {
  listenQuietly(stream, 'error', noop);
}
