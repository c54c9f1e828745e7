/**
 * The redirects plugin: follows 301, 302, 303, 307 and 308 responses that carry a Location.
 *
 * One synchronous `client.onResponseHead` tap at `Stage.REDIRECT` (after cookies, decompression
 * and SSE saw the response) returns the next hop as a new `Request`; the kernel discards the
 * redirect response, emits a `RedirectEvent` and runs the hop from `onRequest` again (so
 * cookies, auth and `Accept-Encoding` taps apply to every hop). Nothing runs per request when
 * no redirect arrives: the tap returns after one status comparison.
 *
 * Rules (fetch and curl where they agree; the reference's keywords otherwise):
 * - `Location` is resolved against the URL of the request that got the redirect; a missing,
 *   unparsable or non-http(s) Location is not followed (the 3xx is the response).
 * - 303 → GET without a body (HEAD stays HEAD). 301/302 → GET without a body for POST only;
 *   other methods are kept, with their body. `redirectMethod` changes that for 301/302:
 *   `'same'` keeps the method (and body), a method name forces that method.
 * - 307/308 keep method and body. A body that must be sent again but cannot be (a stream,
 *   an `AbstractBody`) stops the chain: the 3xx is returned, as in the reference.
 * - A dropped body takes its headers with it (Content-Length, Content-Type, Content-Encoding,
 *   Content-Language, Content-Location, Transfer-Encoding, Expect) and its trailers.
 * - When the origin (scheme, host, port) changes, `Authorization`, `Cookie`,
 *   `Proxy-Authorization` and a caller's `Host` header are dropped, always: `forwardHeaders`
 *   does not bring them back (curl and fetch do the same; a cookie jar adds the new origin's
 *   cookies on the next hop). `Referer` is dropped on https → http.
 * - `forwardHeaders: false` sends each hop with no headers of the previous request except
 *   `User-Agent` and a kept body's own headers (plugins still add theirs on the next hop).
 * - More than `redirectLimit` redirects (default 10) throws `TooManyRedirectsError` with the
 *   last redirect response; its body is closed and replaced by empty bytes, so it holds no
 *   connection.
 */
import {
  AbstractBody,
  ArgumentError,
  channels,
  checkPluginOptions,
  OptionChecks,
  type OptionCheck,
  Headers,
  Request,
  Stage,
  definePlugin,
  getCallOptions,
  isReplayable,
  isToken,
  type Response,
} from '../../kernel/index.js';
import { TooManyRedirectsError } from './errors.js';

export { TooManyRedirectsError } from './errors.js';

const NAME = 'redirects';

/** The redirect options: per call, as `Client` defaults, or as the plugin's own defaults. */
export interface RedirectOptions {
  /** Follow redirects. Default true; `false` returns the 3xx response as it is. */
  redirect?: boolean;
  /** Most redirects followed in one call; one more throws `TooManyRedirectsError`. Default 10. */
  redirectLimit?: number;
  /**
   * Method for a 301 or 302 hop: `'same'` keeps the request's method (and body), a method name
   * (`'GET'`, `'POST'`, …) forces it. Default: POST becomes GET, other methods are kept.
   * 303 always becomes GET (HEAD stays HEAD) and 307/308 always keep the method.
   */
  redirectMethod?: 'same' | (string & {});
  /**
   * Send the previous request's headers on the next hop. Default true. Credentials
   * (`Authorization`, `Cookie`, `Proxy-Authorization`) are dropped on an origin change either way.
   */
  forwardHeaders?: boolean;
  /**
   * Called before each hop is followed, with the hop's request, the redirect response and the
   * hop's number (1 for the first redirect). Return `false` to stop and return the redirect
   * response; throw to fail the call. Synchronous (the reference's `check_redirect`).
   */
  checkRedirect?: (next: Request, response: Response, count: number) => boolean | void;
}

// Typed options: merged into the kernel's `CallOptions` (per call) and `ClientOptions` (client
// defaults) through the public entry, which re-exports both. NOTE for the build: tsup's bundled
// dist/plugins/index.d.ts copies this specifier verbatim, where it must read '../kernel/index.js'
// (or 'switchyard/kernel'); until the build rewrites it, published typings lose this merge.
// Option types join CallOptions and ClientOptions in ../options.ts (one place, valid in dist/ too).

/** Default of `redirectLimit` (the reference's `max_redirects`). */
export const DEFAULT_REDIRECT_LIMIT = 10;

/** Headers that describe a request body; they go when the body is dropped. */
const BODY_HEADERS = ['Content-Length', 'Content-Type', 'Content-Encoding', 'Content-Language', 'Content-Location', 'Transfer-Encoding', 'Expect'];
const BODY_HEADERS_LC = new Set(BODY_HEADERS.map((h) => h.toLowerCase()));
/** Credentials that never cross an origin change. */
const CREDENTIAL_HEADERS = ['Authorization', 'Cookie', 'Proxy-Authorization'];
const EMPTY = new Uint8Array(0);

