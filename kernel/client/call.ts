/**
 * Call: one client call, from its merged options to its end, whichever way it was made
 * (`request` and the verbs, `dispatch`, `open`). It holds the request, the options, the
 * context and its link to the caller's `AbortSignal`, and the trace; it ends the call in one
 * place: the status exception, the trace's `DoneEvent`, the signal unlinked. Also how a
 * buffered call takes the final body into memory (or into its `responseStream`).
 */
import { Buffer } from 'node:buffer';
import { performance } from 'node:perf_hooks';
import { ResponseTooLargeError } from '../errors.js';
import { StatusError } from './status-error.js';
import { AbstractBody } from '../message/body.js';
import { kCallOptions, RequestContext } from '../message/context.js';
import type { Request } from '../message/request.js';
import type { Response } from '../message/response.js';
import { FlowBody } from './flow-body.js';
import type { CallOptions } from './options.js';
import { writeToSink } from './response-sink.js';
import { DoneEvent, verbosePrinter, type ClientEvent } from './trace.js';
import type { Origin } from './transport.js';

const kAttempt = Symbol.for('switchyard.attempt');
const EMPTY_OPTIONS: CallOptions = Object.freeze({});
const NO_DEADLINE = Object.freeze({ deadline: 0 });
const REDIRECT = new Set([301, 302, 303, 307, 308]);
/** {@link Call.links}: the call listens to its options' `signal`. */
const LISTENING = 1;
/** {@link Call.links}: the call's context is a child it made, to detach from its parent at the end. */
const CHILD = 2;

/**
 * Default of `maxResponseBytes`: 64 MiB, the bound the server puts on a request body it
 * buffers (`maxBodyBytes`), so a hostile or broken server cannot make a buffered call take
 * the process's memory; `responseStream` takes larger bodies.
 */
export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024;

/** The merged options of the call a context belongs to (client defaults under per-call options). Plugins read their keys here. */
export function getCallOptions(ctx: RequestContext): Readonly<CallOptions> {
  return (ctx.get<CallOptions>(kCallOptions) ?? EMPTY_OPTIONS) as Readonly<CallOptions>;
}

/** The attempt number (1, 2, …) of the exchange in flight on `ctx`. */
export function getAttempt(ctx: RequestContext): number {
  return ctx.get<number>(kAttempt) ?? 1;
}

/** @internal Records the attempt in flight on `ctx`; the first one stores nothing unless the context already holds another. */
export function setAttempt(ctx: RequestContext, attempt: number): void {
  if (attempt > 1 || ctx.get(kAttempt) !== undefined) ctx.set(kAttempt, attempt);
}

/**
 * @internal One client call. Made in two steps so a request that cannot be built links
 * nothing: `new Call(options)`, then {@link Call.begin} with the request.
 */
export class Call {
  /** The call's options: the client's defaults under the call's own. */
  readonly options: CallOptions;
  /** Receives the call's events (`trace`, `verbose`), or null. */
  readonly trace: ((e: ClientEvent) => void) | null;
  /** The request as the call made it (redirect hops and retries send others). */
  request!: Request;
  /** The call's context: the caller's, or a child of it with the call's deadline. */
  ctx!: RequestContext;
  /** The origin of {@link Call.request}'s URL when the client knew it while building the request (a URL it parsed before), else null. */
  origin: Origin | null = null;
  /**
   * When the call began, for `DoneEvent.elapsedMs`: traced calls only (null otherwise, so an
   * untraced call stores no number).
   */
  private started: number | null = null;
  /** What {@link Call.unlink} undoes: {@link LISTENING} and {@link CHILD}. */
  private links = 0;
  /** What {@link Call.settle} does with a failed exchange. */
  private onFailure: ((call: Call, err: unknown) => Response | Promise<Response>) | null = null;
  /** What {@link Call.settle} does with the exchange's response head, when not {@link Call.complete} at once. */
  private onHead: ((call: Call, res: Response) => Response | Promise<Response>) | null = null;

