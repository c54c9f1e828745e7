/**
 * The cache plugin: an HTTP cache for the client (RFC 9111, with RFC 5861's
 * stale-while-revalidate and stale-if-error).
 *
 * - `client.onRequest` looks the request up: a usable stored response answers the call
 *   without a connection; a stale one makes the request conditional (`If-None-Match`,
 *   `If-Modified-Since`), and concurrent requests for the same stale entry wait for that one
 *   revalidation instead of sending their own.
 * - `client.onResponseHead` stores a storable response, its body teed into the store as the
 *   caller reads it (published only when read to the end); turns a 304 to its conditional
 *   request into the updated stored response; serves a stale entry for a 5xx where
 *   stale-if-error allows; invalidates after unsafe methods.
 * - `client.onRetry` (before the retries plugin): a network error during a revalidation that
 *   stale-if-error covers is answered from the store (one retry, served without the network).
 *
 * Requests that carry their own validators or a `Range` pass through untouched.
 */
import { Buffer } from 'node:buffer';
import {
  ArgumentError,
  ChunkBody,
  Client,
  definePlugin,
  getCallOptions,
  Headers,
  Response,
  Stage,
  checkPluginOptions,
  type AbstractBody,
  type ClientEvent,
  type Kernel,
  type OptionCheck,
  type Request,
  type RequestContext,
  type RetryDecision,
} from '../../kernel/index.js';
import { CacheHitEvent, CacheMissEvent, CacheRevalidatedEvent } from './events.js';
import {
  cacheControl,
  cacheKey,
  conditionalFields,
  evaluate,
  headHeaders,
  invalidatedUrls,
  isErrorStatus,
  isStorable,
  notModifiedSelects,
  staleIfError,
  storedFields,
  updateHead,
  varyMatches,
  variantId,
  varySelection,
  type CacheMode,
} from './policy.js';
import { MemoryStore, type CacheEntry, type CacheStore, type CacheWriter, type StoredHead } from './store.js';

export { CacheHitEvent, CacheMissEvent, CacheRevalidatedEvent } from './events.js';
export { MemoryStore, type CacheEntry, type CacheStore, type CacheWriter, type MemoryStoreOptions, type StoredHead } from './store.js';
export { DiskStore, type DiskStoreOptions } from './disk-store.js';
export type { CacheMode } from './policy.js';

/**
 * A call's use of the cache, the `fetch` vocabulary: `false` or `'no-store'` bypass it (no
 * lookup, nothing stored); `'reload'` skips the lookup but stores the answer; `'no-cache'`
 * revalidates any stored response; `'force-cache'` uses a stored response however stale;
 * `'only-if-cached'` likewise, and answers 504 when nothing is stored. Absent (or
 * `'default'`): RFC 9111.
 */
export type CacheCallMode = false | 'default' | 'no-store' | 'reload' | 'no-cache' | 'force-cache' | 'only-if-cached';

/** How a response was served, on `response.cacheStatus` when the cache plugin saw the call. */
export type CacheStatus =
  /** From the store, fresh (or allowed stale by the call's `max-stale` or mode). */
  | 'hit'
  /** From the store, stale: stale-while-revalidate (revalidating in the background) or stale-if-error. */
  | 'stale'
  /** The stored response, after the origin confirmed it with 304. */
  | 'revalidated'
  /** From the origin (and stored if storable). */
  | 'miss'
  /** The cache did not take part (the call's `cache: false`/`'no-store'`, a method not cached, a conditional or range request). */
  | 'bypass';

/** The plugin's per-call option. */
export interface CacheCallOptions {
  /** See {@link CacheCallMode}. */
  cache?: CacheCallMode;
}

/** Options of the `cache` plugin (at `register`). */
export interface CacheOptions {
  /** Where responses are kept. Default: a new {@link MemoryStore} with its default bounds. */
  store?: CacheStore;
  /**
   * `'private'` (default): one user's cache, as a browser's; `'shared'`: a cache serving
   * several users (honours `s-maxage`, `proxy-revalidate`, refuses `private` and, without
   * `public`/`s-maxage`/`must-revalidate`, responses to requests with `Authorization`).
   */
  mode?: CacheMode;
  /** The default {@link CacheCallMode} of calls. Default `'default'`. */
  cache?: CacheCallMode;
}

