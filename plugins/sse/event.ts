/**
 * SSEEvent: one server-sent event, as written by a server or dispatched by a parser, and its
 * wire form.
 */
import { Buffer } from 'node:buffer';
import { ArgumentError } from '../../kernel/index.js';

/** Default bound of one event, both sides: 16 MiB. */
export const DEFAULT_SSE_MAX_LEN = 16 * 1024 * 1024;

/** Options of {@link SSEEvent}. */
export interface SSEEventOptions {
  /** Event type (`event:` field); null or absent for the default (`message`). */
  event?: string | null;
  /** Event id (`id:` field). On a parsed event: the last event id in effect. */
  id?: string | null;
  /** Reconnection time in ms (`retry:` field). On a parsed event: the last valid one seen. */
  retry?: number | null;
  /** Every field observed for a parsed event, by name (repeated ones joined with `\n`). */
  fields?: Readonly<Record<string, string>>;
}

const NO_FIELDS: Readonly<Record<string, string>> = Object.freeze(Object.create(null) as Record<string, string>);

/** One server-sent event. Immutable, so one event can be written to many streams (encoded once). */
export class SSEEvent {
  /** Event data; several `data:` lines are joined with `\n`. */
  readonly data: string;
  /** Event type, or null for the default (`message`). */
  readonly event: string | null;
  /** Event id; on a parsed event the last event id in effect, null when none. */
  readonly id: string | null;
  /** Reconnection time in ms; on a parsed event the last valid hint seen, null when none. */
  readonly retry: number | null;
  /** Every field observed for a parsed event (empty for one built to be written). */
  readonly fields: Readonly<Record<string, string>>;

  /** `new SSEEvent(data, { event, id, retry })`. `event` and `id` may not hold CR or LF, `id` no NUL. */
  constructor(data: string, options: SSEEventOptions = {}) {
    if (typeof data !== 'string') {
      throw new ArgumentError(`SSEEvent data must be a string (JSON.stringify objects first), got ${data === null ? 'null' : typeof data}`);
    }
    if (typeof options !== 'object' || options === null) throw new ArgumentError('SSEEvent options must be an object');
    const { event = null, id = null, retry = null, fields } = options;
    if (event !== null && (typeof event !== 'string' || hasLineBreak(event))) {
      throw new ArgumentError(`SSEEvent event must be a string without CR or LF, got ${JSON.stringify(event)}`);
    }
    if (id !== null && (typeof id !== 'string' || hasLineBreak(id) || id.includes('\0'))) {
      throw new ArgumentError(`SSEEvent id must be a string without CR, LF or NUL (a client ignores such an id), got ${JSON.stringify(id)}`);
    }
    if (retry !== null && (typeof retry !== 'number' || !Number.isSafeInteger(retry) || retry < 0)) {
      throw new ArgumentError(`SSEEvent retry must be a whole number of milliseconds >= 0, got ${String(retry)}`);
    }
    this.data = data;
    this.event = event;
    this.id = id;
    this.retry = retry;
    this.fields = fields ?? NO_FIELDS;
  }

  /** The event type a browser's `EventSource` dispatches it as: `event`, or `message`. */
  get type(): string {
    return this.event === null || this.event === '' ? 'message' : this.event;
  }
}

function hasLineBreak(s: string): boolean {
  return s.includes('\n') || s.includes('\r');
}

// Wire forms, made on first write and shared by every stream the event goes to.
const wires = new WeakMap<SSEEvent, Buffer>();

/**
 * @internal The event's wire bytes: `event:`, `id:`, `retry:`, one `data:` line per line of
 * data (split at CRLF, CR and LF, the line ends a parser knows), then the blank line.
 */
export function encodeEvent(ev: SSEEvent): Buffer {
  let wire = wires.get(ev);
  if (wire !== undefined) return wire;
  let s = '';
  if (ev.event !== null) s += `event: ${ev.event}\n`;
  if (ev.id !== null) s += `id: ${ev.id}\n`;
  if (ev.retry !== null) s += `retry: ${ev.retry}\n`;
  const d = ev.data;
  if (!hasLineBreak(d)) s += `data: ${d}\n\n`;
  else s += `data: ${d.split(LINE_END).join('\ndata: ')}\n\n`;
  wire = Buffer.from(s, 'utf8');
  wires.set(ev, wire);
  return wire;
}

const LINE_END = /\r\n|\r|\n/;

/** @internal Checks a `maxLen` option (named `name` in the message): a whole number of bytes >= 1. */
export function checkMaxLen(v: unknown, name: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1) {
    throw new ArgumentError(`${name} must be a whole number of bytes >= 1, got ${String(v)}`);
  }
  return v;
}