/** The plugin's options (per call, `Client` defaults, `register`) and their checks. */
const CALL_OPTIONS: Readonly<Record<keyof RedirectOptions, OptionCheck>> = {
  redirect: OptionChecks.boolean,
  redirectLimit: OptionChecks.integer(0),
  redirectMethod: (v) => (v === 'same' || (typeof v === 'string' && isToken(v)) ? null : "'same' or a method name such as 'GET'"),
  forwardHeaders: OptionChecks.boolean,
  checkRedirect: OptionChecks.function,
};

/** Redirects followed so far in one call; `call` is that call's options object (one per call). */
interface HopState {
  call: object;
  count: number;
}
const kHops = Symbol('redirects.hops');

/** The `redirects` plugin. Options given at `register` are defaults under `Client` and per-call options. */
export const redirects = definePlugin({
  name: NAME,
  callOptions: CALL_OPTIONS,
  register(kernel, options: RedirectOptions) {
    checkPluginOptions(options, CALL_OPTIONS, 'register(redirects, …)');
    const base = options;
    kernel.hooks.client.onResponseHead.tap({ name: NAME, stage: Stage.REDIRECT }, (res, ctx) => {
      const status = res.status;
      if (status !== 301 && status !== 302 && status !== 303 && status !== 307 && status !== 308) return;
      const location = res.headers.get('Location');
      if (location === undefined) return;
      const call = getCallOptions(ctx);
      if ((call.redirect ?? base.redirect) === false) return;
      const req = res.request;
      if (req === null) return;
      const from = req.url || res.url;
      if (from === '') return;

      let to: URL;
      let prev: URL;
      try {
        prev = new URL(from);
        to = new URL(location.trim(), prev);
      } catch {
        return; // an unparsable Location: not followed, the caller gets the 3xx
      }
      if (to.protocol !== 'http:' && to.protocol !== 'https:') return;
      to.hash = '';
      to.username = '';
      to.password = '';

      // Method and body of the next hop.
      let method = req.method;
      if (status === 303) {
        if (method !== 'HEAD') method = 'GET';
      } else if (status === 301 || status === 302) {
        const forced = call.redirectMethod ?? base.redirectMethod;
        if (forced === undefined) {
          if (method === 'POST') method = 'GET';
        } else if (forced !== 'same') {
          checkMethod(forced);
          method = forced.toUpperCase();
        }
      }
      const keepBody = method === req.method;
      if (keepBody && !isReplayable(req.body)) return; // 307/308 (or kept 301/302) with a stream: not followed

      // The limit (after deciding the hop would be followed: a 3xx we return never counts).
      let hops = ctx.get<HopState>(kHops);
      if (hops === undefined || hops.call !== call) {
        hops = { call, count: 0 };
        ctx.set(kHops, hops);
      }
      const limit = call.redirectLimit ?? base.redirectLimit ?? DEFAULT_REDIRECT_LIMIT;
      if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 0) {
        throw new ArgumentError(`redirectLimit must be an integer >= 0, got ${String(limit)}`);
      }
      if (hops.count >= limit) {
        // The error owns the response: release its connection now, keep status, headers and url.
        const body = res.body;
        res.body = EMPTY;
        if (body instanceof AbstractBody) body.close();
        throw new TooManyRedirectsError(limit, res);
      }

      // Headers of the next hop.
      const sameOrigin = prev.origin === to.origin;
      let headers: Headers;
      if ((call.forwardHeaders ?? base.forwardHeaders) === false) {
        // Only what the request cannot go without: User-Agent, and a kept body's own headers.
        headers = new Headers();
        for (const [k, v] of req.headers) {
          if (k.toLowerCase() === 'user-agent' || (keepBody && BODY_HEADERS_LC.has(k.toLowerCase()))) headers.push(k, v);
        }
      } else {
        headers = req.headers.clone();
        if (!keepBody) for (const h of BODY_HEADERS) headers.delete(h);
        if (!sameOrigin) {
          for (const h of CREDENTIAL_HEADERS) headers.delete(h);
          headers.delete('Host');
        }
        if (prev.protocol === 'https:' && to.protocol === 'http:') headers.delete('Referer');
      }

      const next = new Request(method, to.pathname + to.search, {
        headers,
        copyHeaders: false,
        body: keepBody ? req.body : null,
        host: to.host,
        close: req.close,
      });
      if (keepBody && req.hasTrailers) next.trailers = req.trailers.clone();
      next.url = to.href;

      const check = call.checkRedirect ?? base.checkRedirect;
      if (check !== undefined) {
        if (typeof check !== 'function') throw new ArgumentError('checkRedirect must be a function (request, response, count) => boolean | void');
        if (check(next, res, hops.count + 1) === false) return;
      }
      hops.count++;
      const ch = channels.clientRedirect;
      if (ch.hasSubscribers) ch.publish({ request: req, response: res, location: to.href, hop: hops.count });
      return next;
    });
  },
});

function checkMethod(m: unknown): asserts m is string {
  if (typeof m !== 'string' || !isToken(m)) {
    throw new ArgumentError(`redirectMethod must be 'same' or a method name such as 'GET', got ${JSON.stringify(m)}`);
  }
}