const NAME = 'cache';
const MODES = new Set<unknown>([false, 'default', 'no-store', 'reload', 'no-cache', 'force-cache', 'only-if-cached']);
const checkMode: OptionCheck = (v) => (MODES.has(v) ? null : "false, 'default', 'no-store', 'reload', 'no-cache', 'force-cache' or 'only-if-cached'");
const CALL_OPTIONS: Readonly<Record<keyof CacheCallOptions, OptionCheck>> = { cache: checkMode };
const REGISTER_OPTIONS: Readonly<Record<keyof CacheOptions, OptionCheck>> = {
  cache: checkMode,
  mode: (v) => (v === 'private' || v === 'shared' ? null : "'private' or 'shared'"),
  store: (v) =>
    typeof v === 'object' && v !== null && ['get', 'open', 'update', 'delete'].every((m) => typeof (v as Record<string, unknown>)[m] === 'function')
      ? null
      : 'a CacheStore (get, open, update, delete)',
};
/** Request fields that make the caller's request conditional or partial: passed through untouched. */
const CALLER_CONDITIONALS = ['If-None-Match', 'If-Modified-Since', 'If-Match', 'If-Unmodified-Since', 'If-Range', 'Range'];
/** Just before the proxy's tap: sees the headers of auth, cookies and defaults, which Vary may name. */
const REQUEST_STAGE = Stage.LAST - 2;
/** After decompression (the stored body is the decoded one) and before redirects (a 301 is stored). */
const HEAD_STAGE = Stage.REDIRECT - 1;

/** One hop's dealings with the cache. */
interface Hop {
  readonly key: string;
  readonly mode: CacheCallMode;
  readonly requestTime: number;
  /** The stored variant this hop revalidates, or null. */
  entry: CacheEntry | null;
  /** Set when this hop leads a revalidation others wait on. */
  release: (() => void) | null;
  /** The next attempt answers from `entry` (stale-if-error after a network error). */
  serveStale: boolean;
  /** The validator fields this plugin added to the request (removed before a retry looks again). */
  added: string[];
}