  constructor(options: CallOptions) {
    this.options = options;
    this.trace = traceOf(options);
  }

  /**
   * Starts the call with `request`: its context is `context` (or a new one), or a child of it
   * when the call has a `requestTimeout`; the call's `signal`, if any, cancels it.
   */
  begin(request: Request, context: RequestContext | undefined): void {
    const o = this.options;
    this.request = request;
    if (this.trace !== null) this.started = performance.now();
    let ctx = context;
    const timeout = o.requestTimeout ?? 0;
    if (ctx === undefined) ctx = timeout > 0 ? new RequestContext({ deadline: performance.now() + timeout }) : new RequestContext(NO_DEADLINE);
    else if (timeout > 0) {
      ctx = ctx.child(performance.now() + timeout);
      this.links = CHILD;
    }
    ctx.set(kCallOptions, o);
    this.ctx = ctx;
    request.ctx = ctx;
    const signal = o.signal;
    if (signal === undefined) return;
    if (signal.aborted) {
      this.handleEvent();
      return;
    }
    // The call itself is the listener (an EventListener object): no closure per call.
    signal.addEventListener('abort', this, { once: true });
    this.links |= LISTENING;
  }

  /** The caller's `AbortSignal` fired: cancels the call's context with its reason. */
  handleEvent(): void {
    const r: unknown = this.options.signal?.reason;
    this.ctx.cancel(r instanceof Error ? r.message : typeof r === 'string' ? r : 'request aborted by its AbortSignal');
  }

  /** Stops the caller's signal from reaching the call's context, and detaches a child context from its parent. */
  unlink(): void {
    const links = this.links;
    if (links === 0) return;
    this.links = 0;
    if ((links & LISTENING) !== 0) this.options.signal!.removeEventListener('abort', this);
    if ((links & CHILD) !== 0) this.ctx.detach();
  }

  /**
   * Ends the call with its final response: `StatusError` for a status of 300 or above that is
   * not a redirect (unless `statusException: false`), the trace's `DoneEvent`, the signal
   * unlinked. Returns `res`, or throws that `StatusError`.
   */
  finish(res: Response): Response {
    if (this.options.statusException !== false && res.status >= 300 && !REDIRECT.has(res.status)) {
      const err = new StatusError(res.status, res);
      this.end(res, err);
      throw err;
    }
    this.end(res, null);
    return res;
  }

  /** Ends the call with `err` (the trace's `DoneEvent`, the signal unlinked) and throws it. */
  fail(err: unknown): never {
    this.end(null, err);
    throw err;
  }

  /**
   * Ends a buffered call with its final response head: the body into memory (at once when it
   * is complete already) or into the `responseStream` sink, then {@link Call.finish}.
   */
  complete(res: Response): Response | Promise<Response> {
    let now: boolean;
    try {
      now = bufferedNow(res, this.options);
    } catch (err) {
      return this.fail(err);
    }
    if (now) return this.finish(res);
    const body = res.body;
    if (body instanceof FlowBody && this.options.responseStream === undefined) {
      // The rest of a protocol driver's body in one promise, without bufferBody's async frame.
      return body.readRest(maxResponseBytes(this.options)).then(
        (all) => {
          res.body = all;
          adoptTrailers(res, body);
          return this.finish(res);
        },
        (err: unknown) => this.fail(err),
      );
    }
    return bufferBody(res, this.options).then(
      () => this.finish(res),
      (err: unknown) => this.fail(err),
    );
  }

  /**
   * Ends a buffered call whose one exchange is `p` (see {@link Call.complete}); a failed
   * exchange goes to `onFailure`, which retries it or ends the call; the response head, with
   * its URL set, to `onHead` when given (which runs the attempt's hooks and ends the call).
   */
  settle(
    p: Promise<Response>,
    onFailure: (call: Call, err: unknown) => Response | Promise<Response>,
    onHead: ((call: Call, res: Response) => Response | Promise<Response>) | null = null,
  ): Promise<Response> {
    this.onFailure = onFailure;
    this.onHead = onHead;
    // Bound methods, not arrow functions: the handlers share no context object made per call.
    return p.then(this.settled.bind(this), this.failed.bind(this));
  }

