/**
 * The retries plugin: sends a failed attempt again when that is safe and likely to help.
 *
 * One `client.onRetry` tap at `Stage.RETRY` (synchronous: it only decides). The kernel asks
 * after every attempt; for a success the tap returns after a status check (and, when the call
 * had retried, refunds the bucket). On `{ retry: true, delayMs }` the kernel closes the
 * response body, emits `RetryEvent`, waits (canceled with the call's context) and resends
 * the same `Request`; on `{ retry: false, reason }` it emits `RetrySkippedEvent`.
 *
 * Rules, in order (the reference's retry keywords and `RetryBucket`):
 * - `retry: false` (per call, client default or plugin default): no decision, no retry.
 * - The body must be replayable (`isReplayable`: none, a string or bytes); a stream or an
 *   `AbstractBody` is never sent twice, whatever `retryIf` says.
 * - After `retries` retries (default 4, so at most 5 attempts) the last outcome stands
 *   (`RetrySkippedEvent` with reason `retries exhausted`).
 * - `retryIf(attempt, err, req, resp)`: `true` retries (skipping the method and
 *   recoverability rules, not the body, count, deadline and bucket rules), `false` stops,
 *   `undefined` defers to the built-in rules. Request-path failures arrive as
 *   `RequestRetryError` (`.err` is the cause); a response arrives as `err = undefined` with
 *   the response (body unread).
 * - Built-in: idempotent methods only (GET HEAD OPTIONS TRACE PUT DELETE QUERY) unless
 *   `retryNonIdempotent`; only {@link isRecoverable} failures and statuses.
 * - Delay: `Retry-After` (seconds or HTTP-date) when `respectRetryAfter` (default true) and
 *   the response has one, else exponential backoff with full jitter:
 *   `random() * min(retryMaxDelay, retryDelayScale * 2^(attempt-1))` (25 ms scale, 20 s cap).
 *   Either is capped at `retryMaxDelay`. A delay that would pass the call's deadline
 *   (`requestTimeout`, the context's) stops instead (`RetrySkippedEvent`).
 * - The {@link RetryBucket} (option `retryBucket`, else one per registration shared by every
 *   client of the kernel) must grant the retry's tokens: 10 after a failure on the request path,
 *   5 after a retryable response (the server is alive: it costs half). A denial stops
 *   (`RetrySkippedEvent`). When the call ends with an answer that is not retryable (a success,
 *   `attempt > 1`), every token it took is given back (the reference's full refund on success).
 */
import {
  ArgumentError,
  channels,
  checkPluginOptions,
  OptionChecks,
  type OptionCheck,
  ConnectError,
  DNSError,
  TLSTransportError,
  ParseError,
  Response,
  Stage,
  StatusError,
  definePlugin,
  getCallOptions,
  isIdempotent,
  isReplayable,
  type Request,
  type RequestContext,
  type RetryDecision,
} from '../../kernel/index.js';
import { describe, RequestRetryError } from './errors.js';

export { RequestRetryError } from './errors.js';

const NAME = 'retries';

/** The retry options: per call, as `Client` defaults, or as the plugin's own defaults (at `register`). */
export interface RetryOptions {
  /** Retry at all. Default true; `false` turns the plugin off for the call. */
  retry?: boolean;
  /** Most retries of one call (attempts are at most `retries + 1`). Default 4. */
  retries?: number;
  /** The token budget retries draw from; shared by every request and client given it. Default: one bucket per plugin registration. */
  retryBucket?: RetryBucket;
  /**
   * Custom decision, called after each attempt (1-based `attempt`) before the built-in rules:
   * `true` retry, `false` do not, `undefined` let the built-in rules decide. `err` is a
   * `RequestRetryError` (`err.err` the cause) when the attempt failed on the request path,
   * `undefined` when it produced `resp` (its body unread).
   */
  retryIf?: (attempt: number, err: RequestRetryError | undefined, req: Request, resp: Response | undefined) => boolean | undefined | void;
  /** Also retry non-idempotent methods (POST, PATCH, …). Default false. */
  retryNonIdempotent?: boolean;
  /** Wait as long as a `Retry-After` header says (seconds or HTTP-date), capped by the deadline and `retryMaxDelay`. Default true. */
  respectRetryAfter?: boolean;
  /** Backoff scale in ms (full jitter: up to `scale * 2^(attempt-1)`). Default 25. Tests use small values. */
  retryDelayScale?: number;
  /** Longest wait before a retry, ms (backoff and `Retry-After`). Default 20 000. */
  retryMaxDelay?: number;
}