/** The `cache` plugin. */
export const cache = definePlugin({
  name: NAME,
  callOptions: CALL_OPTIONS,
  register(kernel, options: CacheOptions) {
    checkPluginOptions(options, REGISTER_OPTIONS, 'register(cache, …)');
    const store = options.store ?? new MemoryStore();
    const shared: CacheMode = options.mode ?? 'private';
    const defaultMode = options.cache ?? 'default';
    const hops = new WeakMap<Request, Hop>();
    /** Revalidations in flight, by key and variant: the waiters resume when it settles. */
    const inflight = new Map<string, Promise<void>>();
    let background: Client | null = null;
    kernel.onClose(() => {
      background?.close();
    });

    const trace = (ctx: RequestContext, make: () => ClientEvent): void => {
      const t = getCallOptions(ctx).trace;
      if (typeof t === 'function') t(make());
    };

    const pick = async (key: string, req: Request): Promise<CacheEntry | null> => {
      for (const e of await store.get(key)) if (varyMatches(e.head.vary, req.headers)) return e;
      return null;
    };

    const lead = (hop: Hop, id: string): void => {
      let done!: () => void;
      const p = new Promise<void>((resolve) => (done = resolve));
      inflight.set(id, p);
      hop.release = () => {
        hop.release = null;
        if (inflight.get(id) === p) inflight.delete(id);
        done();
      };
    };

    const revalidateInBackground = (req: Request, ctx: RequestContext, kernelRef: Kernel): void => {
      background ??= new Client({ kernel: kernelRef });
      // The call's own options (proxy, timeouts, …), without what belongs to the caller's call alone.
      const { headers: _h, body: _b, json: _j, query: _q, context: _c, signal: _s, responseStream: _r, basicauth: _a, client: _cl, trace: _t, verbose: _v, ...rest } = getCallOptions(ctx);
      background.request(req.method, req.url, { ...rest, headers: req.headers.clone(), cache: 'no-cache', statusException: false }).then(
        () => undefined,
        () => undefined,
      );
    };

    kernel.hooks.client.onRequest.tapPromise({ name: NAME, stage: REQUEST_STAGE }, async (req, ctx) => {
      const prior = hops.get(req);
      if (prior !== undefined && prior.serveStale && prior.entry !== null) {
        prior.serveStale = false;
        const stale = prior.entry;
        trace(ctx, () => new CacheHitEvent(req.url, evaluate(stale.head, req.headers, Date.now(), shared).age, 'stale'));
        return hit(stale, req, Date.now(), 'stale');
      }
      // A retry of a revalidation: its validators are ours, not the caller's.
      if (prior !== undefined) for (const f of prior.added) req.headers.delete(f);
      const mode = getCallOptions(ctx).cache ?? defaultMode;
      const method = req.method;
      if (mode === false || mode === 'no-store' || (method !== 'GET' && method !== 'HEAD')) return;
      for (const f of CALLER_CONDITIONALS) if (req.headers.has(f)) return;
      const key = cacheKey(method, req.url);
      const now = Date.now();
      const hop: Hop = { key, mode, requestTime: now, entry: null, release: null, serveStale: false, added: [] };
      hops.set(req, hop);
      if (mode === 'reload') {
        trace(ctx, () => new CacheMissEvent(req.url, 'reload'));
        return;
      }
      const onlyIfCached = mode === 'only-if-cached' || cacheControl(req.headers).has('only-if-cached');
      let entry = await pick(key, req);
      if (entry === null && method === 'HEAD') {
        // A stored GET response answers a HEAD (RFC 9110 §9.3.2: the same fields), when usable as it is.
        const get = await pick(cacheKey('GET', req.url), req);
        if (get !== null && (mode === 'force-cache' || mode === 'only-if-cached' || (mode !== 'no-cache' && evaluate(get.head, req.headers, now, shared).use === 'fresh'))) {
          trace(ctx, () => new CacheHitEvent(req.url, evaluate(get.head, req.headers, now, shared).age, 'hit'));
          return hit(get, req, now, 'hit');
        }
      }
      for (;;) {
        if (entry === null) {
          if (onlyIfCached) return gatewayTimeout(req);
          trace(ctx, () => new CacheMissEvent(req.url, 'absent'));
          return;
        }
        const ev = evaluate(entry.head, req.headers, now, shared);
        if (mode === 'force-cache' || mode === 'only-if-cached' || (mode !== 'no-cache' && ev.use === 'fresh')) {
          trace(ctx, () => new CacheHitEvent(req.url, ev.age, 'hit'));
          return hit(entry, req, now, 'hit');
        }
        const id = `${key}\u0000${entry.variant}`;
        if (mode !== 'no-cache' && ev.use === 'stale-while-revalidate') {
          if (!inflight.has(id)) revalidateInBackground(req, ctx, kernel);
          trace(ctx, () => new CacheHitEvent(req.url, ev.age, 'stale'));
          return hit(entry, req, now, 'stale');
        }
        if (onlyIfCached) return gatewayTimeout(req);
        const running = inflight.get(id);
        if (running === undefined) break;
        // Another call revalidates this entry: wait for it (or for this call's end), then look again.
        await settledOrCanceled(running, ctx);
        entry = await pick(key, req);
        if (entry !== null && evaluate(entry.head, req.headers, Date.now(), shared).use === 'fresh' && mode !== 'no-cache') {
          const age = evaluate(entry.head, req.headers, Date.now(), shared).age;
          trace(ctx, () => new CacheHitEvent(req.url, age, 'hit'));
          return hit(entry, req, Date.now(), 'hit');
        }
        if (entry !== null && inflight.has(`${key}\u0000${entry.variant}`)) continue;
        if (entry !== null) break;
      }
      trace(ctx, () => new CacheMissEvent(req.url, mode === 'no-cache' ? 'no-cache' : 'stale'));
      hop.entry = entry;
      lead(hop, `${key}\u0000${entry.variant}`);
      for (const [n, v] of conditionalFields(headHeaders(entry.head))) {
        req.headers.set(n, v);
        hop.added.push(n);
      }
      return;
    });

    kernel.hooks.client.onResponseHead.tapPromise({ name: NAME, stage: HEAD_STAGE }, async (res, ctx) => {
      if (res.cacheStatus !== undefined) return; // answered by this plugin
      const req = res.request;
      if (req === null) return;
      const hop = hops.get(req);
      if (hop === undefined) {
        res.cacheStatus = 'bypass';
        const urls = invalidatedUrls(req.method, req.url, res.status, res.headers);
        for (const u of urls) {
          await store.delete(cacheKey('GET', u));
          await store.delete(cacheKey('HEAD', u));
        }
        return;
      }
      const now = Date.now();
      const entry = hop.entry;
      if (entry !== null && res.status === 304) {
        if (notModifiedSelects(headHeaders(entry.head), res.headers)) {
          const head = updateHead(entry.head, res.headers, hop.requestTime, now);
          await store.update(hop.key, entry.variant, head);
          hop.release?.();
          discard(res.body);
          become(res, { ...entry, head }, now, 'revalidated');
          trace(ctx, () => new CacheRevalidatedEvent(req.url));
          return;
        }
        // A 304 for another representation: the stored one is not it any more.
        await store.delete(hop.key);
        hop.release?.();
        res.cacheStatus = 'miss';
        return;
      }
      if (entry !== null && isErrorStatus(res.status) && staleIfError(entry.head, req.headers, now, shared)) {
        hop.release?.();
        discard(res.body);
        become(res, entry, now, 'stale');
        trace(ctx, () => new CacheHitEvent(req.url, evaluate(entry.head, req.headers, now, shared).age, 'stale'));
        return;
      }
      res.cacheStatus = 'miss';
      const release = hop.release;
      hop.release = null;
      if (!isStorable(req.method, req.headers, res.status, res.headers, shared)) {
        release?.();
        return;
      }
      const selection = varySelection(res.headers, req.headers);
      if (selection === null) {
        release?.();
        return;
      }
      const head: StoredHead = {
        method: req.method,
        url: req.url,
        status: res.status,
        reason: res.reason,
        headers: storedFields(res.headers),
        requestTime: hop.requestTime,
        responseTime: now,
        vary: selection,
      };
      const writer = store.open(hop.key, variantId(selection), head);
      teeIntoStore(res, writer, release);
    });

    kernel.hooks.client.onRetry.tap({ name: NAME, stage: Stage.RETRY - 1 }, (state, ctx): RetryDecision | undefined => {
      const hop = hops.get(state.request);
      if (hop === undefined) return undefined;
      if (state.error === null) return undefined;
      hop.release?.();
      if (hop.entry !== null && staleIfError(hop.entry.head, state.request.headers, Date.now(), shared) && !ctx.canceled) {
        hop.serveStale = true;
        return { retry: true, delayMs: 0, reason: 'stale-if-error: serving the stored response' };
      }
      return undefined;
    });
  },
});

