/**
 * `fetch` on a switchyard `Client`: the Fetch standard's call, as Node's global `fetch` takes
 * it, run through the client's pool and every client plugin of its kernel (HTTP/2 by ALPN,
 * proxies, cookies, retries, decompression, redirects), resolving to a global `Response` whose
 * body streams as the bytes arrive.
 */
import { ArgumentError } from '../errors.js';
import { AbstractBody } from '../message/body.js';
import { unknownOptionError } from '../option-keys.js';
import { isToken } from '../http1/tables.js';
import { Headers } from '../message/headers.js';
import type { Response } from '../message/response.js';
import { fromWebHeaders } from '../web/headers.js';
import { fromWebRequest } from '../web/from-web-request.js';
import { webResponse } from '../web/to-web-response.js';
import type { CallOptions, RequestBody } from './options.js';
import { IterableBody } from './request-body.js';

/**
 * switchyard's options of one `fetch` (`init.switchyard`): the call options fetch's own fields
 * do not cover (timeouts, `httpVersion`, `proxy`, `cookiejar`, `retries`, `trace`, …). Request
 * headers, body, signal and redirects go in `init`'s own fields, so those call options are not
 * here.
 */
export type FetchOptions = Omit<CallOptions, 'headers' | 'body' | 'json' | 'signal' | 'redirect' | 'responseStream' | 'statusException' | 'client'>;

/**
 * The second argument of `fetch`: the Fetch standard's `RequestInit` (the members without a
 * meaning in Node, such as `mode`, are accepted and ignored, as Node's `fetch` does; `cache`
 * is the cache plugin's `cache` option when the client has that plugin, else ignored too), and
 * `switchyard`, the call options beyond fetch's.
 */
export interface FetchInit extends Omit<globalThis.RequestInit, 'dispatcher'> {
  /** The standard's cache mode: the cache plugin's `cache` call option when the client has that plugin, else ignored. */
  cache?: 'default' | 'no-store' | 'reload' | 'no-cache' | 'force-cache' | 'only-if-cached';
  /** switchyard's call options for this fetch (see {@link FetchOptions}). */
  switchyard?: FetchOptions;
}

/** What `fetch` takes as its first argument: a URL (string or `URL`) or a global `Request`. */
export type FetchInput = string | URL | globalThis.Request;

/** The members of `init` fetch reads (the standard's `RequestInit`, and `switchyard`). */
const INIT_KEYS: ReadonlySet<string> = new Set([
  'method',
  'headers',
  'body',
  'redirect',
  'signal',
  'duplex',
  'referrer',
  'referrerPolicy',
  'mode',
  'credentials',
  'cache',
  'integrity',
  'keepalive',
  'priority',
  'window',
  'switchyard',
]);

/** `init` members that make a new global `Request` from a given one (the others leave it as it is). */
const REQUEST_KEYS = ['method', 'headers', 'body', 'redirect', 'signal', 'duplex', 'referrer', 'referrerPolicy', 'mode', 'credentials', 'cache', 'integrity', 'keepalive', 'priority', 'window'];

/** Call options that `init`'s own fields cover, and where each goes instead. */
const COVERED: Readonly<Record<string, string>> = {
  headers: 'init.headers',
  body: 'init.body',
  json: 'init.body (JSON.stringify(value), with a Content-Type header)',
  signal: 'init.signal',
  redirect: "init.redirect ('follow', 'manual' or 'error')",
  responseStream: 'the response body (response.body.pipeTo(…))',
  statusException: 'no option: fetch resolves whatever the status',
  client: 'client.fetch(…) of that client',
};

/** Methods the standard upper-cases whatever their case. */
const NORMALIZED = new Set(['DELETE', 'GET', 'HEAD', 'OPTIONS', 'POST', 'PUT']);
/** Methods fetch refuses. */
const FORBIDDEN = new Set(['CONNECT', 'TRACE', 'TRACK']);
const REDIRECT_STATUS = new Set([301, 302, 303, 307, 308]);
const NO_INIT: FetchInit = Object.freeze({});

