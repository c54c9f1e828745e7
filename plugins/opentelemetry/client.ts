/**
 * Client spans: one per call (`client.request(…)`, `HTTP.get(…)`, `dispatch`, …), kind CLIENT,
 * retries and redirect hops inside it recorded as span events.
 *
 * The call is bracketed by the `switchyard:client:request` TracingChannel: its `start` store
 * binding (an AsyncLocalStorage of this plugin) remembers the caller's context and start time
 * for the whole call, so every attempt and hop finds its call. A `client.onRequest` tap at
 * `Stage.FIRST` (every attempt, every hop, and only on clients of this plugin's kernel) starts
 * the span on the call's first attempt and injects `traceparent`/`tracestate` into each
 * attempt. The span ends when the final response's body was read to its end
 * (`switchyard:client:response:end`, or at once when the call resolved with the body in
 * memory), or when the call fails.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';
import { context, propagation, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span, type TextMapPropagator, type Tracer } from '@opentelemetry/api';
import {
  AbstractBody,
  channels,
  Stage,
  StatusError,
  type ClientRedirectMessage,
  type ClientRequestContext,
  type ClientRequestErrorMessage,
  type ClientRequestHeadersMessage,
  type ClientResponseEndMessage,
  type ClientRetryMessage,
  type Kernel,
  type Request,
  type RequestContext,
  type Response,
} from '../../kernel/index.js';
import { errorType, headersSetter, methodAttribute, methodName, protocolVersion, splitHost } from './http.js';

/** What the client side needs from the plugin's options. */
export interface ClientTracing {
  readonly tracer: Tracer;
  readonly propagator: TextMapPropagator | typeof propagation;
  readonly ignore: ((request: Request) => boolean) | null;
}

/** One call as the TracingChannel's start saw it: the caller's context and when it began. */
interface CallRecord {
  readonly parent: Context;
  readonly startTime: number;
  /** The call's span, once its first attempt reached this kernel's tap. */
  span: ClientSpan | null;
  /** `ignore` said so: no span for any attempt of the call. */
  ignored: boolean;
}

/** A call's span and what its attempts told so far. */
interface ClientSpan {
  readonly span: Span;
  /** The context the span's own context is made from (the caller's, baggage included). */
  readonly parent: Context;
  /** Attempts sent (retries and redirect hops count). */
  sends: number;
  /** `http/1.1` or `h2`, of the last attempt that went out. */
  protocol: string;
  /** The final response, once the call resolved. */
  result: Response | null;
  /** The last response whose body was read to its end. */
  ended: Response | null;
  done: boolean;
}

