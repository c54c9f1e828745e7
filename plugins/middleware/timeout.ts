/**
 * `handlerTimeout(ms, { status, body, contentType })`: a middleware for request handlers
 * that answers `503 handler timed out` (by default) when the handler has not answered within
 * `ms`. The handler runs on a copy of the request whose context is a child of the request's:
 * its deadline is the earlier of now + `ms` and the request's own, it is canceled when the
 * request's is, and it is canceled (message `handler timed out`) at the timeout, so work that
 * checks `req.ctx` (or passes `req.ctx.signal` on) stops. The handler is not interrupted
 * otherwise: it runs until it returns or checks its context, and what it returns late is
 * dropped (a streamed body is closed). This is Go's `http.TimeoutHandler` with
 * `r.WithContext`; like it, the copy shares headers and body with the original.
 */
import { performance } from 'node:perf_hooks';
import { AbstractBody, ArgumentError, checkFieldValue, Request, Response, type RequestHandler } from '../../kernel/index.js';
import type { Middleware } from '../router/index.js';

/** Options of {@link handlerTimeout}. */
export interface HandlerTimeoutOptions {
  /** Status of the timeout answer. Default 503. */
  status?: number;
  /** Body of the timeout answer. Default `handler timed out`. */
  body?: string | Uint8Array;
  /** Content type of the timeout answer. Default `text/plain; charset=utf-8`. */
  contentType?: string;
}

/** Longest timeout `setTimeout` takes. */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;
/** Message of the cancellation at the timeout. */
export const HANDLER_TIMEOUT_MESSAGE = 'handler timed out';

/** A middleware answering with `status` when a request handler takes longer than `timeoutMs`. */
export function handlerTimeout(timeoutMs: number, options: HandlerTimeoutOptions = {}): Middleware<RequestHandler> {
  if (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs <= 0 || timeoutMs > MAX_TIMEOUT_MS) {
    throw new ArgumentError(`handlerTimeout(ms): ms must be a number of milliseconds above 0 and at most ${MAX_TIMEOUT_MS}, got ${String(timeoutMs)}`);
  }
  if (typeof options !== 'object' || options === null) throw new ArgumentError('handlerTimeout options must be an object');
  const status = options.status ?? 503;
  const body = options.body ?? HANDLER_TIMEOUT_MESSAGE;
  const contentType = options.contentType ?? 'text/plain; charset=utf-8';
  if (typeof body !== 'string' && !(body instanceof Uint8Array)) throw new ArgumentError(`handlerTimeout body must be a string or Uint8Array, got ${typeof body}`);
  if (typeof contentType !== 'string') throw new ArgumentError(`handlerTimeout contentType must be a string, got ${typeof contentType}`);
  // Refused now, with the caller on the stack, rather than by the serializer at the first timeout.
  checkFieldValue('Content-Type', contentType);
  // Built once to validate the status now rather than at the first timeout.
  new Response(status, body);
  const timedOut = (): Response => new Response(status, body, { headers: [['Content-Type', contentType]] });

  return (handler: RequestHandler): RequestHandler => {
    if (typeof handler !== 'function') throw new ArgumentError(`handlerTimeout(...)(handler): handler must be a function, got ${typeof handler}`);
    return (req: Request): Response | Promise<Response> => {
      if (!(req instanceof Request)) {
        throw new ArgumentError('handlerTimeout wraps request handlers only (serve); a stream handler cannot be answered for once it started writing');
      }
      const parent = req.ctx;
      const deadline = performance.now() + timeoutMs;
      const child = parent.child(deadline);
      // Route data and other application values stay readable through the copy.
      for (const [k, v] of parent.data) child.set(k, v);
      const inner = withContext(req, child);
      return new Promise<Response>((resolve, reject) => {
        let done = false;
        const expire = (): void => {
          done = true;
          clearTimeout(timer);
          child.cancel(HANDLER_TIMEOUT_MESSAGE);
          resolve(timedOut());
        };
        // Armed before the handler runs, so it fires ahead of the child's own deadline timer
        // (which a handler arms by reading ctx.signal) and answers first.
        const timer = setTimeout(expire, timeoutMs);
        const settle = (res: Response | null, err: unknown): void => {
          child.detach();
          if (!done && performance.now() >= deadline) expire(); // answered, but too late
          if (done) {
            // Dropped: close a late answer's stream so it does not hold its resource; a
            // failure after the timeout answer has nobody left to tell.
            if (res instanceof Response && res.body instanceof AbstractBody) res.body.close();
            return;
          }
          done = true;
          clearTimeout(timer);
          if (res !== null) resolve(res);
          else reject(err);
        };
        let out: Response | Promise<Response>;
        try {
          out = handler(inner);
        } catch (err) {
          settle(null, err);
          return;
        }
        if (out instanceof Response) settle(out, null);
        else
          Promise.resolve(out).then(
            (res) => settle(res, null),
            (err: unknown) => settle(null, err),
          );
      });
    };
  };
}

/** A shallow copy of `req` with another context (Go's `Request.WithContext`). */
function withContext(req: Request, ctx: Request['ctx']): Request {
  const copy = new Request(req.method, req.target, {
    headers: req.headers,
    copyHeaders: false,
    body: req.body,
    contentLength: req.contentLength,
    host: req.host,
    protoMajor: req.protoMajor,
    protoMinor: req.protoMinor,
    close: req.close,
    context: ctx,
  });
  if (req.hasTrailers) copy.trailers = req.trailers;
  copy.url = req.url;
  return copy;
}
