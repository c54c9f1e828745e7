/**
 * What a server says when a handler returns something other than a `Response`: what it
 * returned, and the `Response` to return instead.
 */

function isFetchResponse(value: unknown): boolean {
  return typeof globalThis.Response === 'function' && value instanceof globalThis.Response;
}

/** Short description of a handler's wrong return value. */
function shown(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (value === null) return 'null';
  if (typeof value === 'string') return `a string (${JSON.stringify(value.length > 30 ? `${value.slice(0, 30)}…` : value)})`;
  if (typeof value === 'number') return `the number ${value}`;
  if (value instanceof Uint8Array) return `${value.length} bytes`;
  if (isFetchResponse(value)) return "the fetch API's Response";
  if (typeof value === 'object') {
    const ctor = (value as object).constructor?.name;
    return ctor !== undefined && ctor !== 'Object' ? `a ${ctor}` : 'a plain object';
  }
  return `a ${typeof value}`;
}

/** What to return instead of `value`. */
function instead(value: unknown): string {
  if (value === undefined) return 'return new Response(status, body) from every path of the handler (a missing return gives undefined)';
  if (typeof value === 'string' || value instanceof Uint8Array) return 'return new Response(200, body) instead';
  if (typeof value === 'number') return `return new Response(${value}) instead`;
  if (isFetchResponse(value))
    return "return this library's Response (new Response(status, body, { headers })), or serve a fetch-style handler with serveFetch(handler) or listen(fetchHandler(handler))";
  if (typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype) {
    return "to send JSON, return new Response(200, JSON.stringify(value), { headers: { 'Content-Type': 'application/json' } })";
  }
  return 'return new Response(status, body, { headers })';
}

/**
 * @internal The error a server reports for a handler (`who`: "request handler", "route
 * handler for GET /x", …) that returned or resolved to `value`, not a `Response`: it names
 * what came back and what to return. The client gets 500.
 */
export function notAResponse(value: unknown, who = 'request handler'): TypeError {
  return new TypeError(`${who} returned ${shown(value)}, not a Response: ${instead(value)}`);
}

/**
 * @internal The error a server reports for a fetch-style handler that returned or resolved to
 * `value`, not a global (web) `Response`. The client gets 500.
 */
export function notAWebResponse(value: unknown): TypeError {
  const hint = value === undefined ? ' (a missing return gives undefined)' : '';
  return new TypeError(`fetch handler returned ${shown(value)}, not a web Response: return new Response(body, { status, headers }) with the global Response${hint}`);
}
