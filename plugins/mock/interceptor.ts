/**
 * Interceptors: what a mocked request must look like (origin, method, path, query, headers,
 * body), what answers it (a reply, a reply function, an error), and how often. Also the
 * near-miss report of a request that matches none.
 */
import { Buffer } from 'node:buffer';
import { isDeepStrictEqual } from 'node:util';
import { ArgumentError, checkOptionKeys, ConnectError, DNSError, Headers, type HeadersInit } from '../../kernel/index.js';

/** How a path is matched: a string (exactly, with the query when it holds `?`), a RegExp or a function, both given the path with its query. */
export type MockPathMatcher = string | RegExp | ((path: string) => boolean);

/** How one header value is matched (several values of one name are joined with `, `). */
export type MockValueMatcher = string | RegExp | ((value: string) => boolean);

/**
 * How the request headers are matched: by name (case-insensitive), each listed header must
 * match; `null` means the header must be absent. Or a function of all the headers.
 */
export type MockHeadersMatcher = Readonly<Record<string, MockValueMatcher | null>> | ((headers: Headers) => boolean);

/**
 * How the request body is matched: a string (the whole body as UTF-8 text), bytes (exactly), a
 * RegExp or function of the text, or a plain object or array (the body parsed as JSON, deeply equal).
 */
export type MockBodyMatcher = string | Uint8Array | RegExp | ((body: string) => boolean) | Readonly<Record<string, unknown>> | readonly unknown[];

/** Query parameters a request must carry, all of them and no others (values compared as strings, order ignored). */
export type MockQuery = Readonly<Record<string, string | number | boolean | readonly (string | number | boolean)[]>>;

/** What {@link MockAgent.intercept} matches. */
export interface MockInterceptOptions {
  /** Scheme, host and port: `https://api.example.com`, `http://127.0.0.1:8080`. */
  origin: string | URL;
  /** Method, default `GET`. */
  method?: string;
  /** The path (see {@link MockPathMatcher}). A string without `?` matches a request without a query unless `query` is given. */
  path: MockPathMatcher;
  /** Query parameters (only with a path that holds no `?`). */
  query?: MockQuery;
  /** Request headers. */
  headers?: MockHeadersMatcher;
  /** Request body. */
  body?: MockBodyMatcher;
}

/** A request as interceptors, reply functions and error functions see it. */
export interface MockRequest {
  /** Method. */
  readonly method: string;
  /** Absolute URL. */
  readonly url: string;
  /** `scheme://host[:port]`. */
  readonly origin: string;
  /** Path with its query. */
  readonly path: string;
  /** Request headers as sent (cookies and other plugins' headers included). */
  readonly headers: Headers;
  /** The request body (empty when none). */
  readonly body: Uint8Array;
  /** The body as UTF-8 text. */
  text(): string;
  /** The body parsed as JSON. */
  json(): unknown;
}

/** A reply body: text, bytes, or a value sent as JSON (with `Content-Type: application/json` unless given). */
export type MockReplyBody = string | Uint8Array | Readonly<Record<string, unknown>> | readonly unknown[] | null;

/** Options of a reply. */
export interface MockReplyOptions {
  /** Response headers. `Content-Length` is added when absent. */
  headers?: HeadersInit;
  /** Trailers that end the body (`response.trailers` once it is read). */
  trailers?: HeadersInit;
}

/** What a reply function returns. */
export interface MockReplyData extends MockReplyOptions {
  /** Status code. */
  status: number;
  /** Body. */
  body?: MockReplyBody;
}

/** A reply computed per request. */
export type MockReplyFunction = (request: MockRequest) => MockReplyData | Promise<MockReplyData>;

/**
 * Codes `replyWithError` turns into the kernel's own error, as a failed connection would raise:
 * `ConnectError` (with a cause carrying the code, so the retries plugin treats
 * `ECONNREFUSED` and `ECONNRESET` as retryable) or, for `ENOTFOUND` and `EAI_AGAIN`, `DNSError`.
 */
export type MockErrorCode = 'ECONNREFUSED' | 'ECONNRESET' | 'EHOSTUNREACH' | 'ENETUNREACH' | 'ETIMEDOUT' | 'ENOTFOUND' | 'EAI_AGAIN';

