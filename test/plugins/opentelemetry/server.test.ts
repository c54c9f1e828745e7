/**
 * Server spans of the OpenTelemetry plugin with the real SDK: one SERVER span per request with
 * the HTTP semantic conventions' attributes (the route the router matched included), an
 * incoming `traceparent` continued, the handler (request and stream handlers) running in the
 * span's context, 5xx and failed exchanges marked as errors, and `ignore`.
 */
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { createKernel, Response, type AnyPlugin, type Kernel } from '../../../kernel/index.js';
import { router } from '../../../plugins/router/index.js';
import { h2 } from '../../../plugins/h2/index.js';
import { h2c } from '../../../plugins/h2c/index.js';
import { openTelemetry, type OpenTelemetryOptions } from '../../../plugins/opentelemetry/index.js';
import { closeAfter, onCleanup } from '../../helpers/cleanup.js';
import { startServer, startStreamServer } from '../../helpers/server.js';
import { exporter, spans, propagator, provider } from './sdk.js';

/** A ready kernel with the plugin (and `more`); closed after the test. */
async function tracedKernel(options: OpenTelemetryOptions = { tracerProvider: provider, propagator }, ...more: AnyPlugin[]): Promise<Kernel> {
  const kernel = createKernel().register([...more, router, openTelemetry(options)]);
  await kernel.ready();
  onCleanup(() => kernel.close());
  return kernel;
}

/** The trace id and span id of the active span, as the handler sees it. */
function activeIds(): string {
  const sc = trace.getActiveSpan()?.spanContext();
  return sc === undefined ? 'none' : `${sc.traceId}/${sc.spanId}`;
}

