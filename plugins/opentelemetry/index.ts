/**
 * switchyard/opentelemetry: OpenTelemetry traces for switchyard clients and servers.
 *
 * `kernel.register(openTelemetry(options))` makes a CLIENT span per client call and a SERVER
 * span per request with the current HTTP semantic conventions, propagates the trace through
 * `traceparent`/`tracestate` (the configured propagator: W3C trace context by default once
 * the SDK registers it), and records retries and redirects as span events. It is built on
 * `@opentelemetry/api` alone, an optional peer dependency: nothing else of switchyard loads it.
 * Client spans: ./client.ts; server spans: ./server.ts.
 */
import { propagation, trace, type TextMapPropagator, type TracerProvider } from '@opentelemetry/api';
import { ArgumentError, checkOptionKeys, definePlugin, type Plugin, type Request } from '../../kernel/index.js';
import { traceClients } from './client.js';
import { traceServers } from './server.js';

/** The plugin's name, also the name of its taps. */
export const OPENTELEMETRY_PLUGIN = 'opentelemetry';

/** Options of {@link openTelemetry}. */
export interface OpenTelemetryOptions {
  /** Where the tracer comes from. Default: the global provider (`trace.getTracer`), as registered by the SDK. */
  tracerProvider?: TracerProvider;
  /** Injects and extracts the trace context in headers. Default: the global propagator (`propagation`), as registered by the SDK. */
  propagator?: TextMapPropagator;
  /** A SERVER span per request of this kernel's servers. Default true. */
  serverSpans?: boolean;
  /** A CLIENT span per call of this kernel's clients. Default true. */
  clientSpans?: boolean;
  /**
   * Requests to leave untraced (health checks, the exporter's own calls): for a server, the
   * incoming request; for a client, the call's request before its first attempt. No span is
   * made, and no trace context is injected or read.
   */
  ignore?: (request: Request) => boolean;
}

/** The name of the plugin's tracer (its instrumentation scope), as trace backends show it. */
export const TRACER_NAME = 'switchyard';

const OPTIONS: ReadonlySet<string> = new Set(['tracerProvider', 'propagator', 'serverSpans', 'clientSpans', 'ignore']);

/**
 * The OpenTelemetry plugin, configured: `kernel.register(openTelemetry())`. Options are
 * checked here: an unknown key or a value of the wrong kind is an `ArgumentError`. Each call
 * makes a new plugin; a kernel takes one.
 */
export function openTelemetry(options: OpenTelemetryOptions = {}): Plugin {
  if (typeof options !== 'object' || options === null) throw new ArgumentError(`openTelemetry(options): options must be an object, got ${options === null ? 'null' : typeof options}`);
  checkOptionKeys(options, OPTIONS, 'openTelemetry()');
  const { tracerProvider, propagator, serverSpans = true, clientSpans = true, ignore } = options;
  if (tracerProvider !== undefined && typeof (tracerProvider as Partial<TracerProvider> | null)?.getTracer !== 'function') {
    throw new ArgumentError('openTelemetry(): tracerProvider must be an OpenTelemetry TracerProvider (an object with getTracer)');
  }
  if (propagator !== undefined && (typeof (propagator as Partial<TextMapPropagator> | null)?.inject !== 'function' || typeof propagator.extract !== 'function')) {
    throw new ArgumentError('openTelemetry(): propagator must be an OpenTelemetry TextMapPropagator (an object with inject and extract)');
  }
  for (const [key, value] of [
    ['serverSpans', serverSpans],
    ['clientSpans', clientSpans],
  ] as const) {
    if (typeof value !== 'boolean') throw new ArgumentError(`openTelemetry(): ${key} must be a boolean, got ${typeof value}`);
  }
  if (ignore !== undefined && typeof ignore !== 'function') throw new ArgumentError(`openTelemetry(): ignore must be a function (request) => boolean, got ${ignore === null ? 'null' : typeof ignore}`);
  return definePlugin({
    name: OPENTELEMETRY_PLUGIN,
    register(kernel) {
      const tracer = tracerProvider !== undefined ? tracerProvider.getTracer(TRACER_NAME) : trace.getTracer(TRACER_NAME);
      const t = { tracer, propagator: propagator ?? propagation, ignore: ignore ?? null };
      const stops: (() => void)[] = [];
      if (serverSpans) stops.push(traceServers(kernel, OPENTELEMETRY_PLUGIN, t));
      if (clientSpans) stops.push(traceClients(kernel, OPENTELEMETRY_PLUGIN, t));
      // The channels are the process's: a closed kernel leaves no subscriber behind.
      kernel.onClose(() => {
        for (const stop of stops) stop();
      });
    },
  });
}
