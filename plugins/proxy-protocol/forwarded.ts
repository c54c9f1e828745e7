/**
 * Who the client of a request is, as the proxies in front tell it in `X-Forwarded-For`
 * (`-Proto`, `-Host`) or `Forwarded` (RFC 7239), believed only as far as they are trusted.
 *
 * The walk is proxy-addr's (express, fastify): start at the connection's peer; while the
 * address at hand is trusted, step to the hop it forwarded for (the nearest entry of the
 * header not used yet); the first untrusted one, or the farthest, is the client. Trust is a
 * CIDR list (an address is trusted when it is in it), a hop count (the first n addresses
 * counting the peer), or everything. So an untrusted peer's headers are never read, and what a
 * client writes into them itself only ever names an address beyond the last trusted proxy.
 */
import { isIPv4, isIPv6 } from 'node:net';
import type { Headers } from '../../kernel/index.js';
import type { TrustList } from './trust.js';

/** What a server was told to trust: nothing, everything, the n nearest hops, or a list. */
export type Trust = false | true | number | TrustList;

/** Which headers the trusted proxies set. */
export type ForwardedHeaders = 'x-forwarded' | 'forwarded';

/** A request's client as the trusted proxies in front report it. */
export interface ForwardedClient {
  /** The client's address (fastify's `request.ip`): an IP address, or what a `Forwarded` header says in its place (`unknown`, an obfuscated `_name`). */
  readonly address: string;
  /** The addresses from the connection's peer outwards to `address`, nearest first (fastify's `request.ips`). */
  readonly addresses: readonly string[];
  /** The scheme the client used, `http` or `https` (fastify's `request.protocol`). */
  readonly scheme: string;
  /** The host (and port) the client asked for (fastify's `request.host`), or null when the request named none. */
  readonly host: string | null;
}

/**
 * The client of `headers`' request on a connection from `peer` (the TLS one when `tls`): what
 * the trusted hops forwarded, from the headers `which` names; `direct` (the request's own
 * Host) when none forwarded a host.
 */
export function forwardedClient(peer: string, tls: boolean, direct: string | null, headers: Headers, trust: Trust, which: ForwardedHeaders): ForwardedClient {
  const addresses = [peer];
  let scheme = tls ? 'https' : 'http';
  let host = direct;
  if (!trusts(trust, peer, 0)) return { address: peer, addresses, scheme, host };
  if (which === 'x-forwarded') {
    const fwd = listOf(field(headers, 'X-Forwarded-For'));
    for (let i = fwd.length - 1; i >= 0; i--) {
      const a = nodeAddress(fwd[i]!);
      addresses.push(a);
      if (!trusts(trust, a, addresses.length - 1)) break;
    }
    // As fastify: the nearest proxy's word (each one overwrites or appends its own).
    const proto = last(listOf(field(headers, 'X-Forwarded-Proto')));
    if (proto !== undefined && SCHEME.test(proto)) scheme = proto.toLowerCase();
    const h = last(listOf(field(headers, 'X-Forwarded-Host')));
    if (h !== undefined && HOST.test(h)) host = h;
  } else {
    const elements = parseForwarded(field(headers, 'Forwarded'));
    // A malformed header is no word at all: the peer stays the client.
    for (let i = (elements?.length ?? 0) - 1; i >= 0; i--) {
      const e = elements![i]!;
      // What this element's proxy saw of the hop it forwarded for: that hop's scheme and host.
      if (e.proto !== undefined && SCHEME.test(e.proto)) scheme = e.proto.toLowerCase();
      if (e.host !== undefined && HOST.test(e.host)) host = e.host;
      const a = e.for === undefined ? 'unknown' : nodeAddress(e.for);
      addresses.push(a);
      if (!trusts(trust, a, addresses.length - 1)) break;
    }
  }
  return { address: addresses[addresses.length - 1]!, addresses, scheme, host };
}

function trusts(trust: Trust, address: string, hop: number): boolean {
  if (typeof trust === 'boolean') return trust;
  if (typeof trust === 'number') return hop < trust;
  return trust.has(address);
}

