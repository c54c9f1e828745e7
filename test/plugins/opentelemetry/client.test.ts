/**
 * Client spans of the OpenTelemetry plugin with the real SDK: one CLIENT span per call, retries
 * and redirects as events on it (and `traceparent` on every attempt), failures (a status of 400
 * or more, a connection refused) as errors with `error.type`, a streamed response's span
 * ending with its body, `ignore` and `clientSpans`, the options checked, and the channels left
 * without subscribers once the kernel closes.
 */
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { ArgumentError, channels, createKernel, Response, StatusError, type AnyPlugin, type Kernel } from '../../../kernel/index.js';
import { redirects } from '../../../plugins/redirects/index.js';
import { retries } from '../../../plugins/retries/index.js';
import { openTelemetry, type OpenTelemetryOptions } from '../../../plugins/opentelemetry/index.js';
import { closeAfter, onCleanup } from '../../helpers/cleanup.js';
import { startServer, stopServer } from '../../helpers/server.js';
import { exporter, propagator, provider, spans } from './sdk.js';

async function tracedKernel(options: OpenTelemetryOptions = {}, ...more: AnyPlugin[]): Promise<Kernel> {
  const kernel = createKernel().register([...more, openTelemetry({ tracerProvider: provider, propagator, ...options })]);
  await kernel.ready();
  onCleanup(() => kernel.close());
  return kernel;
}

/** A server on an untraced kernel that records the traceparent of every request. */
async function recordingServer(answer: (target: string, n: number) => Response): Promise<{ url: string; seen: string[] }> {
  const seen: string[] = [];
  const { port } = await startServer((req) => {
    seen.push(req.headers.get('traceparent') ?? 'none');
    return answer(req.target, seen.length);
  });
  return { url: `http://127.0.0.1:${port}`, seen };
}

/** The only client span exported. */
async function clientSpan() {
  const got = (await spans(1)).filter((s) => s.kind === SpanKind.CLIENT);
  expect(got).toHaveLength(1);
  return got[0]!;
}

