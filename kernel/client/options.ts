/**
 * Client and per-call options: their types, and how a call's options are merged over its
 * client's defaults (per-call options always win).
 */
import type { Writable } from 'node:stream';
import { ArgumentError } from '../errors.js';
import type { HookHost } from '../hook-host.js';
import type { Body } from '../message/body.js';
import { looksLikeHeader, unknownOptionError } from '../option-keys.js';
import { describe } from '../describe.js';
import { callOptionOwner, needsPlugin, pluginCallOptionNames, protocolMissing, setKernelCallOptions } from '../plugin-options.js';
import type { RequestContext } from '../message/context.js';
import type { HeaderPair, Headers, HeadersInit } from '../message/headers.js';
import type { Response } from '../message/response.js';
import type { ClientEvent } from './trace.js';

/** A request body as the client accepts it. */
export type RequestBody = Body | Iterable<Uint8Array> | AsyncIterable<Uint8Array | string> | URLSearchParams | Record<string, string | number | boolean | readonly (string | number | boolean)[]>;

/** Query parameters: an object, pairs (repeated keys kept), or URLSearchParams. */
export type QueryInit = Record<string, string | number | boolean | readonly (string | number | boolean)[]> | readonly (readonly [string, string | number | boolean])[] | URLSearchParams;

/**
 * Default `responseHeaderTimeout`, ms: a server that never answers, or answers with 1xx forever,
 * cannot hold a call longer than this. undici's `headersTimeout` (300 s).
 */
export const DEFAULT_RESPONSE_HEADER_TIMEOUT = 300_000;

/** Default `connectTimeout`, ms. */
export const DEFAULT_CONNECT_TIMEOUT = 30_000;

/**
 * The timeouts of one exchange and the connection it opens (ms; 0 = off): what a call, the
 * client's upgrade handshake (`upgradeRequest`) and `WebSockets.open` take, with one meaning.
 */
export interface ExchangeTimeoutOptions {
  /** DNS, TCP, proxy handshakes and TLS. Default 30 000. */
  connectTimeout?: number;
  /** The whole exchange, connect included (a deadline on the request's context). Default 0. */
  requestTimeout?: number;
  /** From the request sent to the final response head (interim 1xx responses do not restart it). Default 300 000 (undici's `headersTimeout`), or off when `readIdleTimeout` is set (it then times the wait); 0 = off. */
  responseHeaderTimeout?: number;
  /** Longest gap between inbound read progress. Default 0. */
  readIdleTimeout?: number;
  /** Longest gap between outbound write progress. Default 0. */
  writeIdleTimeout?: number;
}

/** The names of {@link ExchangeTimeoutOptions}. */
export const EXCHANGE_TIMEOUT_OPTIONS = Object.freeze([
  'connectTimeout',
  'requestTimeout',
  'responseHeaderTimeout',
  'readIdleTimeout',
  'writeIdleTimeout',
] as const satisfies readonly (keyof ExchangeTimeoutOptions)[]);

/** Timeouts a client applies when a call does not pass its own (ms; 0 = off). */
export interface TimeoutOptions extends ExchangeTimeoutOptions {
  /** How long an upload with `Expect: 100-continue` waits for 100 before sending anyway. Default 1000. */
  expectContinueTimeout?: number;
}

/** The names of {@link TimeoutOptions}. */
const TIMEOUT_OPTIONS = [...EXCHANGE_TIMEOUT_OPTIONS, 'expectContinueTimeout'] as const satisfies readonly (keyof TimeoutOptions)[];

/** Throws `ArgumentError` (starting with `where: ` when given) unless `v` is a number of milliseconds >= 0 or undefined. */
function checkMs(v: unknown, key: string, where: Where | null): void {
  if (v !== undefined && (typeof v !== 'number' || !Number.isFinite(v) || v < 0)) {
    throw new ArgumentError(`${where === null ? '' : `${describeWhere(where)}: `}${key} must be a number of milliseconds >= 0, got ${String(v)}`);
  }
}

/** {@link ExchangeTimeoutOptions} checked and with their defaults: what one exchange applies. */
export type ExchangeTimeouts = { readonly [K in keyof ExchangeTimeoutOptions]-?: number };

/**
 * Checks `o`'s {@link ExchangeTimeoutOptions} and fills in their defaults (each at most
 * 2^31-1, the longest a timer waits): for an exchange that takes them directly, not through a
 * client (`upgradeRequest`).
 */