const ERROR_CODES: ReadonlySet<string> = new Set<MockErrorCode>(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN']);

/** What an interceptor answers with. */
export type MockAnswer =
  | { readonly kind: 'reply'; readonly data: MockReplyData }
  | { readonly kind: 'function'; readonly fn: MockReplyFunction }
  | { readonly kind: 'error'; readonly error: Error | MockErrorCode | ((request: MockRequest) => Error) };

/** The part of an interceptor a test configures after the reply: delay and how often it answers. */
export class MockScope {
  /** @internal */
  constructor(private readonly interceptor: Interceptor) {}

  /** Waits `ms` before the response head (timeouts and cancellation apply meanwhile). */
  delay(ms: number): this {
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) throw new ArgumentError(`delay(ms): ms must be a number of milliseconds >= 0, got ${String(ms)}`);
    this.interceptor.delayMs = ms;
    return this;
  }

  /** Answers `n` requests (default 1), then no more. */
  times(n: number): this {
    if (!Number.isInteger(n) || n < 1) throw new ArgumentError(`times(n): n must be an integer >= 1, got ${String(n)}`);
    this.interceptor.times = n;
    this.interceptor.persist = false;
    return this;
  }

  /** Answers every matching request, without limit. */
  persist(): this {
    this.interceptor.persist = true;
    return this;
  }

  /** How many requests it answered so far. */
  get calls(): number {
    return this.interceptor.calls;
  }
}

/** An interceptor waiting for its answer: `reply`, or `replyWithError`. */
export class MockInterceptor {
  /** @internal */
  constructor(
    private readonly interceptor: Interceptor,
    private readonly activate: (i: Interceptor) => void,
  ) {}

  /** Answers with `status`, `body` and `options.headers`. */
  reply(status: number, body?: MockReplyBody, options?: MockReplyOptions): MockScope;
  /** Answers with what `fn` returns for each request. */
  reply(fn: MockReplyFunction): MockScope;
  reply(a: number | MockReplyFunction, body?: MockReplyBody, options: MockReplyOptions = {}): MockScope {
    if (typeof a === 'function') return this.answer({ kind: 'function', fn: a });
    checkReply({ status: a, body, ...options }, 'reply(status, body, options)');
    return this.answer({ kind: 'reply', data: { status: a, body, headers: options.headers, trailers: options.trailers } });
  }

  /**
   * Fails matching requests with `error`: an `Error` (the kernel's own, `new ConnectError(…)`,
   * as it is), a {@link MockErrorCode} (`'ECONNREFUSED'`: the kernel's `ConnectError` for the
   * origin, as a refused connection raises), or a function making the error per request.
   */
  replyWithError(error: Error | MockErrorCode | ((request: MockRequest) => Error)): MockScope {
    if (!(error instanceof Error) && typeof error !== 'function' && !(typeof error === 'string' && ERROR_CODES.has(error))) {
      throw new ArgumentError(
        `replyWithError takes an Error, a function making one, or one of ${[...ERROR_CODES].join(', ')}; got ${typeof error === 'string' ? JSON.stringify(error) : typeof error}`,
      );
    }
    return this.answer({ kind: 'error', error });
  }

  private answer(answer: MockAnswer): MockScope {
    if (this.interceptor.answer !== null) throw new ArgumentError('this interceptor already has its reply; call intercept() again for another');
    this.interceptor.answer = answer;
    this.activate(this.interceptor);
    return new MockScope(this.interceptor);
  }
}

/** Checks a reply's status, body and options. */
export function checkReply(data: MockReplyData, where: string): void {
  if (typeof data !== 'object' || data === null) throw new ArgumentError(`${where}: a reply is { status, body, headers, trailers }, got ${data === null ? 'null' : typeof data}`);
  checkOptionKeys(data, REPLY_KEYS, where);
  const s = data.status;
  if (!Number.isInteger(s) || s < 100 || s > 999) throw new ArgumentError(`${where}: status must be an integer from 100 to 999, got ${String(s)}`);
  const b = data.body;
  if (b !== undefined && b !== null && typeof b !== 'string' && !(b instanceof Uint8Array) && typeof b !== 'object') {
    throw new ArgumentError(`${where}: body must be a string, bytes, a JSON value (object or array) or null, got ${typeof b}`);
  }
}

/** Information about one interceptor, as {@link MockAgent.pending} lists it. */
export interface MockInterceptorInfo {
  /** `GET https://api.example.com/users`, with how often it answered. */
  readonly description: string;
  /** Its origin. */
  readonly origin: string;
  /** Its method. */
  readonly method: string;
  /** Requests it answered. */
  readonly calls: number;
  /** Requests it may still answer (Infinity when persisted). */
  readonly remaining: number;
  /** Whether it answers without limit. */
  readonly persist: boolean;
}