/** A URI scheme (RFC 3986 §3.1). */
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*$/;
/** A host with an optional port, as the Host header takes it (RFC 9110 §7.2): a bracketed IPv6 literal or a reg-name/IPv4. */
const HOST = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9!$&'()*+,;=._~%-]+)(?::\d{1,5})?$/;

/** Every line of a list field, joined as one (RFC 9110 §5.3): a proxy may append its own line rather than extend the first. */
function field(headers: Headers, name: string): string | undefined {
  const all = headers.getAll(name);
  return all.length === 0 ? undefined : all.join(',');
}

function listOf(v: string | undefined): string[] {
  if (v === undefined) return [];
  return v
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function last(list: string[]): string | undefined {
  return list[list.length - 1];
}

/**
 * The address of a node as a header names it: an IP address without brackets or port
 * (`[2001:db8::1]:4711` → `2001:db8::1`, `192.0.2.43:47011` → `192.0.2.43`); anything else (an
 * RFC 7239 obfuscated identifier, `unknown`, garbage) as written, which no CIDR list trusts.
 */
function nodeAddress(node: string): string {
  if (node.startsWith('[')) {
    const close = node.indexOf(']');
    const inner = close > 0 ? node.slice(1, close) : '';
    const after = close > 0 ? node.slice(close + 1) : '';
    if (isIPv6(inner) && (after === '' || /^:(?:\d{1,5}|_[A-Za-z0-9._-]+)$/.test(after))) return inner;
    return node;
  }
  if (isIPv4(node) || isIPv6(node)) return node;
  const colon = node.lastIndexOf(':');
  if (colon > 0 && isIPv4(node.slice(0, colon)) && /^(?:\d{1,5}|_[A-Za-z0-9._-]+)$/.test(node.slice(colon + 1))) return node.slice(0, colon);
  return node;
}

/** One forwarded-element's parameters (RFC 7239 §4), names lowercased. */
interface Element {
  for?: string;
  by?: string;
  proto?: string;
  host?: string;
}

const TCHAR = /[!#$%&'*+.^_`|~0-9A-Za-z-]/;

/**
 * The elements of a `Forwarded` field value (lines already joined with commas), in order; null
 * when it does not parse (RFC 7239 §4: `pair *( ";" pair )`, elements comma-separated, values
 * tokens or quoted strings, a parameter at most once per element).
 */
export function parseForwarded(value: string | undefined): Element[] | null {
  if (value === undefined) return [];
  const out: Element[] = [];
  let i = 0;
  const n = value.length;
  const ows = (): void => {
    while (i < n && (value[i] === ' ' || value[i] === '\t')) i++;
  };
  let element = new Map<string, string>();
  let empty = true;
  for (;;) {
    ows();
    // An empty list element (`a, , b`) is allowed by the list rule; an empty pair is not.
    if (i < n && value[i] !== ',' && value[i] !== ';') {
      const start = i;
      while (i < n && TCHAR.test(value[i]!)) i++;
      const name = value.slice(start, i).toLowerCase();
      if (name === '' || value[i] !== '=') return null;
      i++;
      let v: string;
      if (value[i] === '"') {
        i++;
        v = '';
        for (;;) {
          if (i >= n) return null;
          const c = value[i]!;
          if (c === '"') {
            i++;
            break;
          }
          if (c === '\\') {
            if (i + 1 >= n) return null;
            v += value[i + 1];
            i += 2;
            continue;
          }
          if (c < ' ' && c !== '\t') return null;
          v += c;
          i++;
        }
      } else {
        const s = i;
        while (i < n && TCHAR.test(value[i]!)) i++;
        v = value.slice(s, i);
        if (v === '') return null;
      }
      if (element.has(name)) return null;
      element.set(name, v);
      empty = false;
      ows();
    }
    if (i >= n || value[i] === ',') {
      if (!empty) out.push({ for: element.get('for'), by: element.get('by'), proto: element.get('proto'), host: element.get('host') });
      element = new Map();
      empty = true;
      if (i >= n) return out;
      i++;
      continue;
    }
    if (value[i] === ';') {
      i++;
      continue;
    }
    return null;
  }
}