export function resolveExchangeTimeouts(o: ExchangeTimeoutOptions): ExchangeTimeouts {
  for (const k of EXCHANGE_TIMEOUT_OPTIONS) checkMs(o[k], k, null);
  const ms = (v: number | undefined, dflt: number): number => Math.min(v ?? dflt, 2 ** 31 - 1);
  const readIdleTimeout = ms(o.readIdleTimeout, 0);
  return {
    connectTimeout: ms(o.connectTimeout, DEFAULT_CONNECT_TIMEOUT),
    requestTimeout: ms(o.requestTimeout, 0),
    // Unset, with readIdleTimeout set: that one times the head wait, as for any call.
    responseHeaderTimeout: ms(o.responseHeaderTimeout, readIdleTimeout > 0 ? 0 : DEFAULT_RESPONSE_HEADER_TIMEOUT),
    readIdleTimeout,
    writeIdleTimeout: ms(o.writeIdleTimeout, 0),
  };
}

/** The {@link ExchangeTimeoutOptions} of `o` (those it sets), to hand on to another options object. */
export function pickExchangeTimeouts(o: ExchangeTimeoutOptions): ExchangeTimeoutOptions {
  const out: ExchangeTimeoutOptions = {};
  for (const k of EXCHANGE_TIMEOUT_OPTIONS) if (o[k] !== undefined) out[k] = o[k];
  return out;
}

/** A `responseStream` with its ending rule: `end: false` leaves the stream open after the body (default true). */
export interface ResponseSink {
  /** Where the body goes. */
  stream: Writable;
  /** End `stream` once the body is in, and destroy it when the call fails. Default true. */
  end?: boolean;
}

/**
 * Headers in a verb's second position when no body follows (`get(url, headers)`): only values
 * that cannot be mistaken for options, a `Headers`, pairs or a Map. A plain object there is
 * the options (`get(url, { headers: { … } })`); a plain object of headers goes in `headers:`,
 * or in the positional form once a body follows (`post(url, { 'X-A': '1' }, body)`).
 */
export type VerbHeaders = Headers | Iterable<HeaderPair | readonly [string, string | number]> | Map<string, string | number | readonly string[]>;

/**
 * The call shapes of the request helpers (`get`, `post`, … and the `Client` methods of those
 * names). An object in the second position is the options, never headers.
 */
export interface Verb {
  /** `(url, options?)`. */
  (url: string | URL, options?: CallOptions): Promise<Response>;
  /** `(url, headers, body?, options?)` with headers that cannot be options: a `Headers`, pairs or a Map. */
  (url: string | URL, headers: VerbHeaders | null, body?: RequestBody, options?: CallOptions): Promise<Response>;
  /** `(url, headers, body, options?)`: any headers, a plain object too, once the body (or `undefined`) follows. */
  (url: string | URL, headers: HeadersInit | null, body: RequestBody | undefined, options?: CallOptions): Promise<Response>;
}

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
  /** Throw `StatusError` for a status of 300 or above that is not a redirect. Default true. */
  statusException?: boolean;
  /** Basic authentication `[user, password]`. */
  basicauth?: readonly [string, string];
  /**
   * `auto` (default), `h1`, or `h2` (HTTP/2: on https:// with a plugin that speaks h2, on
   * http:// prior knowledge with one that speaks h2c, as the default h2 and h2c plugins do;
   * without one, an `ArgumentError` rather than HTTP/1.1).
   */
  httpVersion?: 'auto' | 'h1' | 'h2';
  /** Speak HTTP/2 to plain `http://` origins without asking first (h2c prior knowledge, with a plugin that speaks h2c): `httpVersion: 'h2'` unless httpVersion is given. Default false. */
  http2PriorKnowledge?: boolean;
  /** 1: one-line summaries on stderr; 2: also the heads. */
  verbose?: 0 | 1 | 2;
  /** Receives each {@link ClientEvent} of the call. */
  trace?: (event: ClientEvent) => void;
  /** Longest status or header line of the response. */
  maxLineBytes?: number;
  /** Largest response head. */
  maxHeaderBytes?: number;
  /**
   * Most bytes of a response body buffered in memory (after decoding), else
   * `ResponseTooLargeError` and the connection closed; 0 = no bound. Default 64 MiB. Bodies
   * written to `responseStream` or streamed (`dispatch`, `open`) are not bounded by it.
   */
  maxResponseBytes?: number;
  // Plugins add their options by declaration merging (`declare module` on the kernel's
  // entry, as plugins/options.ts does): an index signature here would accept any misspelt
  // option without a word.
}