/** @internal What `Client.streamCall` resolves to. */
export interface StreamedCall {
  /** The final response, its body streamed. */
  readonly response: Response;
  /** The response answers a redirect hop, not the call's first request. */
  readonly redirected: boolean;
}

/** What fetch asks of a client (a `Client`; named here so this file needs no import of it). */
interface Client {
  streamCall(method: string, url: string, options: CallOptions, where: string): Promise<StreamedCall>;
  hasPlugin(name: string): boolean;
}

/** A request as fetch sends it: what `Client.streamCall` takes. */
interface Prepared {
  method: string;
  url: string;
  options: CallOptions;
  redirect: 'follow' | 'manual' | 'error';
  signal: AbortSignal | null;
}

/**
 * `fetch(input, init)` through `client` (see {@link FetchInit}). Resolves to a global `Response`
 * once the final head arrives, its body a byte stream read from the connection as the reader
 * asks. As Node's `fetch`: a failure of the exchange rejects with `TypeError('fetch failed')`
 * whose `cause` is switchyard's error; an abort rejects with the signal's reason; an input the
 * standard refuses (a bad URL or method, a body on GET) with `TypeError`. switchyard's own input
 * errors (an unknown `init` member or call option) are `ArgumentError`.
 */
export function fetchOn(client: Client, input: FetchInput, init: FetchInit | undefined): Promise<globalThis.Response> {
  let prepared: Prepared;
  try {
    prepared = prepare(client, input, init ?? NO_INIT);
  } catch (err) {
    return Promise.reject(err);
  }
  return send(client, prepared);
}

/** Sends a prepared fetch and makes its web response. */
function send(client: Client, p: Prepared): Promise<globalThis.Response> {
  const signal = p.signal;
  if (signal !== null && signal.aborted) return Promise.reject(signal.reason);
  let call: Promise<StreamedCall>;
  try {
    call = client.streamCall(p.method, p.url, p.options, 'fetch()');
  } catch (err) {
    return Promise.reject(err);
  }
  const failure = (err: unknown): unknown => (signal !== null && signal.aborted ? signal.reason : new TypeError('terminated', { cause: err }));
  return call.then(
    (c: StreamedCall) => {
      const res = c.response;
      if (REDIRECT_STATUS.has(res.status) && p.redirect !== 'manual') {
        const refused = p.redirect === 'error' ? "init.redirect is 'error'" : unfollowed(client, res, p.options);
        if (refused !== null) {
          if (res.body instanceof AbstractBody) res.body.close();
          throw new TypeError('fetch failed', { cause: new ArgumentError(`redirect (${res.status}) to ${res.headers.get('location') ?? 'no Location'} not followed: ${refused}`) });
        }
      }
      return webResponse(res, res.url, c.redirected, failure, p.method === 'HEAD', signal);
    },
    (err: unknown) => {
      throw signal !== null && signal.aborted ? signal.reason : new TypeError('fetch failed', { cause: err });
    },
  );
}

/**
 * Why a redirect that `follow` mode handed back was not followed, or null when that is the
 * answer (no Location, or the caller's `checkRedirect` stopped it). The standard makes every
 * other unfollowed redirect a network error: a Location that does not parse or is not http(s),
 * a 307/308 whose streamed body cannot be sent again, a kernel that follows none.
 */
function unfollowed(client: Client, res: Response, o: CallOptions): string | null {
  const location = res.headers.get('location');
  if (location === undefined || (o as { checkRedirect?: unknown }).checkRedirect !== undefined) return null;
  if (!client.hasPlugin('redirects')) return "the client's kernel has no redirects plugin";
  return 'its Location is not an http(s) URL, or the request body was a stream that cannot be sent again';
}