/** @internal One declared interceptor. */
export class Interceptor {
  readonly origin: string;
  readonly method: string;
  readonly path: MockPathMatcher;
  readonly query: readonly string[] | null;
  readonly headers: MockHeadersMatcher | null;
  readonly body: MockBodyMatcher | null;
  answer: MockAnswer | null = null;
  delayMs = 0;
  times = 1;
  persist = false;
  calls = 0;

  constructor(o: MockInterceptOptions) {
    if (typeof o !== 'object' || o === null) throw new ArgumentError('intercept(options) takes { origin, method, path, query, headers, body }');
    checkOptionKeys(o, INTERCEPT_KEYS, 'intercept()');
    this.origin = originOf(o.origin, 'intercept(): origin');
    const m = o.method ?? 'GET';
    if (typeof m !== 'string' || m === '') throw new ArgumentError('intercept(): method must be a non-empty string');
    this.method = m.toUpperCase();
    const p = o.path;
    if (typeof p !== 'string' && !(p instanceof RegExp) && typeof p !== 'function') throw new ArgumentError('intercept(): path must be a string, a RegExp or a function of the path');
    if (typeof p === 'string' && !p.startsWith('/')) throw new ArgumentError(`intercept(): path must start with "/", got ${JSON.stringify(p)}`);
    if (o.query !== undefined && (typeof p !== 'string' || p.includes('?')))
      throw new ArgumentError('intercept(): query goes with a string path without "?" (put the query in the path, or match it with a RegExp or function)');
    this.path = p;
    this.query = o.query === undefined ? (typeof p === 'string' ? queryKey(p.includes('?') ? p.slice(p.indexOf('?') + 1) : '') : null) : queryFromObject(o.query);
    if (o.headers !== undefined && (o.headers === null || (typeof o.headers !== 'object' && typeof o.headers !== 'function'))) {
      throw new ArgumentError('intercept(): headers must be an object of name to matcher, or a function of the headers');
    }
    this.headers = o.headers ?? null;
    this.body = o.body ?? null;
  }

  /** Requests it may still answer. */
  get remaining(): number {
    return this.persist ? Infinity : Math.max(0, this.times - this.calls);
  }

  /** Pending: never used, or (not persisted) not used up. */
  get pending(): boolean {
    return this.persist ? this.calls === 0 : this.calls < this.times;
  }

  /** `GET https://api.example.com/users`. */
  describe(): string {
    const p =
      typeof this.path === 'string'
        ? this.query !== null && this.query.length > 0 && !this.path.includes('?')
          ? `${this.path}?${this.query.join('&')}`
          : this.path
        : this.path instanceof RegExp
          ? String(this.path)
          : '(path function)';
    return `${this.method} ${this.origin}${typeof this.path === 'string' ? '' : ' '}${p}`;
  }

  /** The first thing about `req` it does not match ('' when it matches), and how close it came. */
  mismatch(req: MockRequest): { why: string; score: number } {
    if (req.origin !== this.origin) return { why: `origin ${this.origin} is not ${req.origin}`, score: 0 };
    let score = 1;
    const pathWhy = this.pathMismatch(req.path);
    if (pathWhy === '') score += 4;
    const methodOk = req.method === this.method;
    if (methodOk) score += 2;
    const headersWhy = this.headersMismatch(req.headers);
    const bodyWhy = this.bodyMismatch(req);
    if (headersWhy === '') score += 1;
    if (bodyWhy === '') score += 1;
    const why = pathWhy !== '' ? pathWhy : !methodOk ? `method ${this.method} is not ${req.method}` : headersWhy !== '' ? headersWhy : bodyWhy;
    return { why, score };
  }

  private pathMismatch(target: string): string {
    const p = this.path;
    if (p instanceof RegExp) {
      p.lastIndex = 0;
      return p.test(target) ? '' : `path ${target} does not match ${String(p)}`;
    }
    if (typeof p === 'function') return p(target) ? '' : `its path function refused ${target}`;
    const q = target.indexOf('?');
    const pathname = q < 0 ? target : target.slice(0, q);
    const want = p.includes('?') ? p.slice(0, p.indexOf('?')) : p;
    if (pathname !== want) return `path ${want} is not ${pathname}`;
    const got = queryKey(q < 0 ? '' : target.slice(q + 1));
    if (!isDeepStrictEqual(got, this.query)) {
      return got.length === 0 ? `it wants the query ?${this.query!.join('&')}` : `query ${this.query!.length === 0 ? '(none)' : `?${this.query!.join('&')}`} is not ?${got.join('&')}`;
    }
    return '';
  }

