/**
 * Message: what a request and a response share.
 */
import { ArgumentError } from '../errors.js';
import { Headers } from './headers.js';

/** Supertype of {@link Request} and {@link Response}: the trailers, made on first use. */
export abstract class Message {
  // Made on first use: most messages never touch their trailers. Each subclass's constructor
  // sets it (null or given ones), so this constructor stays empty on the per-request path.
  declare protected _trailers: Headers | null;

  /** Trailers (sent after a chunked body; read from one). */
  get trailers(): Headers {
    return (this._trailers ??= new Headers());
  }
  set trailers(h: Headers) {
    if (!(h instanceof Headers)) throw new ArgumentError(`trailers must be a Headers, got ${describeType(h)}`);
    this._trailers = h;
  }

  /** True when trailers were set (without creating an empty set). */
  get hasTrailers(): boolean {
    return this._trailers !== null && this._trailers.size > 0;
  }
}

/** @internal The type of a value for an error message: its class name, `null`, or `typeof`. */
export function describeType(x: unknown): string {
  if (x === null) return 'null';
  if (typeof x === 'object') return (x as object).constructor?.name ?? 'object';
  return typeof x;
}