/** Default of `retries` (the reference's client default). */
export const DEFAULT_RETRIES = 4;
/** Default backoff scale, ms. */
export const DEFAULT_RETRY_DELAY_SCALE = 25;
/** Default longest delay before a retry, ms. */
export const DEFAULT_RETRY_MAX_DELAY = 20_000;
/** Tokens a retry after a request-path failure takes from a {@link RetryBucket}. */
export const RETRY_COST = 10;
/** Tokens a retry after a retryable response takes (the server answered: half a retry). */
export const RESPONSE_RETRY_COST = 5;

/** Options of {@link RetryBucket}. */
export interface RetryBucketOptions {
  /** Tokens per host partition. Default 500. */
  capacity?: number;
}

/**
 * An AWS-style retry token bucket, partitioned per host (`host:port`). Every partition starts
 * full at `capacity` (default 500). A retry takes tokens ({@link RETRY_COST} = 10, or
 * {@link RESPONSE_RETRY_COST} = 5 after a retryable response); without enough tokens the retry
 * is denied. A call that ends in success gives back what it took. So a failing upstream sees at
 * most `capacity / 10` extra attempts (connection failures) until something succeeds, however
 * many requests and clients share the bucket.
 */
export class RetryBucket {
  /** Tokens of each partition when full. */
  readonly capacity: number;
  private readonly tokens = new Map<string, number>();

  constructor(options: RetryBucketOptions = {}) {
    if (typeof options !== 'object' || options === null) throw new ArgumentError('RetryBucket options must be an object');
    const capacity = options.capacity ?? 500;
    if (typeof capacity !== 'number' || !Number.isInteger(capacity) || capacity < 0) {
      throw new ArgumentError(`RetryBucket capacity must be an integer >= 0, got ${String(capacity)}`);
    }
    this.capacity = capacity;
  }

  /** Tokens left for `host`. */
  available(host: string): number {
    return this.tokens.get(host) ?? this.capacity;
  }

  /** Takes `cost` tokens (default {@link RETRY_COST}) for `host`; false (nothing taken) when fewer are left. */
  acquire(host: string, cost: number = RETRY_COST): boolean {
    const left = this.available(host);
    if (left < cost) return false;
    this.tokens.set(host, left - cost);
    return true;
  }

  /** Gives `amount` tokens back to `host` (default {@link RETRY_COST}), never above capacity. */
  release(host: string, amount: number = RETRY_COST): void {
    const left = Math.min(this.capacity, this.available(host) + Math.max(0, amount));
    if (left >= this.capacity) this.tokens.delete(host);
    else this.tokens.set(host, left);
  }
}

const RETRYABLE_STATUS = new Set([408, 429, 500, 502, 503, 504]);
const RESET_CODES = new Set(['ECONNRESET', 'EPIPE']);

function codeOf(e: unknown): unknown {
  return typeof e === 'object' && e !== null ? (e as { code?: unknown }).code : undefined;
}

/**
 * True for failures a retry may cure: a connection reset before any response byte
 * (`ECONNRESET`/`EPIPE` on the request path, or `ParseError` "connection closed before any
 * response byte"), a refused connection (`ConnectError` caused by `ECONNREFUSED`), a temporary
 * DNS failure (`DNSError` caused by `EAI_AGAIN`), and the statuses 408, 429, 500, 502, 503,
 * 504 (given as a number, a `Response` or a `StatusError`). A `RequestRetryError` is judged by
 * its cause, a `TLSTransportError` by its cause (a reset). Timeouts, TLS handshake and protocol
 * errors are not recoverable.
 */