/** Taps the kernel's client hook and subscribes to the client channels; returns the unsubscriber. */
export function traceClients(kernel: Kernel, name: string, t: ClientTracing): () => void {
  const als = new AsyncLocalStorage<CallRecord>();
  const records = new WeakMap<ClientRequestContext, CallRecord>();
  const byRequest = new WeakMap<Request, ClientSpan>();
  // Only when the TracingChannel's store did not reach the tap (a call not run through it).
  const byContext = new WeakMap<RequestContext, ClientSpan>();

  const record = (c: ClientRequestContext): CallRecord => {
    let r = records.get(c);
    if (r === undefined) {
      r = { parent: context.active(), startTime: performance.timeOrigin + performance.now(), span: null, ignored: false };
      records.set(c, r);
    }
    return r;
  };

  kernel.hooks.client.onRequest.tap({ name, stage: Stage.FIRST }, (req: Request, ctx: RequestContext) => {
    let s = byRequest.get(req);
    if (s === undefined) {
      const rec = als.getStore();
      const known = rec !== undefined ? rec.span : byContext.get(ctx);
      if (known !== undefined && known !== null && !known.done) s = known;
      else {
        // The call's first attempt.
        if (rec !== undefined && rec.ignored) return;
        if (t.ignore !== null && t.ignore(req)) {
          if (rec !== undefined) rec.ignored = true;
          return;
        }
        s = startSpan(t.tracer, req, rec?.parent ?? context.active(), rec?.startTime);
        if (rec !== undefined) rec.span = s;
        else byContext.set(ctx, s);
      }
      byRequest.set(req, s);
    }
    s.sends++;
    // Every attempt carries the call's span: a retry belongs to the same trace.
    t.propagator.inject(trace.setSpan(s.parent, s.span), req.headers, headersSetter);
  });

  const spanOfCall = (c: ClientRequestContext): ClientSpan | undefined => records.get(c)?.span ?? byRequest.get(c.request);

  const onResolved = (message: unknown): void => {
    const c = message as ClientRequestContext;
    const s = spanOfCall(c);
    if (s === undefined || s.done || c.result === undefined) return;
    s.result = c.result;
    // A buffered call's body is in memory already; a streamed one ends when it is read.
    if (!(c.result.body instanceof AbstractBody) || s.ended === c.result) finish(s, null);
  };
  const onFailed = (message: unknown): void => {
    const c = message as ClientRequestContext;
    const s = spanOfCall(c);
    if (s !== undefined && !s.done) finish(s, c.error);
  };
  const call = channels.clientRequest;
  call.start.bindStore(als, record);
  call.asyncEnd.subscribe(onResolved);
  call.error.subscribe(onFailed);

  const onHeadersSent = (message: unknown): void => {
    const m = message as ClientRequestHeadersMessage;
    const s = byRequest.get(m.request);
    if (s !== undefined) s.protocol = m.connection.protocol;
  };
  const onEnd = (message: unknown): void => {
    const m = message as ClientResponseEndMessage;
    const s = byRequest.get(m.request);
    if (s === undefined || s.done) return;
    s.ended = m.response;
    if (s.result === m.response) finish(s, null);
  };
  const onError = (message: unknown): void => {
    const m = message as ClientRequestErrorMessage;
    const s = byRequest.get(m.request);
    // Reading the final response's body failed after the call resolved; an attempt's failure
    // before that is the call's to report (it may be retried).
    if (s !== undefined && !s.done && s.result !== null && s.result.request === m.request) finish(s, m.error);
  };
  const onRetry = (message: unknown): void => {
    const m = message as ClientRetryMessage;
    const s = byRequest.get(m.request);
    if (s === undefined || s.done) return;
    const a: Attributes = { 'http.request.resend_count': m.attempt, 'switchyard.retry.delay_ms': m.delayMs, 'switchyard.retry.reason': m.reason };
    if (m.status > 0) a['http.response.status_code'] = m.status;
    if (m.error !== null && m.error !== undefined) a['error.type'] = errorType(m.error);
    s.span.addEvent('retry', a);
  };
  const onRedirect = (message: unknown): void => {
    const m = message as ClientRedirectMessage;
    const s = byRequest.get(m.request);
    if (s === undefined || s.done) return;
    s.span.addEvent('redirect', { 'http.response.status_code': m.response.status, 'url.full': m.location, 'switchyard.redirect.hop': m.hop });
  };
  channels.clientRequestHeaders.subscribe(onHeadersSent);
  channels.clientResponseEnd.subscribe(onEnd);
  channels.clientRequestError.subscribe(onError);
  channels.clientRetry.subscribe(onRetry);
  channels.clientRedirect.subscribe(onRedirect);

  return () => {
    call.start.unbindStore(als);
    call.asyncEnd.unsubscribe(onResolved);
    call.error.unsubscribe(onFailed);
    channels.clientRequestHeaders.unsubscribe(onHeadersSent);
    channels.clientResponseEnd.unsubscribe(onEnd);
    channels.clientRequestError.unsubscribe(onError);
    channels.clientRetry.unsubscribe(onRetry);
    channels.clientRedirect.unsubscribe(onRedirect);
  };
}

/** Starts a call's span with what its request says. */
function startSpan(tracer: Tracer, req: Request, parent: Context, startTime: number | undefined): ClientSpan {
  const method = req.method;
  const a: Attributes = { 'http.request.method': methodAttribute(method), 'url.full': req.url };
  if (a['http.request.method'] === '_OTHER') a['http.request.method_original'] = method;
  const host = req.host;
  if (host !== null) {
    const { address, port } = splitHost(host);
    a['server.address'] = address;
    a['server.port'] = Number.isInteger(port) ? port : req.url.startsWith('https:') ? 443 : 80;
  }
  const span = tracer.startSpan(methodName(method), { kind: SpanKind.CLIENT, attributes: a, startTime }, parent);
  return { span, parent, sends: 0, protocol: '', result: null, ended: null, done: false };
}

/**
 * Ends a call's span: the final status, the protocol, how often the request was sent again,
 * and, for a status of 400 or more or a failure, `error.type` and the ERROR status.
 */
function finish(s: ClientSpan, error: unknown): void {
  s.done = true;
  const span = s.span;
  const res = error instanceof StatusError ? error.response : s.result;
  const version = protocolVersion(s.protocol);
  if (version !== undefined) span.setAttribute('network.protocol.version', version);
  if (s.sends > 1) span.setAttribute('http.request.resend_count', s.sends - 1);
  if (res !== null) span.setAttribute('http.response.status_code', res.status);
  if (res !== null && res.status >= 400) {
    span.setAttribute('error.type', String(res.status));
    span.setStatus({ code: SpanStatusCode.ERROR });
  } else if (error !== null && error !== undefined) {
    span.recordException(error instanceof Error ? error : String(error));
    span.setAttribute('error.type', errorType(error));
    span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : undefined });
  }
  span.end();
}
