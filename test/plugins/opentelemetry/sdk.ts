/**
 * The OpenTelemetry SDK as an application sets it up, for the plugin's tests: a tracer provider
 * exporting to memory, the AsyncLocalStorage context manager and the W3C trace-context
 * propagator registered as the globals (the plugin's defaults), and helpers that wait for the
 * exported spans and read their parent links. Registered for the test file that imports it;
 * its spans are cleared after each test.
 */
import { context, propagation, trace, type SpanContext } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { waitFor } from '../../helpers/server.js';

/** Where every span of the test file ends up. */
export const exporter = new InMemorySpanExporter();
/** The provider the tests pass as `tracerProvider` (and register globally). */
export const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
/** The propagator the tests pass as `propagator` (and register globally). */
export const propagator = new W3CTraceContextPropagator();

beforeAll(() => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(provider);
  propagation.setGlobalPropagator(propagator);
});

afterEach(() => {
  exporter.reset();
});

afterAll(async () => {
  await provider.shutdown();
  trace.disable();
  propagation.disable();
  context.disable();
});

/** Waits until `n` spans were exported; returns them. */
export async function spans(n: number): Promise<ReadableSpan[]> {
  await waitFor(() => exporter.getFinishedSpans().length >= n, 5000, `${n} exported spans (got ${exporter.getFinishedSpans().length})`);
  return exporter.getFinishedSpans();
}

/** The span id of `span`'s parent, or undefined for a root span. */
export function parentId(span: ReadableSpan): string | undefined {
  return span.parentSpanContext?.spanId;
}

/** The span context of `span`. */
export function ids(span: ReadableSpan): SpanContext {
  return span.spanContext();
}
