/**
 * The do-nothing 'error' listener every HTTP/2 stream gets, server and client side, stored
 * without the cost of `on()`.
 */
import type { Http2Stream } from 'node:http2';

function noop(): void {}

type EventsOf = { _events?: Record<string, unknown> | null; _eventsCount?: number };

/**
 * Gives `stream` an 'error' listener that does nothing (its owner learns of the end from
 * 'close' and `rstCode`). node:http2 emits 'error' on a stream closed with a code other than
 * NO_ERROR or CANCEL; unheard, that is an uncaught exception. `stream.on('error', …)` costs a
 * Readable.on, an EventEmitter.on and a 'newListener' emit into node:http2's listener counting
 * (which counts only 'priority' and 'frameError'), ~250 ns and ~100 bytes per stream in a
 * profile of the h2c server. node's streams preset `_events.error` to undefined, so the
 * listener is stored there as EventEmitter stores a first listener; a stream without that
 * table, or with an error listener already, gets `on`.
 */
export function sinkErrors(stream: Http2Stream): void {
  const e = stream as unknown as EventsOf;
  const events = e._events;
  if (events !== null && typeof events === 'object' && events.error === undefined && typeof e._eventsCount === 'number') {
    events.error = noop;
    e._eventsCount++;
  } else {
    stream.on('error', noop);
  }
}