/** Reads `input` and `init` into the call; throws what the standard throws for a bad one. */
function prepare(client: Client, input: FetchInput, init: FetchInit): Prepared {
  if (typeof init !== 'object' || init === null) throw new TypeError('fetch(input, init): init must be an object');
  for (const key in init) {
    if (!INIT_KEYS.has(key) && Object.prototype.hasOwnProperty.call(init, key)) throw unknownInit(key);
  }
  const extra = init.switchyard;
  const options: CallOptions = {};
  if (extra !== undefined) {
    if (typeof extra !== 'object' || extra === null) throw new ArgumentError('fetch(): init.switchyard must be an object of call options');
    for (const key in extra) {
      if (Object.prototype.hasOwnProperty.call(COVERED, key)) throw new ArgumentError(`fetch(): init.switchyard.${key} is fetch's own to set: use ${COVERED[key]}`);
    }
    Object.assign(options, extra);
  }
  if (init.window !== undefined && init.window !== null) throw new TypeError('RequestInit: window can only be null');
  // Subresource integrity needs the whole body before the response: refused rather than not checked.
  if (typeof init.integrity === 'string' && init.integrity !== '')
    throw new ArgumentError('fetch(): init.integrity is not supported (switchyard streams the body; check a digest of the bytes you read)');
  if (input instanceof globalThis.Request) return fromRequest(client, input, init, options);
  const url = parseUrl(input);
  const method = methodOf(init.method);
  const redirect = redirectOf(init.redirect);
  const signal = signalOf(init.signal);
  const headers = init.headers === undefined || init.headers === null ? null : fromWebHeaders(new globalThis.Headers(init.headers));
  const body = init.body;
  const p: Prepared = { method, url, options, redirect, signal };
  setCommon(client, p, headers, init.cache);
  if (body === undefined || body === null) return p;
  if (method === 'GET' || method === 'HEAD') throw new TypeError('Request with GET/HEAD method cannot have body.');
  const h = p.options.headers as Headers;
  if (typeof body === 'string') return withBody(p, h, body, 'text/plain;charset=UTF-8');
  if (body instanceof ArrayBuffer) return withBody(p, h, new Uint8Array(body.slice(0)), null);
  if (ArrayBuffer.isView(body)) return withBody(p, h, new Uint8Array(body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength)), null);
  if (body instanceof URLSearchParams) return withBody(p, h, body.toString(), 'application/x-www-form-urlencoded;charset=UTF-8');
  if (body instanceof Blob) return withBody(p, h, new IterableBody(body.stream(), body.size), body.type === '' ? null : body.type);
  if (body instanceof globalThis.FormData) {
    // The web's Request encodes the form (multipart, with its boundary in the Content-Type): its stream is sent as it is made.
    const encoded = new globalThis.Request('http://localhost/', { method: 'POST', body });
    return withBody(p, h, new IterableBody(encoded.body!), encoded.headers.get('content-type'));
  }
  if (body instanceof ReadableStream || (typeof body === 'object' && Symbol.asyncIterator in body)) {
    if (init.duplex !== 'half') throw new TypeError('RequestInit: duplex option is required when sending a body.');
    if (body instanceof ReadableStream && body.locked) throw new TypeError('Response body object should not be disturbed or locked');
    return withBody(p, h, new IterableBody(body as AsyncIterable<Uint8Array>), null);
  }
  // The standard's conversion of any other value: its string.
  return withBody(p, h, String(body), 'text/plain;charset=UTF-8');
}

/** A global `Request` as input: `init` makes a new one from it first, as the standard's `fetch` does. */
function fromRequest(client: Client, input: globalThis.Request, init: FetchInit, options: CallOptions): Prepared {
  let request = input;
  if (REQUEST_KEYS.some((k) => (init as Record<string, unknown>)[k] !== undefined)) {
    const { switchyard: _, ...web } = init;
    request = new globalThis.Request(input, web as globalThis.RequestInit);
  }
  if (request.bodyUsed || (request.body !== null && request.body.locked)) throw new TypeError('Cannot construct a Request with a Request object that has already been used.');
  const req = fromWebRequest(request);
  const redirect = request.redirect as Prepared['redirect'];
  const p: Prepared = { method: req.method, url: req.url, options, redirect, signal: request.signal };
  setCommon(client, p, req.headers, request.cache);
  if (req.body !== null) p.options.body = req.body as RequestBody;
  return p;
}

/** The fetch cache modes the cache plugin's `cache` option takes as they are (`'default'` is its default). */
const CACHE_MODES: ReadonlySet<unknown> = new Set(['no-store', 'reload', 'no-cache', 'force-cache', 'only-if-cached']);

