/**
 * What the client and server spans share: the HTTP semantic conventions' method and protocol
 * values, `error.type`, and the header carrier the propagator reads and writes.
 */
import type { TextMapGetter, TextMapSetter } from '@opentelemetry/api';
import type { Headers } from '../../kernel/index.js';

/** Methods the conventions name; any other is reported as `_OTHER` (its spelling in `http.request.method_original`). */
const KNOWN_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH', 'QUERY']);

/** `http.request.method` of `method`: itself when known, else `_OTHER` (a method is a token of any spelling, so unbounded). */
export function methodAttribute(method: string): string {
  return KNOWN_METHODS.has(method) ? method : '_OTHER';
}

/** A span's name for `method`: the method, or `HTTP` for one the conventions do not know. */
export function methodName(method: string): string {
  return KNOWN_METHODS.has(method) ? method : 'HTTP';
}

/** `network.protocol.version` of an ALPN protocol name (`http/1.1` → `1.1`, `h2` → `2`), or undefined. */
export function protocolVersion(protocol: string): string | undefined {
  if (protocol === 'h2' || protocol === 'h2c') return '2';
  if (protocol.startsWith('http/')) return protocol.slice(5);
  return undefined;
}

/**
 * `error.type` of a failure: the error's `code` when it has a string one (switchyard's errors
 * do: `SWY_ERR_CONNECT`; Node's too: `ECONNRESET`), else its class name, else `_OTHER`. Low
 * cardinality, as the conventions ask: never the message.
 */
export function errorType(err: unknown): string {
  if (typeof err === 'object' && err !== null) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string' && code !== '') return code;
    const name = (err as { constructor?: { name?: unknown } }).constructor?.name;
    if (typeof name === 'string' && name !== '' && name !== 'Object') return name;
  }
  return '_OTHER';
}

/** `host[:port]` of a Host header or an authority split into the address (brackets dropped) and the port, NaN when absent. */
export function splitHost(host: string): { address: string; port: number } {
  if (host.startsWith('[')) {
    const end = host.indexOf(']');
    if (end < 0) return { address: host, port: NaN };
    const rest = host.slice(end + 1);
    return { address: host.slice(1, end), port: rest.startsWith(':') ? Number(rest.slice(1)) : NaN };
  }
  const colon = host.lastIndexOf(':');
  if (colon < 0) return { address: host, port: NaN };
  return { address: host.slice(0, colon), port: Number(host.slice(colon + 1)) };
}

/** The propagator's view of a request's headers, for `extract`: every value of a repeated field (`tracestate` may be split). */
export const headersGetter: TextMapGetter<Headers> = {
  keys: (carrier) => carrier.keys(),
  get: (carrier, key) => {
    const all = carrier.getAll(key);
    return all.length === 0 ? undefined : all.length === 1 ? all[0] : all;
  },
};

/** The propagator's writer of a request's headers, for `inject`: it replaces, so a resent request carries one `traceparent`. */
export const headersSetter: TextMapSetter<Headers> = {
  set: (carrier, key, value) => carrier.set(key, value),
};