/** Resolves with `p`, or rejects with the context's error when the call is canceled first. */
function settledOrCanceled(p: Promise<void>, ctx: RequestContext): Promise<void> {
  const err = ctx.error();
  if (err !== null) return Promise.reject(err);
  let off = (): void => undefined;
  const canceled = new Promise<never>((_resolve, reject) => {
    off = ctx.onCancel(reject);
  });
  return Promise.race([p, canceled]).finally(off);
}

function gatewayTimeout(req: Request): Response {
  const res = new Response(504, 'no stored response for an only-if-cached request', { request: req });
  res.cacheStatus = 'miss';
  return res;
}

/** A new response from a stored entry, with its current `Age` (RFC 9111 §5.1). */
function hit(entry: CacheEntry, req: Request, now: number, status: CacheStatus): Response {
  const res = new Response(entry.head.status, null, { request: req, reason: entry.head.reason });
  become(res, entry, now, status);
  return res;
}

/** Turns `res` into the stored response (a 304 or 5xx replaced in place, or a fresh hit). */
function become(res: Response, entry: CacheEntry, now: number, status: CacheStatus): void {
  const headers = headHeaders(entry.head);
  const age = evaluate(entry.head, new Headers(), now, 'private').age;
  headers.set('Age', String(Math.floor(age)));
  res.status = entry.head.status;
  res.reason = entry.head.reason;
  res.headers = headers;
  const noBody = entry.head.method === 'HEAD' || entry.size === 0 || res.request?.method === 'HEAD';
  res.setBody(noBody ? null : new EntryBody(entry), entry.size);
  res.cacheStatus = status;
}