export function isRecoverable(err: unknown): boolean {
  if (typeof err === 'number') return RETRYABLE_STATUS.has(err);
  if (err instanceof Response) return RETRYABLE_STATUS.has(err.status);
  if (err instanceof StatusError) return RETRYABLE_STATUS.has(err.status);
  if (err instanceof RequestRetryError) return isRecoverable(err.err);
  if (err instanceof ConnectError) {
    const c = codeOf(err.cause);
    return c === 'ECONNREFUSED' || c === 'ECONNRESET';
  }
  if (err instanceof DNSError) return codeOf(err.cause) === 'EAI_AGAIN';
  // A reset under TLS is the same reset: as retryable as on plain TCP.
  if (err instanceof TLSTransportError) return RESET_CODES.has(codeOf(err.cause) as string);
  if (err instanceof ParseError) return err.message.startsWith('connection closed before any response byte');
  if (err instanceof Error) return RESET_CODES.has(codeOf(err) as string);
  return false;
}

/**
 * The delay a `Retry-After` value asks for, in ms: delta-seconds or an HTTP-date (relative to
 * `now`, ms since the epoch; a past date is 0). `undefined` when absent or unparsable.
 */
export function parseRetryAfter(value: string | undefined, now: number = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  if (!/[a-z]/i.test(v)) return undefined; // not a date either (e.g. "-1", "1.5")
  // HTTP-dates are UTC by definition (RFC 9110 §5.6.7); asctime carries no zone, and
  // Date.parse would read it as local time.
  const t = Date.parse(/(GMT|UTC|[+-]\d{4})$/i.test(v) ? v : `${v} GMT`);
  if (Number.isNaN(t)) return undefined;
  return Math.max(0, t - now);
}

/** Tokens one call took, per host; `call` is the call's options object (one per call). */
interface Taken {
  call: object;
  hosts: Map<string, number>;
  bucket: RetryBucket;
}
const kTaken = Symbol('retries.taken');

/** The plugin's options (per call, `Client` defaults, `register`) and their checks. */
const CALL_OPTIONS: Readonly<Record<keyof RetryOptions, OptionCheck>> = {
  retry: (v) => (typeof v === 'boolean' ? null : 'a boolean (to set how many retries, use retries)'),
  retries: OptionChecks.integer(0),
  retryBucket: OptionChecks.instance(RetryBucket, 'RetryBucket'),
  retryIf: OptionChecks.function,
  retryNonIdempotent: OptionChecks.boolean,
  respectRetryAfter: OptionChecks.boolean,
  retryDelayScale: OptionChecks.milliseconds,
  retryMaxDelay: OptionChecks.milliseconds,
};