describe('opentelemetry: client spans', () => {
  it('a retried call is one span with a retry event; every attempt carries its traceparent', async () => {
    const kernel = await tracedKernel({}, retries);
    const { url, seen } = await recordingServer((_, n) => new Response(n === 1 ? 503 : 200, 'x'));
    const client = closeAfter(kernel.client({ retryDelayScale: 1 }));
    expect((await client.request('GET', `${url}/flaky`)).status).toBe(200);
    const span = await clientSpan();
    const parent = `00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`;
    expect(seen).toEqual([parent, parent]);
    expect(span.events.map((e) => e.name)).toEqual(['retry']);
    expect(span.events[0]!.attributes).toMatchObject({ 'http.request.resend_count': 1, 'http.response.status_code': 503 });
    expect(span.attributes).toMatchObject({ 'http.response.status_code': 200, 'http.request.resend_count': 1 });
    expect(span.status.code).toBe(SpanStatusCode.UNSET);
  });

  it('a redirected call is one span with a redirect event; the hop carries the same trace', async () => {
    const kernel = await tracedKernel({}, redirects);
    const { url, seen } = await recordingServer((target) => (target === '/from' ? new Response(302, '', { headers: { Location: '/to' } }) : new Response(200, 'there')));
    const client = closeAfter(kernel.client());
    expect((await client.request('GET', `${url}/from`)).text()).toBe('there');
    const span = await clientSpan();
    const parent = `00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`;
    expect(seen).toEqual([parent, parent]);
    expect(span.events.map((e) => [e.name, e.attributes])).toEqual([['redirect', { 'http.response.status_code': 302, 'url.full': `${url}/to`, 'switchyard.redirect.hop': 1 }]]);
    expect(span.attributes).toMatchObject({ 'url.full': `${url}/from`, 'http.response.status_code': 200, 'http.request.resend_count': 1 });
  });

  it('a status of 400 or more is an error with error.type the status (StatusError or not)', async () => {
    const kernel = await tracedKernel();
    const { url } = await recordingServer(() => new Response(404, 'no'));
    const client = closeAfter(kernel.client());
    await expect(client.request('GET', `${url}/thrown`)).rejects.toBeInstanceOf(StatusError);
    expect((await client.request('GET', `${url}/returned`, { statusException: false })).status).toBe(404);
    const got = await spans(2);
    for (const span of got) {
      expect(span.status.code).toBe(SpanStatusCode.ERROR);
      expect(span.attributes).toMatchObject({ 'http.response.status_code': 404, 'error.type': '404' });
    }
  });

  it('a connection refused is an error with error.type its code, recorded as an exception', async () => {
    const kernel = await tracedKernel();
    const { server, port } = await startServer(() => new Response(200, ''));
    await stopServer(server);
    const client = closeAfter(kernel.client());
    const err = await client.request('GET', `http://127.0.0.1:${port}/`).catch((e: unknown) => e);
    const span = await clientSpan();
    expect(span.status.code).toBe(SpanStatusCode.ERROR);
    expect(span.attributes['error.type']).toBe((err as { code: string }).code);
    expect(span.attributes['http.response.status_code']).toBeUndefined();
    expect(span.events.map((e) => e.name)).toEqual(['exception']);
  });

  it('a streamed response’s span ends when its body was read to its end', async () => {
    const kernel = await tracedKernel();
    const { url } = await recordingServer(() => new Response(200, 'y'.repeat(200_000)));
    const client = closeAfter(kernel.client());
    const res = await client.fetch(`${url}/big`);
    await new Promise<void>((r) => setImmediate(r));
    expect(exporter.getFinishedSpans()).toEqual([]);
    expect((await res.arrayBuffer()).byteLength).toBe(200_000);
    const span = await clientSpan();
    expect(span.attributes['http.response.status_code']).toBe(200);
  });

  it('a streamed response closed before its end ends its span as canceled', async () => {
    const kernel = await tracedKernel();
    const { url } = await recordingServer(() => new Response(200, 'y'.repeat(2_000_000)));
    const client = closeAfter(kernel.client());
    const res = await client.fetch(`${url}/big`);
    const reader = res.body!.getReader();
    await reader.read();
    await reader.cancel();
    const span = await clientSpan();
    expect(span.status.code).toBe(SpanStatusCode.ERROR);
    expect(span.attributes).toMatchObject({ 'http.response.status_code': 200, 'error.type': 'SWY_ERR_CANCELED' });
  });

  it('ignore: a call it matches gets no span and sends no traceparent', async () => {
    const kernel = await tracedKernel({ ignore: (req) => req.url.endsWith('/metrics') });
    const { url, seen } = await recordingServer(() => new Response(200, ''));
    const client = closeAfter(kernel.client());
    await client.request('GET', `${url}/metrics`);
    await client.request('GET', `${url}/work`);
    const span = await clientSpan();
    expect(span.attributes['url.full']).toBe(`${url}/work`);
    expect(seen[0]).toBe('none');
  });

  it('clientSpans: false, and a kernel without the plugin: calls untraced, nothing sent', async () => {
    const off = await tracedKernel({ clientSpans: false });
    const plain = createKernel();
    await plain.ready();
    onCleanup(() => plain.close());
    const { url, seen } = await recordingServer(() => new Response(200, ''));
    await closeAfter(off.client()).request('GET', `${url}/a`);
    // The channels are the process's: a traced kernel elsewhere does not trace this one's calls.
    await tracedKernel();
    await closeAfter(plain.client()).request('GET', `${url}/b`);
    expect(seen).toEqual(['none', 'none']);
    expect(exporter.getFinishedSpans()).toEqual([]);
  });
});

describe('opentelemetry: options and lifetime', () => {
  it('refuses an unknown option naming the nearest, and values of the wrong kind', () => {
    expect(() => openTelemetry({ tracerProvder: provider } as OpenTelemetryOptions)).toThrow(ArgumentError);
    expect(() => openTelemetry({ tracerProvder: provider } as OpenTelemetryOptions)).toThrow(/unknown option "tracerProvder" \(did you mean tracerProvider\?\)/);
    expect(() => openTelemetry({ serverSpans: 'yes' } as unknown as OpenTelemetryOptions)).toThrow(/serverSpans must be a boolean/);
    expect(() => openTelemetry({ ignore: true } as unknown as OpenTelemetryOptions)).toThrow(/ignore must be a function/);
    expect(() => openTelemetry({ tracerProvider: {} } as unknown as OpenTelemetryOptions)).toThrow(/tracerProvider must be/);
    expect(() => openTelemetry({ propagator: { inject() {} } } as unknown as OpenTelemetryOptions)).toThrow(/propagator must be/);
  });

  it('subscribes when registered and leaves no subscriber once its kernel closes', async () => {
    const all = () => [
      channels.clientRequest.start.hasSubscribers,
      channels.clientRequest.asyncEnd.hasSubscribers,
      channels.clientRequest.error.hasSubscribers,
      channels.clientRequestHeaders.hasSubscribers,
      channels.clientResponseEnd.hasSubscribers,
      channels.clientRequestError.hasSubscribers,
      channels.clientRetry.hasSubscribers,
      channels.clientRedirect.hasSubscribers,
      channels.serverResponseFinish.hasSubscribers,
      channels.serverError.hasSubscribers,
      channels.serverRequest.asyncEnd.hasSubscribers,
    ];
    expect(all().some(Boolean)).toBe(false);
    const kernel = await tracedKernel();
    expect(all().every(Boolean)).toBe(true);
    await kernel.close();
    expect(all().some(Boolean)).toBe(false);
  });
});
