/**
 * Turning what a caller passes as a request body into a message body, and the URL and
 * query into a request target.
 */
import { Buffer } from 'node:buffer';
import { ArgumentError } from '../errors.js';
import { AbstractBody, adoptStreamErrors, ChunkBody, type Body } from '../message/body.js';
import type { Headers } from '../message/headers.js';
import { encodeQuery } from '../message/uri.js';
import { PushBody } from './open.js';
import type { QueryInit, RequestBody } from './options.js';

/** A streamed request body over an iterable or async iterable (a Node Readable is one, a web ReadableStream too); sent chunked unless its length is given. */
export class IterableBody extends ChunkBody {
  private iterator: AsyncIterator<Uint8Array | string> | Iterator<Uint8Array> | null;
  private isClosed = false;
  private readonly source: unknown;
  private readonly size: number;

  /**
   * Wraps `source`; it is read once. `length`: the bytes it holds when known (a `Blob`'s
   * stream), so the request declares it instead of going chunked; -1 (default) when not.
   */
  constructor(source: AsyncIterable<Uint8Array | string> | Iterable<Uint8Array>, length = -1) {
    super();
    this.source = source;
    this.size = length;
    adoptStreamErrors(source);
    this.iterator = Symbol.asyncIterator in source ? (source as AsyncIterable<Uint8Array | string>)[Symbol.asyncIterator]() : (source as Iterable<Uint8Array>)[Symbol.iterator]();
  }

  /** The source's next value as bytes; null at its end. */
  protected async nextChunk(): Promise<Uint8Array | null> {
    if (this.iterator === null) return null;
    const r = await this.iterator.next();
    if (r.done === true) {
      this.iterator = null;
      return null;
    }
    const v: unknown = r.value;
    if (typeof v === 'string') return Buffer.from(v, 'utf8');
    if (v instanceof Uint8Array) return v;
    throw new ArgumentError(`request body stream produced ${typeof v}, expected Uint8Array or string chunks`);
  }

  /** Stops reading; a Node stream source is destroyed. */
  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    const it = this.iterator;
    this.iterator = null;
    if (it !== null && typeof it.return === 'function') void Promise.resolve(it.return()).catch(() => undefined);
    const s = this.source as { destroy?: () => void };
    if (typeof s.destroy === 'function') s.destroy();
  }

  /** See {@link AbstractBody.closed}. */
  get closed(): boolean {
    return this.isClosed;
  }

  /** The length given to the constructor (-1: unknown). */
  override get length(): number {
    return this.size;
  }
}

/**
 * Stops a streamed request body its exchange will not send any more (the response came first,
 * the stream or connection was reset, a timeout, cancellation): the body is closed, so its
 * source is released (a Readable destroyed, an iterator's `return()` called) and a read still
 * waiting on it ends. With `err`, writers of an `open()` body waiting on a write reject with it.
 * Every protocol's client calls this, so a never-ending source is never left behind.
 */
export function stopUpload(body: AbstractBody, err: Error | null): void {
  if (err !== null && body instanceof PushBody) body.abort(err);
  body.close();
}

const FORM = 'application/x-www-form-urlencoded';

function isPlainObject(x: object): boolean {
  const p = Object.getPrototypeOf(x);
  return p === Object.prototype || p === null;
}

function pairsOf(o: Record<string, unknown>): [string, string][] {
  const out: [string, string][] = [];
  for (const k of Object.keys(o)) {
    const v = o[k];
    if (v === undefined) continue;
    if (Array.isArray(v)) for (const x of v) out.push([k, String(x)]);
    else out.push([k, String(v)]);
  }
  return out;
}

/** @internal The message body for `body`; sets Content-Type for form bodies when absent. */
export function toMessageBody(body: RequestBody | undefined, headers: Headers): Body {
  if (body === undefined || body === null) return null;
  if (typeof body === 'string' || body instanceof Uint8Array) return body;
  if (body instanceof AbstractBody) {
    // A body that knows its media type (a multipart Form) sets Content-Type unless the caller did.
    const ct = (body as { contentType?: unknown }).contentType;
    if (typeof ct === 'string' && ct !== '' && !headers.has('Content-Type')) headers.push('Content-Type', ct);
    return body;
  }
  if (body instanceof URLSearchParams) {
    if (!headers.has('Content-Type')) headers.push('Content-Type', FORM);
    return body.toString();
  }
  if (typeof body === 'object') {
    if (Symbol.asyncIterator in body || Symbol.iterator in body) return new IterableBody(body as AsyncIterable<Uint8Array>);
    if (isPlainObject(body)) {
      if (!headers.has('Content-Type')) headers.push('Content-Type', FORM);
      return encodeQuery(pairsOf(body as Record<string, unknown>));
    }
  }
  throw new ArgumentError(
    `request body must be a string, Uint8Array, AbstractBody, Readable or async iterable, URLSearchParams or plain object, got ${typeof body === 'object' ? (body as object).constructor?.name : typeof body}`,
  );
}

/**
 * @internal The body of a call's `json` option: `JSON.stringify(value)`, with Content-Type
 * `application/json` unless the caller set one. `ArgumentError` when the call also passes a
 * body, or when the value has no JSON form (a function, a symbol, a BigInt, a cycle).
 */
export function jsonBody(value: unknown, body: RequestBody | null | undefined, headers: Headers): string {
  if (body !== undefined && body !== null) throw new ArgumentError('json and body cannot be combined: json is the body (sent as JSON.stringify(json)); pass one of them');
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    throw new ArgumentError(`json cannot be sent: JSON.stringify failed (${(err as Error).message})`, { cause: err });
  }
  if (text === undefined) throw new ArgumentError(`json cannot be sent: a ${typeof value} has no JSON form`);
  if (!headers.has('Content-Type')) headers.push('Content-Type', 'application/json');
  return text;
}

const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE', 'QUERY']);

/** True for methods whose requests may be sent twice without a different effect (RFC 9110 §9.2.2, plus QUERY). */
export function isIdempotent(method: string): boolean {
  return IDEMPOTENT.has(method);
}

/** @internal True when a body can be sent again (retries, 307/308 redirects). */
export function isReplayable(body: Body): boolean {
  return body === null || typeof body === 'string' || body instanceof Uint8Array;
}

/** @internal Query pairs from any accepted form. */
export function queryPairs(q: QueryInit | undefined): [string, string][] {
  if (q === undefined || q === null) return [];
  if (q instanceof URLSearchParams) return [...q.entries()];
  if (Array.isArray(q)) return q.map((p) => [String(p[0]), String(p[1])] as [string, string]);
  if (typeof q === 'object') return pairsOf(q as Record<string, unknown>);
  throw new ArgumentError(`query must be an object, an array of pairs or URLSearchParams, got ${typeof q}`);
}

/** @internal `target` with `pairs` appended to its query string. */
export function appendQuery(target: string, pairs: readonly (readonly [string, string])[]): string {
  if (pairs.length === 0) return target;
  const hash = target.indexOf('#');
  const base = hash >= 0 ? target.slice(0, hash) : target;
  const sep = base.includes('?') ? (base.endsWith('?') || base.endsWith('&') ? '' : '&') : '?';
  return base + sep + encodeQuery(pairs);
}