  private headersMismatch(headers: Headers): string {
    const h = this.headers;
    if (h === null) return '';
    if (typeof h === 'function') return h(headers) ? '' : 'its headers function refused the headers';
    for (const name of Object.keys(h)) {
      const m = h[name]!;
      const all = headers.getAll(name);
      if (m === null) {
        if (all.length > 0) return `header ${name} must be absent`;
        continue;
      }
      if (all.length === 0) return `header ${name} is missing`;
      if (!matchValue(m, all.join(', '))) return `header ${name}: ${JSON.stringify(all.join(', '))} does not match ${describeMatcher(m)}`;
    }
    return '';
  }

  private bodyMismatch(req: MockRequest): string {
    const b = this.body;
    if (b === null) return '';
    if (b instanceof Uint8Array) return Buffer.from(b).equals(req.body) ? '' : 'the body bytes differ';
    const text = req.text();
    if (typeof b === 'string') return text === b ? '' : `body ${JSON.stringify(clip(text))} is not ${JSON.stringify(clip(b))}`;
    if (b instanceof RegExp) {
      b.lastIndex = 0;
      return b.test(text) ? '' : `body ${JSON.stringify(clip(text))} does not match ${String(b)}`;
    }
    if (typeof b === 'function') return b(text) ? '' : 'its body function refused the body';
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return `the body is not JSON: ${JSON.stringify(clip(text))}`;
    }
    return isDeepStrictEqual(parsed, b) ? '' : `JSON body ${clip(text)} is not ${clip(JSON.stringify(b))}`;
  }
}

const INTERCEPT_KEYS: ReadonlySet<string> = new Set(['origin', 'method', 'path', 'query', 'headers', 'body']);
const REPLY_KEYS: ReadonlySet<string> = new Set(['status', 'body', 'headers', 'trailers']);

function matchValue(m: MockValueMatcher, v: string): boolean {
  if (typeof m === 'string') return m === v;
  if (m instanceof RegExp) {
    m.lastIndex = 0;
    return m.test(v);
  }
  return m(v);
}

function describeMatcher(m: MockValueMatcher): string {
  return typeof m === 'string' ? JSON.stringify(m) : m instanceof RegExp ? String(m) : 'its function';
}

function clip(s: string): string {
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

/** A query as sorted `name=value` pairs (decoded), for comparing regardless of order. */
export function queryKey(search: string): string[] {
  const out: string[] = [];
  for (const [k, v] of new URLSearchParams(search)) out.push(`${k}=${v}`);
  return out.sort();
}

function queryFromObject(q: MockQuery): string[] {
  if (typeof q !== 'object' || q === null) throw new ArgumentError('intercept(): query must be an object of parameters');
  const out: string[] = [];
  for (const [k, v] of Object.entries(q)) for (const x of Array.isArray(v) ? v : [v]) out.push(`${k}=${String(x)}`);
  return out.sort();
}

/** `scheme://host[:port]` of `value` (an origin or URL with nothing past the host), or ArgumentError naming `where`. */
export function originOf(value: unknown, where: string): string {
  let u: URL;
  try {
    u = value instanceof URL ? value : new URL(String(value));
  } catch {
    throw new ArgumentError(`${where} must be an origin such as https://api.example.com, got ${JSON.stringify(String(value))}`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new ArgumentError(`${where} must be an http: or https: origin, got ${JSON.stringify(String(value))}`);
  if ((u.pathname !== '/' && u.pathname !== '') || u.search !== '' || u.hash !== '') {
    throw new ArgumentError(`${where} must be an origin without a path or query (put the path in path:), got ${JSON.stringify(String(value))}`);
  }
  return u.origin;
}

/** The kernel error a {@link MockErrorCode} stands for, for `origin`. */
export function errorFor(code: MockErrorCode, origin: string): Error {
  const u = new URL(origin);
  const port = u.port !== '' ? u.port : u.protocol === 'https:' ? '443' : '80';
  const cause = Object.assign(new Error(`${code} (mocked)`), { code });
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return new DNSError(u.hostname, cause);
  return new ConnectError(`${u.hostname}:${port}`, cause);
}