/**
 * The call options the kernel reads itself (every other name belongs to a plugin that
 * declares it, see `definePlugin`'s `callOptions`, or is unknown). Keep in step with
 * {@link CallOptions}.
 */
export const KERNEL_CALL_OPTIONS: ReadonlySet<string> = new Set([
  ...TIMEOUT_OPTIONS,
  'headers',
  'body',
  'json',
  'query',
  'responseStream',
  'client',
  'context',
  'signal',
  'statusException',
  'basicauth',
  'httpVersion',
  'http2PriorKnowledge',
  'verbose',
  'trace',
  'maxLineBytes',
  'maxHeaderBytes',
  'maxResponseBytes',
]);
setKernelCallOptions(KERNEL_CALL_OPTIONS);

/** What to say for an object of other names given where call options go. */
const BODY_HINT = 'a request body goes in { body: … } (an object there is sent form-encoded), or in { json: … } to send it as JSON';

/** What to say for a header name given where call options go. */
const HEADERS_HINT = 'request headers go in { headers: { … } }, or in the positional form (url, headers, body, options)';

/**
 * Where options were given, for the start of an error's message: the text, or a function that
 * makes it (only when there is an error to report: a call's checks run per request).
 */
type Where = string | (() => string);

function describeWhere(w: Where): string {
  return typeof w === 'string' ? w : w();
}

/**
 * Checks the names of an options object that takes plugins' call options too (a client's, a
 * call's, `WebSockets.open`'s): a name in `known` (what the caller reads itself) passes; a
 * plugin's call option is checked by that plugin's check, and refused, naming the plugin, when
 * `kernel` (null: none) does not have it; any other name is an `ArgumentError` with the nearest
 * valid one (and `headersHint` for a name that looks like a header's).
 */
export function checkCallOptionNames(o: object, where: Where, kernel: HookHost | null, known: ReadonlySet<string>, headersHint?: string): void {
  for (const key in o) {
    if (known.has(key) || !Object.prototype.hasOwnProperty.call(o, key)) continue;
    const owner = callOptionOwner(key);
    if (owner === undefined) throw unknownOptionError(describeWhere(where), key, [...known, ...pluginCallOptionNames()], adviceFor(o, key, known, headersHint));
    const v = (o as Record<string, unknown>)[key];
    if (v === undefined) continue;
    if (kernel === null || !kernel.isRegistered(owner.plugin)) throw needsPlugin(describeWhere(where), key, owner.plugin, kernel !== null);
    const expected = owner.check(v);
    if (expected !== null) throw new ArgumentError(`${describeWhere(where)}: ${key} must be ${expected}, got ${describe(v)}`);
  }
}

/** What to add for an unknown call option `key` that nothing is near: where a header, or a body, goes. */
function adviceFor(o: object, key: string, known: ReadonlySet<string>, headersHint: string | undefined): string | undefined {
  if (headersHint === undefined) return undefined;
  if (looksLikeHeader(key)) return headersHint;
  // Not one name of the object is an option: it was most likely meant as the body.
  if (!Object.keys(o).some((k) => known.has(k) || callOptionOwner(k) !== undefined)) return BODY_HINT;
  return undefined;
}

