/**
 * Header conversion between the kernel's `Headers` and node:http2's header objects: names go
 * lowercase on the wire, connection-specific fields (RFC 9113 §8.2.2) are dropped, pseudo-headers
 * never become ordinary headers, and names read from the wire are stored in canonical form.
 */
import { eqIgnoreCase, type Headers } from '../../kernel/index.js';
import { checkTrailers, headersFromFields, isForbiddenTrailer } from '../../kernel/protocol.js';

/** An outgoing header block for node:http2: lowercase names, repeated names as arrays. */
export type H2HeaderObject = Record<string, string | string[] | number>;

/** Fields HTTP/2 forbids (connection-specific) or frames itself; `te` is handled apart. */
const DROP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'content-length', 'host', 'http2-settings']);

// The per-header cost on the way out is the lowercasing and the check against DROP: both are
// answered by one lookup in a cache of the names seen ('' for a name that is dropped).
const wireNames = new Map<string, string>();

function wireName(name: string): string {
  let l = wireNames.get(name);
  if (l === undefined) {
    l = name.toLowerCase();
    if (DROP.has(l)) l = '';
    if (wireNames.size < 1024) wireNames.set(name, l);
  }
  return l;
}

/**
 * Adds `headers` to `out` in wire form. `Content-Length`, `Host` and connection-specific
 * fields are left out (the caller sets `content-length` and `:authority` itself); `TE` passes
 * only as `trailers`.
 */
export function addWireHeaders(headers: Headers, out: H2HeaderObject): void {
  const names = headers._names;
  const values = headers._values;
  for (let i = 0; i < names.length; i++) {
    const name = wireName(names[i]!);
    if (name === '') continue;
    const value = values[i]!;
    if (name === 'te') {
      if (value.trim().toLowerCase() === 'trailers') out.te = 'trailers';
      continue;
    }
    const had = out[name];
    if (had === undefined) out[name] = value;
    else if (Array.isArray(had)) had.push(value);
    else out[name] = [String(had), value];
  }
}

/** Headers from a node:http2 header object (no rawHeaders at hand: trailers, informational heads). */
export function headersFromObject(obj: Record<string, string | string[] | number | undefined>): Headers {
  const fields: string[] = [];
  for (const name of Object.keys(obj)) {
    const v = obj[name];
    if (v === undefined) continue;
    if (Array.isArray(v)) for (const x of v) fields.push(name, x);
    else fields.push(name, String(v));
  }
  return headersFromFields(fields, false);
}

/**
 * Received trailers as kernel Headers, without the fields that may not trail (RFC 9110 §6.5.1:
 * framing, routing, authentication, content format, controls; the kernel's FORBIDDEN_TRAILERS):
 * a trailer must not change how the message before it is read, so they are dropped as the
 * HTTP/1 reader drops them.
 */
export function trailersFromObject(obj: Record<string, string | string[] | number | undefined>): Headers {
  const fields: string[] = [];
  for (const name of Object.keys(obj)) {
    const v = obj[name];
    if (v === undefined || isForbiddenTrailer(name)) continue;
    if (Array.isArray(v)) for (const x of v) fields.push(name, x);
    else fields.push(name, String(v));
  }
  return headersFromFields(fields, false);
}

/**
 * Trailers to send in wire form. Throws `ArgumentError` for a field that may not trail or an
 * invalid name or value (the kernel's `checkTrailers`, as HTTP/1 applies it), instead of
 * dropping it as {@link addWireHeaders} drops connection-specific header fields.
 */
export function wireTrailers(trailers: Headers): H2HeaderObject {
  checkTrailers(trailers);
  const out: H2HeaderObject = {};
  addWireHeaders(trailers, out);
  return out;
}

/** The size of a header list as HTTP/2 counts it (RFC 9113 §6.5.2): name + value + 32 per field. */
export function headerListSize(raw: readonly string[]): number {
  let n = 0;
  for (let i = 0; i < raw.length; i++) n += raw[i]!.length;
  return n + (raw.length >> 1) * 32;
}

/**
 * A request field list with its `cookie` fields joined into one, with `"; "`, where the first
 * one was (RFC 9113 §8.2.3: a client may send each cookie as a field of its own, and a reader
 * of the HTTP/1-style `Cookie` header expects one). With `dropHost`, `host` fields are left
 * out. Returns a new list; the caller only asks when there is something to change.
 */
export function normalizeRequestFields(list: readonly string[], dropHost: boolean): string[] {
  const out: string[] = [];
  let cookieAt = -1;
  for (let i = 0; i + 1 < list.length; i += 2) {
    const name = list[i]!;
    const value = list[i + 1]!;
    if (name === 'cookie') {
      if (cookieAt >= 0) {
        out[cookieAt] += `; ${value}`;
        continue;
      }
      cookieAt = out.length + 1;
    } else if (dropHost && name === 'host') continue;
    out.push(name, value);
  }
  return out;
}

/**
 * True when a request's `host` field names the same authority as its `:authority` (RFC 9113
 * §8.3.1, compared as RFC 3986 §6.2.2–6.2.3 normalizes: host case-insensitive, the scheme's
 * default port the same as none).
 */
export function sameAuthority(authority: string, host: string, scheme: string | undefined): boolean {
  if (authority === host) return true;
  const a = withoutDefaultPort(authority, scheme);
  return eqIgnoreCase(a, withoutDefaultPort(host, scheme));
}

function withoutDefaultPort(authority: string, scheme: string | undefined): string {
  const port = scheme === 'https' ? ':443' : scheme === 'http' ? ':80' : null;
  return port !== null && authority.endsWith(port) ? authority.slice(0, -port.length) : authority;
}
