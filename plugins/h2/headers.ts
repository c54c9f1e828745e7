/**
 * Header conversion between the kernel's `Headers` and node:http2's header objects: names go
 * lowercase on the wire, connection-specific fields (RFC 9113 §8.2.2) are dropped, pseudo-headers
 * never become ordinary headers, and names read from the wire are stored in canonical form.
 */
import { canonicalHeaderKey, Headers } from '../../kernel/index.js';

/** An outgoing header block for node:http2: lowercase names, repeated names as arrays. */
export type H2HeaderObject = Record<string, string | string[] | number>;

/** Fields HTTP/2 forbids (connection-specific) or frames itself; `te` is handled apart. */
const DROP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'content-length', 'host', 'http2-settings']);

// Lowercasing is the per-header cost on the way out: the usual names are cached.
const lowerCache = new Map<string, string>();

function lower(name: string): string {
  let l = lowerCache.get(name);
  if (l === undefined) {
    l = name.toLowerCase();
    if (lowerCache.size < 1024) lowerCache.set(name, l);
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
    const name = lower(names[i]!);
    if (DROP.has(name)) continue;
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

const canonicalCache = new Map<string, string>();

/** Canonical spelling of a lowercase wire name (cached: the usual names repeat on every request). */
export function canonicalName(name: string): string {
  let c = canonicalCache.get(name);
  if (c === undefined) {
    c = canonicalHeaderKey(name);
    if (canonicalCache.size < 1024) canonicalCache.set(name, c);
  }
  return c;
}

/** The request pseudo-headers of a header block. */
export interface RequestPseudo {
  method: string | undefined;
  path: string | undefined;
  authority: string | undefined;
  scheme: string | undefined;
}

/**
 * Headers read from the wire, from node's flat `rawHeaders` list (`[name, value, …]` in
 * arrival order), pseudo-headers skipped. `pseudo`, when given, receives the request's.
 * With `hostFromAuthority`, a request without `Host` gets one from `:authority` (HTTP/1
 * handlers read Host; RFC 9113 §8.3.1).
 */
export function headersFromRaw(raw: readonly string[], pseudo: RequestPseudo | null, hostFromAuthority = false): Headers {
  // Arrays of the exact size: pushing onto empty ones reserves 17 slots each.
  let n = 0;
  let host = false;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.charCodeAt(0) === 0x3a) {
      if (pseudo !== null) {
        const v = raw[i + 1]!;
        if (name === ':method') pseudo.method = v;
        else if (name === ':path') pseudo.path = v;
        else if (name === ':authority') pseudo.authority = v;
        else if (name === ':scheme') pseudo.scheme = v;
      }
      continue;
    }
    if (name === 'host') host = true;
    n++;
  }
  const addHost = hostFromAuthority && !host && pseudo !== null && pseudo.authority !== undefined;
  const size = addHost ? n + 1 : n;
  const names = new Array<string>(size);
  const values = new Array<string>(size);
  let j = 0;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.charCodeAt(0) === 0x3a) continue;
    names[j] = canonicalName(name);
    values[j] = raw[i + 1]!;
    j++;
  }
  if (addHost) {
    names[j] = 'Host';
    values[j] = pseudo!.authority!;
  }
  const h = new Headers();
  h._names = names;
  h._values = values;
  return h;
}

/** Headers from a node:http2 header object (no rawHeaders at hand: trailers, informational heads). */
export function headersFromObject(obj: Record<string, string | string[] | number | undefined>): Headers {
  const h = new Headers();
  for (const name of Object.keys(obj)) {
    if (name.charCodeAt(0) === 0x3a) continue;
    const v = obj[name];
    if (v === undefined) continue;
    const c = canonicalName(name);
    if (Array.isArray(v)) for (const x of v) h.push(c, x);
    else h.push(c, String(v));
  }
  return h;
}

/** The size of a header list as HTTP/2 counts it (RFC 9113 §6.5.2): name + value + 32 per field. */
export function headerListSize(raw: readonly string[]): number {
  let n = 0;
  for (let i = 0; i < raw.length; i++) n += raw[i]!.length;
  return n + (raw.length >> 1) * 32;
}