function discard(body: unknown): void {
  if (typeof body === 'object' && body !== null && 'close' in body && typeof (body as AbstractBody).close === 'function') (body as AbstractBody).close();
}

/** A stored entry's body, read from the store. */
class EntryBody extends ChunkBody {
  private iterator: AsyncIterator<Uint8Array> | null = null;
  private isClosed = false;
  constructor(private readonly entry: CacheEntry) {
    super();
  }
  override get length(): number {
    return this.entry.size;
  }
  protected async nextChunk(): Promise<Uint8Array | null> {
    if (this.isClosed) return null;
    this.iterator ??= this.entry.body()[Symbol.asyncIterator]();
    const r = await this.iterator.next();
    return r.done === true ? null : r.value;
  }
  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.dropWaiting();
    void this.iterator?.return?.();
  }
  get closed(): boolean {
    return this.isClosed;
  }
}

/**
 * Replaces the response's body with one that passes every chunk on to the store as the caller
 * reads it: the entry is committed when the body was read to its end, aborted when the body
 * fails or is closed before (so a half-written entry is never published).
 */
function teeIntoStore(res: Response, writer: CacheWriter, release: (() => void) | null): void {
  const body = res.body;
  const settle = async (ok: boolean): Promise<void> => {
    try {
      if (ok) await writer.commit();
      else writer.abort();
    } finally {
      release?.();
    }
  };
  if (body === null || typeof body === 'string' || body instanceof Uint8Array) {
    if (body !== null && body.length > 0) void writer.write(typeof body === 'string' ? Buffer.from(body) : body);
    void settle(true);
    return;
  }
  res.setBody(new TeeBody(body, writer, settle, res.contentLength), res.contentLength);
}

class TeeBody extends ChunkBody {
  private iterator: AsyncIterator<Uint8Array> | null = null;
  private isClosed = false;
  private settled = false;
  private received = 0;
  constructor(
    private readonly source: AbstractBody,
    private readonly writer: CacheWriter,
    private readonly settle: (ok: boolean) => Promise<void>,
    private readonly expected: number,
  ) {
    super();
  }
  override get length(): number {
    return this.source.length;
  }
  override trailers(): Headers {
    return this.source.trailers();
  }
  protected async nextChunk(): Promise<Uint8Array | null> {
    if (this.isClosed) return null;
    this.iterator ??= this.source[Symbol.asyncIterator]();
    let r: IteratorResult<Uint8Array>;
    try {
      r = await this.iterator.next();
    } catch (err) {
      this.finish(false);
      throw err;
    }
    if (r.done === true) {
      await this.finishAndWait(this.expected < 0 || this.received === this.expected);
      return null;
    }
    this.received += r.value.length;
    await this.writer.write(r.value);
    // A reader that knows the length stops at it, without the read that returns the end.
    if (this.received === this.expected) await this.finishAndWait(true);
    return r.value;
  }
  private finish(ok: boolean): void {
    void this.finishAndWait(ok);
  }
  private async finishAndWait(ok: boolean): Promise<void> {
    if (this.settled) return;
    this.settled = true;
    await this.settle(ok);
  }
  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.dropWaiting();
    this.finish(false);
    this.source.close();
  }
  get closed(): boolean {
    return this.isClosed;
  }
}

/** Checks a {@link CacheCallMode} given outside the option checks (the `fetch` mapping). */
export function checkCacheMode(v: unknown): CacheCallMode {
  if (!MODES.has(v)) throw new ArgumentError(`cache must be ${checkMode(v)!}, got ${String(v)}`);
  return v as CacheCallMode;
}