describe('opentelemetry: server spans', () => {
  it('one SERVER span per request, with the conventions’ attributes and the matched route; the handler runs in it', async () => {
    const kernel = await tracedKernel();
    kernel.route('GET', '/users/{id}', () => new Response(200, activeIds()));
    const { port } = await startServer(() => new Response(404, 'none'), { kernel });
    const res = await fetch(`http://127.0.0.1:${port}/users/7?full=1`, { headers: { 'User-Agent': 'otel-test' } });
    const seen = await res.text();
    const [span] = await spans(1);
    expect(span!.kind).toBe(SpanKind.SERVER);
    expect(span!.name).toBe('GET /users/{id}');
    expect(span!.parentSpanContext).toBeUndefined();
    expect(seen).toBe(`${span!.spanContext().traceId}/${span!.spanContext().spanId}`);
    expect(span!.attributes).toMatchObject({
      'http.request.method': 'GET',
      'url.path': '/users/7',
      'url.query': 'full=1',
      'url.scheme': 'http',
      'server.address': '127.0.0.1',
      'server.port': port,
      'network.protocol.version': '1.1',
      'client.address': '127.0.0.1',
      'user_agent.original': 'otel-test',
      'http.route': '/users/{id}',
      'http.response.status_code': 200,
    });
    expect(span!.status.code).toBe(SpanStatusCode.UNSET);
  });

  it('continues the trace of an incoming traceparent (and keeps its tracestate)', async () => {
    const kernel = await tracedKernel();
    const { port } = await startServer(() => new Response(200, activeIds()), { kernel });
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const parent = '00f067aa0ba902b7';
    const res = await fetch(`http://127.0.0.1:${port}/`, { headers: { traceparent: `00-${traceId}-${parent}-01`, tracestate: 'vendor=x' } });
    const seen = await res.text();
    const [span] = await spans(1);
    expect(span!.spanContext().traceId).toBe(traceId);
    expect(span!.parentSpanContext?.spanId).toBe(parent);
    expect(span!.parentSpanContext?.isRemote).toBe(true);
    expect(span!.spanContext().traceState?.get('vendor')).toBe('x');
    expect(seen).toBe(`${traceId}/${span!.spanContext().spanId}`);
  });

  it('a stream handler runs in the span too, over HTTP/1.1 and HTTP/2', async () => {
    const kernel = await tracedKernel(undefined, h2, h2c);
    const { port } = await startStreamServer(
      async (s) => {
        await s.startRead();
        await s.readAll();
        await Promise.resolve();
        await s.write(activeIds());
      },
      { kernel },
    );
    const client = closeAfter(createKernel().register([h2, h2c]).client());
    const one = await client.request('POST', `http://127.0.0.1:${port}/one`, { body: 'x' });
    const two = await client.request('POST', `http://127.0.0.1:${port}/two`, { body: 'x', httpVersion: 'h2' });
    const got = await spans(2);
    const byPath = (p: string) => got.find((s) => s.attributes['url.path'] === p)!;
    expect(one.text()).toBe(`${byPath('/one').spanContext().traceId}/${byPath('/one').spanContext().spanId}`);
    expect(two.text()).toBe(`${byPath('/two').spanContext().traceId}/${byPath('/two').spanContext().spanId}`);
    expect(byPath('/one').attributes['network.protocol.version']).toBe('1.1');
    expect(byPath('/two').attributes['network.protocol.version']).toBe('2');
    expect(byPath('/two').attributes['http.response.status_code']).toBe(200);
  });

  it('a 5xx answer is an error of the server span; a 4xx is not; a handler that throws is recorded', async () => {
    const kernel = await tracedKernel();
    const { port } = await startServer(
      (req) => {
        if (req.target === '/throw') throw new TypeError('boom');
        return new Response(req.target === '/404' ? 404 : 503, '');
      },
      { kernel, onError: () => {} },
    );
    for (const p of ['/404', '/503', '/throw']) await (await fetch(`http://127.0.0.1:${port}${p}`)).arrayBuffer();
    const got = await spans(3);
    const byPath = (p: string) => got.find((s) => s.attributes['url.path'] === p)!;
    expect(byPath('/404').status.code).toBe(SpanStatusCode.UNSET);
    expect(byPath('/404').attributes['error.type']).toBeUndefined();
    expect(byPath('/503').status.code).toBe(SpanStatusCode.ERROR);
    expect(byPath('/503').attributes['error.type']).toBe('503');
    const thrown = byPath('/throw');
    expect(thrown.status.code).toBe(SpanStatusCode.ERROR);
    expect(thrown.attributes['http.response.status_code']).toBe(500);
    expect(thrown.attributes['error.type']).toBe('500');
    expect(thrown.events.map((e) => [e.name, e.attributes?.['exception.type'], e.attributes?.['exception.message']])).toEqual([['exception', 'TypeError', 'boom']]);
  });

  it('an exchange abandoned after its head went out ends its span as an error', async () => {
    const kernel = await tracedKernel();
    const { port } = await startStreamServer(
      async (s) => {
        await s.startRead();
        await s.write('part');
        throw new Error('broken mid-body');
      },
      { kernel, onError: () => {} },
    );
    await fetch(`http://127.0.0.1:${port}/`)
      .then(
        (r) => r.arrayBuffer(),
        () => undefined,
      )
      .catch(() => undefined);
    const [span] = await spans(1);
    expect(span!.status.code).toBe(SpanStatusCode.ERROR);
    expect(span!.attributes['error.type']).toBe('Error');
    expect(span!.attributes['http.response.status_code']).toBe(200);
  });

  it('ignore: a request it matches gets no span and its traceparent is not read', async () => {
    const kernel = await tracedKernel({ tracerProvider: provider, propagator, ignore: (req) => req.target === '/health' });
    const { port } = await startServer((req) => new Response(200, req.target === '/health' ? activeIds() : 'ok'), { kernel });
    const health = await fetch(`http://127.0.0.1:${port}/health`, { headers: { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' } });
    expect(await health.text()).toBe('none');
    await (await fetch(`http://127.0.0.1:${port}/work`)).text();
    const got = await spans(1);
    expect(got.map((s) => s.attributes['url.path'])).toEqual(['/work']);
  });

  it('serverSpans: false leaves the server untraced', async () => {
    const kernel = await tracedKernel({ tracerProvider: provider, serverSpans: false });
    const { port } = await startServer(() => new Response(200, activeIds()), { kernel });
    expect(await (await fetch(`http://127.0.0.1:${port}/`)).text()).toBe('none');
    expect(exporter.getFinishedSpans()).toEqual([]);
  });

  it('defaults to the global tracer provider and propagator', async () => {
    const kernel = await tracedKernel({});
    const { port } = await startServer(() => new Response(200, activeIds()), { kernel });
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const seen = await (await fetch(`http://127.0.0.1:${port}/`, { headers: { traceparent: `00-${traceId}-b7ad6b7169203331-01` } })).text();
    const [span] = await spans(1);
    expect(span!.spanContext().traceId).toBe(traceId);
    expect(seen).toBe(`${traceId}/${span!.spanContext().spanId}`);
  });
});
