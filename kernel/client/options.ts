/**
 * Client and per-call options: their types, and how a call's options are merged over its
 * client's defaults (per-call options always win).
 */
import type { Writable } from 'node:stream';
import { ArgumentError } from '../errors.js';
import type { Body } from '../message/body.js';
import type { RequestContext } from '../message/context.js';
import type { HeaderPair, Headers, HeadersInit } from '../message/headers.js';
import type { ClientEvent } from './trace.js';

/** A request body as the client accepts it. */
export type RequestBody =
  | Body
  | Iterable<Uint8Array>
  | AsyncIterable<Uint8Array | string>
  | URLSearchParams
  | Record<string, string | number | boolean | readonly (string | number | boolean)[]>;

/** Query parameters: an object, pairs (repeated keys kept), or URLSearchParams. */
export type QueryInit = Record<string, string | number | boolean | readonly (string | number | boolean)[]> | readonly (readonly [string, string | number | boolean])[] | URLSearchParams;

/** Timeouts a client applies when a call does not pass its own (ms; 0 = off). */
export interface TimeoutOptions {
  /** DNS, TCP, proxy handshakes and TLS. Default 30 000. */
  connectTimeout?: number;
  /** The whole exchange (a deadline on the request's context). Default 0. */
  requestTimeout?: number;
  /** From the request sent to the response head. Default 0. */
  responseHeaderTimeout?: number;
  /** Longest gap between inbound read progress. Default 0. */
  readIdleTimeout?: number;
  /** Longest gap between outbound write progress. Default 0. */
  writeIdleTimeout?: number;
  /** How long an upload with `Expect: 100-continue` waits for 100 before sending anyway. Default 1000. */
  expectContinueTimeout?: number;
}

/** A `responseStream` with its ending rule: `end: false` leaves the stream open after the body (default true). */
export interface ResponseSink {
  /** Where the body goes. */
  stream: Writable;
  /** End `stream` once the body is in, and destroy it when the call fails. Default true. */
  end?: boolean;
}

/**
 * Headers given in a verb's second position (`get(url, headers, body?, options?)`): any
 * {@link HeadersInit}, except that a plain object may not use an option's name as a header
 * name. At run time an object whose keys are all option names is taken as the options, so a
 * mistyped option (`{ redirectLimit: 'three' }`) is a type error here instead of quietly
 * becoming a header. Give such a header in a `Headers`, a Map or pairs.
 */
export type VerbHeaders =
  | Headers
  | Iterable<HeaderPair | readonly [string, string | number]>
  | Map<string, string | number | readonly string[]>
  | (Record<string, string | number | readonly string[] | undefined> & { readonly [K in keyof CallOptions]?: never });

/**
 * Options of one call (`request`, `get`, …, `open`, `dispatch`). Plugins read their own keys
 * from the merged options through `getCallOptions(ctx)`; their types are added by
 * declaration merging (`declare module 'switchyard/kernel' { interface CallOptions { … } }`).
 */
export interface CallOptions extends TimeoutOptions {
  /** Request headers. */
  headers?: HeadersInit | null;
  /** Request body. A plain object is sent form-encoded; for JSON use `json`. */
  body?: RequestBody;
  /**
   * A value sent as the JSON body: `JSON.stringify(json)`, with `Content-Type:
   * application/json` unless the headers set one. Not with `body` (`ArgumentError`).
   */
  json?: unknown;
  /** Query parameters appended to the URL's own (never replacing it). */
  query?: QueryInit;
  /**
   * Writes the response body into this stream; `response.body` is then null. As with
   * `stream.pipeline`, the call ends the stream once the body is in and resolves after its
   * 'finish' (a file is complete when the call returns), and destroys it when the call fails;
   * `{ stream, end: false }` leaves it open for more (the caller ends it). `process.stdout`
   * and `process.stderr` are never ended.
   */
  responseStream?: Writable | ResponseSink;
  /** The client to use (top-level helpers). */
  client?: unknown;
  /** External cancellation and deadline. */
  context?: RequestContext;
  /** An AbortSignal that cancels the call. */
  signal?: AbortSignal;
  /** Proxy policy for this call (proxy plugin). */
  proxy?: unknown;
  /** Throw `StatusError` for a status of 300 or above that is not a redirect. Default true. */
  statusException?: boolean;
  /** Basic authentication `[user, password]`. */
  basicauth?: readonly [string, string];
  /** `auto` (default), `h1`, or `h2` (HTTP/2; on http:// h2c prior knowledge, with the h2 plugin). */
  httpVersion?: 'auto' | 'h1' | 'h2';
  /** Speak HTTP/2 to plain `http://` origins without asking first (h2c prior knowledge, with the h2c plugin): `httpVersion: 'h2'` unless httpVersion is given. Default false. */
  http2PriorKnowledge?: boolean;
  /** 1: one-line summaries on stderr; 2: also the heads. */
  verbose?: 0 | 1 | 2;
  /** Receives each {@link ClientEvent} of the call. */
  trace?: (event: ClientEvent) => void;
  /** Longest status or header line of the response. */
  maxLineBytes?: number;
  /** Largest response head. */
  maxHeaderBytes?: number;
  // Plugins add their options by declaration merging (`declare module` on the kernel's
  // entry, as plugins/options.ts does): an index signature here would accept any misspelt
  // option without a word.
}