/** The `retries` plugin. Options given at `register` are defaults under `Client` and per-call options. */
export const retries = definePlugin({
  name: NAME,
  callOptions: CALL_OPTIONS,
  register(kernel, options: RetryOptions) {
    checkPluginOptions(options, CALL_OPTIONS, 'register(retries, …)');
    const base = options;
    const ownBucket = base.retryBucket ?? new RetryBucket();
    kernel.hooks.client.onRetry.tap({ name: NAME, stage: Stage.RETRY }, (state, ctx): RetryDecision | undefined => {
      const { attempt, error, request: req, response: res } = state;
      const call = getCallOptions(ctx);
      const failed = error !== null || (res !== null && RETRYABLE_STATUS.has(res.status));
      const retryIf = call.retryIf ?? base.retryIf;
      // Fast path: an answer that is not retryable and no custom rule.
      if (!failed && retryIf === undefined) {
        if (attempt > 1) refund(ctx, call);
        return undefined;
      }
      if ((call.retry ?? base.retry) === false) return undefined;
      const max = call.retries ?? base.retries ?? DEFAULT_RETRIES;
      if (typeof max !== 'number' || !Number.isInteger(max) || max < 0) throw new ArgumentError(`retries must be an integer >= 0, got ${String(max)}`);

      let verdict: boolean | undefined | void;
      if (retryIf !== undefined) {
        if (typeof retryIf !== 'function') throw new ArgumentError('retryIf must be a function (attempt, err, req, resp) => boolean | undefined');
        verdict = retryIf(attempt, error !== null ? new RequestRetryError(error) : undefined, req, res ?? undefined);
      }
      if (verdict === false || (verdict !== true && !failed)) {
        if (!failed) {
          if (attempt > 1) refund(ctx, call);
          return undefined;
        }
        return { retry: false, reason: 'retryIf returned false' };
      }
      if (!isReplayable(req.body)) return failed ? { retry: false, reason: 'request body is not replayable' } : undefined;
      if (verdict !== true) {
        if (!isIdempotent(req.method) && (call.retryNonIdempotent ?? base.retryNonIdempotent) !== true) {
          return { retry: false, reason: `${req.method} is not idempotent (retryNonIdempotent: true to retry it)` };
        }
        if (!isRecoverable(error !== null ? error : res)) return undefined; // not a retry matter: the outcome stands
      }
      if (attempt > max) return { retry: false, reason: `retries exhausted (${max})` };

      // The delay: Retry-After, else backoff with full jitter; capped by the max delay.
      const maxDelay = call.retryMaxDelay ?? base.retryMaxDelay ?? DEFAULT_RETRY_MAX_DELAY;
      let delay: number | undefined;
      let why = error !== null ? `request failed: ${describe(error)}` : `status ${res!.status}`;
      if (res !== null && (call.respectRetryAfter ?? base.respectRetryAfter) !== false) {
        delay = parseRetryAfter(res.headers.get('Retry-After'));
        if (delay !== undefined) why += ` (Retry-After ${delay} ms)`;
      }
      if (delay === undefined) {
        const scale = call.retryDelayScale ?? base.retryDelayScale ?? DEFAULT_RETRY_DELAY_SCALE;
        delay = Math.random() * Math.min(maxDelay, scale * 2 ** (attempt - 1));
      }
      delay = Math.min(delay, maxDelay);
      const remaining = ctx.remaining();
      if (delay >= remaining) {
        return { retry: false, reason: `the deadline passes before the retry delay (${Math.round(delay)} ms > ${Math.round(remaining)} ms left)` };
      }

      // The budget.
      const bucket = call.retryBucket ?? ownBucket;
      const host = hostOf(req);
      const cost = error !== null ? RETRY_COST : RESPONSE_RETRY_COST;
      if (!bucket.acquire(host, cost)) return { retry: false, reason: `retry bucket for ${host} is empty (${bucket.available(host)} tokens left)` };
      let taken = ctx.get<Taken>(kTaken);
      if (taken === undefined || taken.call !== call) {
        taken = { call, hosts: new Map(), bucket };
        ctx.set(kTaken, taken);
      }
      taken.hosts.set(host, (taken.hosts.get(host) ?? 0) + cost);
      const ch = channels.clientRetry;
      if (ch.hasSubscribers) ch.publish({ request: req, attempt, delayMs: delay, reason: why, error, status: res?.status ?? 0 });
      return { retry: true, delayMs: delay, reason: why };
    });

    function refund(ctx: RequestContext, call: object): void {
      const taken = ctx.get<Taken>(kTaken);
      if (taken === undefined || taken.call !== call) return;
      for (const [host, n] of taken.hosts) taken.bucket.release(host, n);
      taken.hosts.clear();
    }
  },
});

function hostOf(req: Request): string {
  if (req.host !== null && req.host !== '') return req.host.toLowerCase();
  try {
    return new URL(req.url).host;
  } catch {
    return '';
  }
}