  private settled(res: Response): Response | Promise<Response> {
    res.url = this.request.url;
    const onHead = this.onHead;
    return onHead === null ? this.complete(res) : onHead(this, res);
  }

  private failed(err: unknown): Response | Promise<Response> {
    return this.onFailure!(this, err);
  }

  private end(res: Response | null, err: unknown): void {
    this.unlink();
    const trace = this.trace;
    if (trace !== null) trace(new DoneEvent(res?.url ?? this.request.url, res, err, getAttempt(this.ctx), performance.now() - (this.started ?? 0)));
  }
}

function traceOf(o: CallOptions): ((e: ClientEvent) => void) | null {
  const t = o.trace ?? null;
  const v = o.verbose ?? 0;
  if (v === 0) return t;
  const p = verbosePrinter(v);
  return t === null
    ? p
    : (e) => {
        p(e);
        t(e);
      };
}

/** The call's bound on a buffered body (Infinity: none). */
export function maxResponseBytes(o: CallOptions): number {
  const m = o.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  return m === 0 ? Infinity : m;
}

/**
 * The final body when it needs no waiting: no body, bytes, or a {@link FlowBody} that already
 * holds all of it. Returns false when {@link bufferBody} must run.
 */
function bufferedNow(res: Response, o: CallOptions): boolean {
  if (o.responseStream !== undefined) return false;
  const body = res.body;
  if (body === null) res.body = new Uint8Array(0);
  else if (body instanceof Uint8Array) return true;
  else if (typeof body === 'string') res.body = Buffer.from(body, 'utf8');
  else if (body instanceof FlowBody) {
    const all = body.takeComplete();
    if (all === null) return false;
    const limit = maxResponseBytes(o);
    if (all.length > limit) throw new ResponseTooLargeError(limit, all.length, body.length);
    res.body = all;
    adoptTrailers(res, body);
  } else return false;
  return true;
}

/** A buffered body's trailers move to its response: the bytes that replace the body cannot carry them. */
function adoptTrailers(res: Response, body: FlowBody): void {
  const t = body.trailerFields;
  if (t !== null && t.size > 0) res.trailers = t;
}

/**
 * Reads the final body into memory, up to the call's `maxResponseBytes` (past it: the body is
 * closed, and so its connection, and `ResponseTooLargeError`), or into the `responseStream`
 * option's sink.
 */
async function bufferBody(res: Response, o: CallOptions): Promise<void> {
  const body = res.body;
  const sink = o.responseStream;
  if (sink !== undefined) {
    res.body = null;
    await writeToSink(body, sink);
    if (body instanceof AbstractBody) takeTrailers(res, body);
    return;
  }
  const limit = maxResponseBytes(o);
  if (body instanceof AbstractBody) {
    try {
      res.body = await readCapped(body, limit);
      takeTrailers(res, body);
    } finally {
      body.close();
    }
  } else if (typeof body === 'string') res.body = Buffer.from(body, 'utf8');
  else if (body === null) res.body = new Uint8Array(0);
  if (res.body instanceof Uint8Array && res.body.length > limit) throw new ResponseTooLargeError(limit, res.body.length);
}

/**
 * The trailers of a body read to its end move to its response, which keeps the bytes (or
 * none, for a sink): any body, a plugin's over the driver's (a decoder, a recorder) too.
 */
function takeTrailers(res: Response, body: AbstractBody): void {
  const t = body.trailers();
  if (t.size > 0) res.trailers = t;
}

/** Reads `body` to its end; past `limit` bytes, stops reading and throws `ResponseTooLargeError`. */
async function readCapped(body: AbstractBody, limit: number): Promise<Uint8Array> {
  const declared = body.length;
  if (declared > limit) throw new ResponseTooLargeError(limit, 0, declared);
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const c of body) {
    total += c.length;
    if (total > limit) throw new ResponseTooLargeError(limit, total);
    chunks.push(c);
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total);
}