/** Sets the call options every fetch has: its headers, signal, redirect handling and cache mode. */
function setCommon(client: Client, p: Prepared, headers: Headers | null, cache: unknown): void {
  const o = p.options;
  // The standard's defaults for what the caller did not set.
  const h = headers ?? new Headers();
  if (!h.has('accept')) h.push('accept', '*/*');
  if (!h.has('accept-language')) h.push('accept-language', '*');
  o.headers = h;
  if (p.signal !== null) o.signal = p.signal;
  // A kernel without the redirects plugin follows none: nothing to turn off or bound.
  if (client.hasPlugin('redirects')) {
    const r = o as { redirect?: boolean; redirectLimit?: number };
    if (p.redirect !== 'follow') r.redirect = false;
    // The standard's limit, 20 redirects, unless the caller chose another.
    else if (r.redirectLimit === undefined) r.redirectLimit = 20;
  }
  // Without the cache plugin there is no HTTP cache, and the mode means nothing (as in Node's fetch).
  const c = o as { cache?: unknown };
  if (CACHE_MODES.has(cache) && c.cache === undefined && client.hasPlugin('cache')) c.cache = cache;
}

/** Sets the body (and its Content-Type unless the headers have one). */
function withBody(p: Prepared, h: Headers, body: RequestBody, type: string | null): Prepared {
  if (type !== null && !h.has('content-type')) h.push('content-type', type);
  p.options.body = body;
  return p;
}

const checkedUrls = new Map<string, string>();

/**
 * The URL of a fetch: absolute, http(s), no credentials. A string already checked is answered
 * from a bounded cache (calls repeat a few URLs, and `new URL` is a native round trip); a `URL`
 * object is read each time, as it may have changed.
 */
function parseUrl(input: unknown): string {
  if (typeof input === 'string') {
    let href = checkedUrls.get(input);
    if (href === undefined) {
      href = checkUrl(input);
      if (checkedUrls.size >= 256) checkedUrls.clear();
      checkedUrls.set(input, href);
    }
    return href;
  }
  return checkUrl(input);
}

function checkUrl(input: unknown): string {
  let u: URL;
  try {
    u = input instanceof URL ? input : new URL(String(input));
  } catch (err) {
    throw new TypeError(`Failed to parse URL from ${String(input)}`, { cause: err });
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    throw new TypeError('fetch failed', { cause: new ArgumentError(`unsupported URL scheme ${u.protocol} (switchyard's fetch speaks http: and https:)`) });
  }
  if (u.username !== '' || u.password !== '') throw new TypeError(`Request cannot be constructed from a URL that includes credentials: ${u.href}`);
  const href = u.href;
  const hash = href.indexOf('#');
  return hash < 0 ? href : href.slice(0, hash);
}

/** The standard's method rules: a token, the common six upper-cased, CONNECT/TRACE/TRACK refused. */
function methodOf(m: unknown): string {
  if (m === undefined) return 'GET';
  const s = String(m);
  if (!isToken(s)) throw new TypeError(`'${s}' is not a valid HTTP method.`);
  const upper = s.toUpperCase();
  if (FORBIDDEN.has(upper)) throw new TypeError(`'${s}' HTTP method is unsupported.`);
  return NORMALIZED.has(upper) ? upper : s;
}

function redirectOf(r: unknown): Prepared['redirect'] {
  if (r === undefined || r === 'follow' || r === 'manual' || r === 'error') return r ?? 'follow';
  throw new TypeError(`RequestInit: redirect must be 'follow', 'manual' or 'error', got ${String(r)}`);
}

function signalOf(s: unknown): AbortSignal | null {
  if (s === undefined || s === null) return null;
  if (!(s instanceof AbortSignal)) throw new TypeError('RequestInit: signal must be an AbortSignal');
  return s;
}

/** The error for an `init` member fetch does not know, with the nearest it does. */
function unknownInit(key: string): ArgumentError {
  return unknownOptionError('fetch(input, init)', key, INIT_KEYS, "switchyard's call options go in init.switchyard");
}
