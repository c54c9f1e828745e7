/**
 * One trace across a hop, with the real SDK: an untraced caller reaches server A, whose handler
 * calls server B with a client of the same kernel. The spans are A's SERVER span → the CLIENT
 * span of the call → B's SERVER span, one trace id, each the parent of the next, whether the
 * hop speaks HTTP/1.1, HTTP/2 with prior knowledge (h2c) or HTTP/2 over TLS, and whether A
 * is a request or a stream handler.
 */
import { SpanKind } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { createKernel, listen, Response, serve, type CallOptions, type Client, type Kernel, type Server } from '../../../kernel/index.js';
import { h2 } from '../../../plugins/h2/index.js';
import { h2c } from '../../../plugins/h2c/index.js';
import { openTelemetry } from '../../../plugins/opentelemetry/index.js';
import { closeAfter, forceCloseAfter, onCleanup } from '../../helpers/cleanup.js';
import { cert } from '../../helpers/h2.js';
import { exporter, propagator, provider, spans } from './sdk.js';

async function tracedKernel(): Promise<Kernel> {
  const kernel = createKernel().register([h2, h2c, openTelemetry({ tracerProvider: provider, propagator })]);
  await kernel.ready();
  onCleanup(() => kernel.close());
  return kernel;
}

/** The three spans of one hop, found by kind and path. */
function hop(got: ReadableSpan[]): { a: ReadableSpan; call: ReadableSpan; b: ReadableSpan } {
  const a = got.find((s) => s.kind === SpanKind.SERVER && s.attributes['url.path'] === '/a')!;
  const call = got.find((s) => s.kind === SpanKind.CLIENT)!;
  const b = got.find((s) => s.kind === SpanKind.SERVER && s.attributes['url.path'] === '/b')!;
  expect(
    [a, call, b].every((s) => s !== undefined),
    'the three spans',
  ).toBe(true);
  return { a, call, b };
}

/** A's span is the root, the call its child, B's span the call's child, all in one trace. */
function expectOneTrace({ a, call, b }: { a: ReadableSpan; call: ReadableSpan; b: ReadableSpan }): void {
  const traceId = a.spanContext().traceId;
  expect(call.spanContext().traceId).toBe(traceId);
  expect(b.spanContext().traceId).toBe(traceId);
  expect(a.parentSpanContext).toBeUndefined();
  expect(call.parentSpanContext?.spanId).toBe(a.spanContext().spanId);
  expect(b.parentSpanContext?.spanId).toBe(call.spanContext().spanId);
  expect(b.parentSpanContext?.isRemote).toBe(true);
}

/** Server B, answering with the traceparent it got; server A (request or stream handler) calling it with `options`. */
async function servers(kernel: Kernel, options: CallOptions & { secure?: boolean }, stream = false): Promise<{ a: Server; bUrl: string }> {
  const { secure, ...call } = options;
  const tls = secure === true ? { key: cert.key, cert: cert.cert } : undefined;
  const b = forceCloseAfter(await serve((req) => new Response(200, req.headers.get('traceparent') ?? 'none'), { kernel, host: '127.0.0.1', port: 0, tls }));
  const bUrl = `${secure === true ? 'https' : 'http'}://127.0.0.1:${b.port}/b`;
  const client: Client = closeAfter(kernel.client({ tlsConfig: { ca: cert.cert } }));
  const a = stream
    ? await listen(
        async (s) => {
          await s.startRead();
          const res = await client.request('GET', bUrl, call);
          await s.write(res.text());
        },
        { kernel, host: '127.0.0.1', port: 0 },
      )
    : await serve(async () => new Response(200, (await client.request('GET', bUrl, call)).text()), { kernel, host: '127.0.0.1', port: 0 });
  return { a: forceCloseAfter(a), bUrl };
}

describe('opentelemetry: one trace across a hop', () => {
  const cases: [string, CallOptions & { secure?: boolean }, string][] = [
    ['HTTP/1.1', {}, '1.1'],
    ['HTTP/2 with prior knowledge (h2c)', { httpVersion: 'h2' }, '2'],
    ['HTTP/2 over TLS', { secure: true }, '2'],
  ];
  for (const [name, options, version] of cases) {
    it(`request handler, hop over ${name}`, async () => {
      const kernel = await tracedKernel();
      const { a, bUrl } = await servers(kernel, options);
      const res = await fetch(`http://127.0.0.1:${a.port}/a`);
      const traceparent = await res.text();
      const { a: sa, call, b } = hop(await spans(3));
      expectOneTrace({ a: sa, call, b });
      // What B got on the wire names the CLIENT span as its parent.
      expect(traceparent).toBe(`00-${call.spanContext().traceId}-${call.spanContext().spanId}-01`);
      expect(call.name).toBe('GET');
      expect(call.attributes).toMatchObject({
        'http.request.method': 'GET',
        'url.full': bUrl,
        'server.address': '127.0.0.1',
        'server.port': Number(new URL(bUrl).port),
        'http.response.status_code': 200,
        'network.protocol.version': version,
      });
      expect(call.attributes['error.type']).toBeUndefined();
      expect(b.attributes['network.protocol.version']).toBe(version);
      expect(b.attributes['url.scheme']).toBe(options.secure === true ? 'https' : 'http');
    });
  }

  it('stream handler, hop over HTTP/1.1 and HTTP/2', async () => {
    for (const options of [{}, { httpVersion: 'h2' }] as CallOptions[]) {
      const kernel = await tracedKernel();
      const { a } = await servers(kernel, options, true);
      await (await fetch(`http://127.0.0.1:${a.port}/a`)).text();
      expectOneTrace(hop(await spans(3)));
      await kernel.close();
      exporter.reset();
    }
  });

  it('the client span is the handler’s child even when the handler waits first', async () => {
    const kernel = await tracedKernel();
    const b = forceCloseAfter(await serve(() => new Response(200, 'b'), { kernel, host: '127.0.0.1', port: 0 }));
    const client = closeAfter(kernel.client());
    const a = forceCloseAfter(
      await serve(
        async () => {
          await new Promise<void>((r) => setImmediate(r));
          const [x] = await Promise.all([client.request('GET', `http://127.0.0.1:${b.port}/b`)]);
          return new Response(200, x.text());
        },
        { kernel, host: '127.0.0.1', port: 0 },
      ),
    );
    await (await fetch(`http://127.0.0.1:${a.port}/a`)).text();
    expectOneTrace(hop(await spans(3)));
  });
});