function describeWhere(w: string | (() => string)): string {
  return typeof w === 'string' ? w : w();
}

/** @internal Checks the types of the options the kernel itself reads. */
export function checkCallOptions(o: CallOptions, whereOf: string | (() => string)): void {
  if (typeof o !== 'object' || o === null) throw new ArgumentError(`${describeWhere(whereOf)}: options must be an object, got ${o === null ? 'null' : typeof o}`);
  // The common call passes no options at all: nothing to check.
  let any = false;
  for (const _ in o) {
    any = true;
    break;
  }
  if (!any) return;
  const where = typeof whereOf === 'string' ? whereOf : whereOf();
  for (const k of ['connectTimeout', 'requestTimeout', 'responseHeaderTimeout', 'readIdleTimeout', 'writeIdleTimeout', 'expectContinueTimeout'] as const) {
    const v = o[k];
    if (v !== undefined && (typeof v !== 'number' || !Number.isFinite(v) || v < 0)) {
      throw new ArgumentError(`${where}: ${k} must be a number of milliseconds >= 0, got ${String(v)}`);
    }
  }
  if (o.statusException !== undefined && typeof o.statusException !== 'boolean') throw new ArgumentError(`${where}: statusException must be a boolean`);
  if (o.basicauth !== undefined && (!Array.isArray(o.basicauth) || o.basicauth.length !== 2 || typeof o.basicauth[0] !== 'string' || typeof o.basicauth[1] !== 'string')) {
    throw new ArgumentError(`${where}: basicauth must be [user, password] strings`);
  }
  if (o.responseStream !== undefined) checkResponseStream(o.responseStream, where);
  if (o.trace !== undefined && typeof o.trace !== 'function') throw new ArgumentError(`${where}: trace must be a function`);
  if (o.signal !== undefined && !(o.signal instanceof AbortSignal)) throw new ArgumentError(`${where}: signal must be an AbortSignal`);
  if (o.httpVersion !== undefined && o.httpVersion !== 'auto' && o.httpVersion !== 'h1' && o.httpVersion !== 'h2') {
    throw new ArgumentError(`${where}: httpVersion must be 'auto', 'h1' or 'h2'`);
  }
  for (const k of ['maxLineBytes', 'maxHeaderBytes'] as const) {
    const v = o[k];
    if (v !== undefined && (typeof v !== 'number' || !Number.isInteger(v) || v < 1)) throw new ArgumentError(`${where}: ${k} must be an integer >= 1, got ${String(v)}`);
  }
  if (o.http2PriorKnowledge !== undefined && typeof o.http2PriorKnowledge !== 'boolean') throw new ArgumentError(`${where}: http2PriorKnowledge must be a boolean`);
  if (o.verbose !== undefined && o.verbose !== 0 && o.verbose !== 1 && o.verbose !== 2) throw new ArgumentError(`${where}: verbose must be 0, 1 or 2`);
}

function isWritable(x: unknown): boolean {
  return typeof x === 'object' && x !== null && typeof (x as Writable).write === 'function';
}

function checkResponseStream(r: unknown, where: string): void {
  if (isWritable(r)) return;
  const s = r as Partial<ResponseSink> | null;
  if (typeof s !== 'object' || s === null || !isWritable(s.stream) || (s.end !== undefined && typeof s.end !== 'boolean') || Object.keys(s).some((k) => k !== 'stream' && k !== 'end')) {
    throw new ArgumentError(`${where}: responseStream must be a Writable stream, or { stream: Writable, end?: boolean }`);
  }
}
