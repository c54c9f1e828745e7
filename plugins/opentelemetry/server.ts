/**
 * Server spans: one per request, kind SERVER, continuing the trace its headers carry.
 *
 * A `server.onRequest` tap at `Stage.FIRST` (callback style) starts the span and calls back
 * inside `context.with(span)`: the exchange (later taps, the router, the handler) goes on in
 * that callback, so the handler, and any client call it makes, runs in the span's context.
 * The span ends when the response's last byte was handed to the connection
 * (`switchyard:server:response:finish`), with the status and the matched route; an error the
 * server reports (`switchyard:server:error`) is recorded on it; an exchange that is over
 * without its response finishing (`asyncEnd` of the `switchyard:server:request` trace: the
 * client went, the body failed after the head) ends it as failed.
 */
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Span, type TextMapPropagator, type Tracer } from '@opentelemetry/api';
import { channels, Stage, type Kernel, type Request, type ServerErrorMessage, type ServerExchange, type ServerResponseFinishMessage, type ServerRequestContext } from '../../kernel/index.js';
import { getRoute } from '../router/index.js';
import { errorType, headersGetter, methodAttribute, methodName, splitHost } from './http.js';

/** What the server side needs from the plugin's options. */
export interface ServerTracing {
  readonly tracer: Tracer;
  readonly propagator: TextMapPropagator | typeof propagation;
  readonly ignore: ((request: Request) => boolean) | null;
}

/** Taps the kernel's server hook and subscribes to the server channels; returns the unsubscriber. */
export function traceServers(kernel: Kernel, name: string, t: ServerTracing): () => void {
  const spans = new WeakMap<Request, Span>();

  kernel.hooks.server.onRequest.tapAsync({ name, stage: Stage.FIRST }, (req: Request, ex: ServerExchange, cb: () => void) => {
    if (t.ignore !== null && t.ignore(req)) {
      cb();
      return;
    }
    const parent = t.propagator.extract(ROOT_CONTEXT, req.headers, headersGetter);
    const span = t.tracer.startSpan(methodName(req.method), { kind: SpanKind.SERVER, attributes: requestAttributes(req, ex) }, parent);
    spans.set(req, span);
    context.with(trace.setSpan(parent, span), cb);
  });

  const onFinish = (message: unknown): void => {
    const m = message as ServerResponseFinishMessage;
    const span = spans.get(m.request);
    if (span === undefined) return;
    spans.delete(m.request);
    end(span, m.request, m.response.status);
  };
  // Reported before the answer it causes (a 500), so the span still takes it.
  const onError = (message: unknown): void => {
    const m = message as ServerErrorMessage;
    const span = m.request === null ? undefined : spans.get(m.request);
    if (span === undefined) return;
    span.recordException(m.error instanceof Error ? m.error : String(m.error));
    span.setAttribute('error.type', errorType(m.error));
    span.setStatus({ code: SpanStatusCode.ERROR });
  };
  // The exchange is over without its response finishing: abandoned (the client went, the
  // response body failed after its head went out).
  const onOver = (message: unknown): void => {
    const c = message as ServerRequestContext;
    const span = spans.get(c.request);
    if (span === undefined) return;
    spans.delete(c.request);
    if (c.error === undefined) span.setAttribute('error.type', 'aborted');
    span.setStatus({ code: SpanStatusCode.ERROR });
    const res = c.result as { status?: unknown } | undefined;
    end(span, c.request, typeof res?.status === 'number' ? res.status : 0);
  };
  const over = channels.serverRequest.asyncEnd;
  channels.serverResponseFinish.subscribe(onFinish);
  channels.serverError.subscribe(onError);
  over.subscribe(onOver);
  return () => {
    channels.serverResponseFinish.unsubscribe(onFinish);
    channels.serverError.unsubscribe(onError);
    over.unsubscribe(onOver);
  };
}

/** The attributes known when the request head arrived. */
function requestAttributes(req: Request, ex: ServerExchange): Attributes {
  const method = req.method;
  const a: Attributes = {
    'http.request.method': methodAttribute(method),
    'url.scheme': ex.server.tls ? 'https' : 'http',
    'network.protocol.version': req.protoMajor === 2 ? '2' : `${req.protoMajor}.${req.protoMinor}`,
  };
  if (a['http.request.method'] === '_OTHER') a['http.request.method_original'] = method;
  const target = req.target;
  const q = target.indexOf('?');
  a['url.path'] = q < 0 ? target : target.slice(0, q);
  if (q >= 0) a['url.query'] = target.slice(q + 1);
  const host = req.host ?? req.headers.get('Host');
  if (host !== undefined && host !== null && host !== '') {
    const { address, port } = splitHost(host);
    a['server.address'] = address;
    if (Number.isInteger(port)) a['server.port'] = port;
  }
  const ua = req.headers.get('User-Agent');
  if (ua !== undefined) a['user_agent.original'] = ua;
  try {
    const peer = ex.peerAddr();
    a['client.address'] = peer.address;
    a['client.port'] = peer.port;
  } catch {
    // A connection without a peer address (a test double): the attribute is optional.
  }
  return a;
}

/** Ends a server span with its status (0: none went out) and route; 5xx is an error on the server side. */
function end(span: Span, req: Request, status: number): void {
  const route = getRoute(req);
  if (route !== undefined) {
    span.setAttribute('http.route', route);
    span.updateName(`${methodName(req.method)} ${route}`);
  }
  if (status > 0) {
    span.setAttribute('http.response.status_code', status);
    if (status >= 500) {
      span.setAttribute('error.type', String(status));
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
  }
  span.end();
}