/** @internal Checks the names and the types of a call's options (`kernel`: the client's, for the options that need a plugin). */
export function checkCallOptions(o: CallOptions, where: Where, kernel: HookHost | null = null, known: ReadonlySet<string> = KERNEL_CALL_OPTIONS): void {
  if (typeof o !== 'object' || o === null) throw new ArgumentError(`${describeWhere(where)}: options must be an object, got ${o === null ? 'null' : typeof o}`);
  // The common call passes no options at all: nothing to check.
  let any = false;
  for (const _ in o) {
    any = true;
    break;
  }
  if (!any) return;
  checkCallOptionNames(o, where, kernel, known, known === KERNEL_CALL_OPTIONS ? HEADERS_HINT : undefined);
  for (const k of TIMEOUT_OPTIONS) checkMs(o[k], k, where);
  if (o.statusException !== undefined && typeof o.statusException !== 'boolean') throw new ArgumentError(`${describeWhere(where)}: statusException must be a boolean`);
  if (o.basicauth !== undefined && (!Array.isArray(o.basicauth) || o.basicauth.length !== 2 || typeof o.basicauth[0] !== 'string' || typeof o.basicauth[1] !== 'string')) {
    throw new ArgumentError(`${describeWhere(where)}: basicauth must be [user, password] strings`);
  }
  if (o.responseStream !== undefined) checkResponseStream(o.responseStream, where);
  if (o.trace !== undefined && typeof o.trace !== 'function') throw new ArgumentError(`${describeWhere(where)}: trace must be a function`);
  if (o.signal !== undefined && !(o.signal instanceof AbortSignal)) throw new ArgumentError(`${describeWhere(where)}: signal must be an AbortSignal`);
  if (o.httpVersion !== undefined && o.httpVersion !== 'auto' && o.httpVersion !== 'h1' && o.httpVersion !== 'h2') {
    throw new ArgumentError(`${describeWhere(where)}: httpVersion must be 'auto', 'h1' or 'h2'`);
  }
  for (const k of ['maxLineBytes', 'maxHeaderBytes'] as const) {
    const v = o[k];
    if (v !== undefined && (typeof v !== 'number' || !Number.isInteger(v) || v < 1)) throw new ArgumentError(`${describeWhere(where)}: ${k} must be an integer >= 1, got ${String(v)}`);
  }
  if (o.maxResponseBytes !== undefined && (typeof o.maxResponseBytes !== 'number' || !Number.isSafeInteger(o.maxResponseBytes) || o.maxResponseBytes < 0)) {
    throw new ArgumentError(`${describeWhere(where)}: maxResponseBytes must be a whole number of bytes >= 0 (0 = no bound), got ${String(o.maxResponseBytes)}`);
  }
  if (o.http2PriorKnowledge !== undefined && typeof o.http2PriorKnowledge !== 'boolean') throw new ArgumentError(`${describeWhere(where)}: http2PriorKnowledge must be a boolean`);
  // HTTP/2 is spoken by plugins (h2 over TLS, h2c on plain http://): without one the call would
  // quietly speak HTTP/1.1. The URL's scheme is checked when the call connects (see checkHttpVersion).
  if (o.http2PriorKnowledge === true) needProtocol(kernel, 'h2c', where, 'http2PriorKnowledge');
  if (o.httpVersion === 'h2') needProtocol(kernel, 'h2', where, "httpVersion: 'h2'");
  if (o.verbose !== undefined && o.verbose !== 0 && o.verbose !== 1 && o.verbose !== 2) throw new ArgumentError(`${describeWhere(where)}: verbose must be 0, 1 or 2`);
}

/**
 * Throws unless `kernel` speaks what `httpVersion` (the call's, resolved) asks for on a URL of
 * `protocol`: `'h2'` on `http:` is HTTP/2 with prior knowledge (h2c), which a plugin must speak,
 * or the connection would quietly be HTTP/1.1. `where` starts the message.
 */
export function checkHttpVersion(kernel: HookHost | null, httpVersion: string, protocol: string, where: string): void {
  if (httpVersion === 'h2' && protocol === 'http:') throwIf(protocolMissing(kernel, 'h2c', where, "httpVersion: 'h2' on an http:// URL"));
}

function throwIf(err: ArgumentError | null): void {
  if (err !== null) throw err;
}

/** Throws {@link protocolMissing}'s error unless `kernel` speaks `protocol` (`where` made only then). */
function needProtocol(kernel: HookHost | null, protocol: string, where: Where, key: string): void {
  if (protocolMissing(kernel, protocol, null, key) !== null) throw protocolMissing(kernel, protocol, describeWhere(where), key)!;
}

function isWritable(x: unknown): boolean {
  return typeof x === 'object' && x !== null && typeof (x as Writable).write === 'function';
}

function checkResponseStream(r: unknown, where: Where): void {
  if (isWritable(r)) return;
  const s = r as Partial<ResponseSink> | null;
  if (typeof s !== 'object' || s === null || !isWritable(s.stream) || (s.end !== undefined && typeof s.end !== 'boolean') || Object.keys(s).some((k) => k !== 'stream' && k !== 'end')) {
    throw new ArgumentError(`${describeWhere(where)}: responseStream must be a Writable stream, or { stream: Writable, end?: boolean }`);
  }
}
