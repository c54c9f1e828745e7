/**
 * Plugin `opentelemetry` (`switchyard/opentelemetry`): a SERVER span per request and a CLIENT
 * span per call, with the HTTP semantic conventions, W3C `traceparent` across the hop, and
 * retries as span events. The OpenTelemetry SDK is set up as an application does (here
 * exporting to memory, to print the trace); the order service calls the stock service, whose
 * first answer is a 503 that the retries plugin retries. Starts its own servers on 127.0.0.1,
 * prints the trace as a tree and exits.
 * Outside this repository, import `openTelemetry` from 'switchyard/opentelemetry'.
 *
 *   node --import tsx examples/opentelemetry.ts
 */
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import * as HTTP from '../index.js';
import { openTelemetry } from '../plugins/opentelemetry/index.js';

// The application's SDK set-up: the plugin uses the global provider and propagator by default.
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
trace.setGlobalTracerProvider(provider);
propagation.setGlobalPropagator(new W3CTraceContextPropagator());

const kernel = HTTP.createKernel().register([...HTTP.presets.defaults, openTelemetry({ ignore: (req) => req.target === '/health' })]);
await kernel.ready();

let stockCalls = 0;
kernel.route('GET', '/stock/{sku}', () => (++stockCalls === 1 ? new HTTP.Response(503, 'busy', { headers: { 'Retry-After': '0' } }) : new HTTP.Response(200, '7 left')));
const stock = await HTTP.serve(() => new HTTP.Response(404, ''), { kernel, host: '127.0.0.1', port: 0 });

const client = kernel.client();
const orders = await HTTP.serve(
  async (req) => {
    if (req.target === '/health') return new HTTP.Response(200, 'ok');
    // Runs inside the SERVER span: the call below becomes its child.
    const res = await client.get(`http://127.0.0.1:${stock.port}/stock/42`);
    return new HTTP.Response(200, `order ${req.target}: ${res.text()}`);
  },
  { kernel, host: '127.0.0.1', port: 0 },
);

// An outside caller (plain fetch, no tracing of its own).
console.log(await (await fetch(`http://127.0.0.1:${orders.port}/orders/1`)).text());
await (await fetch(`http://127.0.0.1:${orders.port}/health`)).text();

await kernel.close();
await orders.close();
await stock.close();

// The trace as a tree: each span under its parent.
const spans = exporter.getFinishedSpans();
const show = (span: ReadableSpan, depth: number): void => {
  const kind = ['INTERNAL', 'SERVER', 'CLIENT'][span.kind];
  const a = span.attributes;
  const events = span.events.map((e) => ` [${e.name} after ${String(e.attributes?.['http.response.status_code'])}]`).join('');
  console.log(`${'  '.repeat(depth)}${kind} ${span.name} ${String(a['http.response.status_code'])} (HTTP/${String(a['network.protocol.version'])})${events}`);
  for (const child of spans.filter((s) => s.parentSpanContext?.spanId === span.spanContext().spanId)) show(child, depth + 1);
};
const roots = spans.filter((s) => s.parentSpanContext === undefined);
const traces = new Set(spans.map((s) => s.spanContext().traceId)).size;
console.log(`${spans.length} spans in ${traces} trace${traces === 1 ? '' : 's'} (/health ignored):`);
for (const root of roots) show(root, 1);
await provider.shutdown();
