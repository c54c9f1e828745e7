/**
 * `NoProxy`: the hosts reached directly, in the format of the `NO_PROXY` variable (curl's
 * reading where tools differ).
 *
 * Entries, separated by commas (spaces around them are ignored), each optionally `:port`:
 * - `*` alone: every host;
 * - a host name or domain suffix: `example.com`, `.example.com` and `*.example.com` all match
 *   `example.com` and every name under it (curl; Go's `.example.com` skips the bare name).
 *   Case and trailing dots are ignored on both sides;
 * - an IP address (`10.1.2.3`, `::1`, `[::1]`, `[::1]:8080`) matches that address as the URL's
 *   host (names are never resolved to check them);
 * - a CIDR range (`10.0.0.0/8`, `fd00::/8`, `[fd00::]/8:443`); IPv4 ranges also match the
 *   IPv4-mapped IPv6 form of their addresses.
 * An IPv6 entry with a port must use brackets (`::1:80` is the address `::1:80`).
 *
 * `localhost`, names under `.localhost` (RFC 6761) and loopback addresses (127.0.0.0/8, `::1`)
 * always match, whatever the list says.
 */
import { ArgumentError } from '../../kernel/index.js';
import { prefixEqual } from '../../kernel/index.js';
import { isLoopback, isV4Mapped, parseIP, V4_OFFSET_BITS } from './ip.js';

/** What `NoProxy` accepts: the `NO_PROXY` string, or its entries as an array. */
export type NoProxySpec = string | readonly string[];

type Entry =
  { readonly kind: 'all' } | { readonly kind: 'name'; readonly name: string; readonly port: number } | { readonly kind: 'ip'; readonly ip: Uint8Array; readonly bits: number; readonly port: number };

/** Hosts that are reached without a proxy (the reference's `NoProxy(spec)`). */
export class NoProxy {
  /** The entries as given (trimmed, empty ones dropped), for display. */
  readonly entries: readonly string[];
  private readonly parsed: readonly Entry[];
  private readonly all: boolean;

  /**
   * `new NoProxy('example.com,.internal,10.0.0.0/8,[::1]:8080')`, or an array of entries;
   * `new NoProxy()` holds only the always-direct localhost and loopback rule. Throws
   * `ArgumentError` for an entry it cannot read (a bad port or prefix length), naming it;
   * with `lenient` (how environment variables are read) such entries are skipped.
   */
  constructor(spec: NoProxySpec | null = null, options: { lenient?: boolean } = {}) {
    const raw = spec === null ? [] : typeof spec === 'string' ? spec.split(',') : Array.isArray(spec) ? spec.flatMap((s) => checkString(s).split(',')) : invalid(spec);
    const entries: string[] = [];
    const parsed: Entry[] = [];
    for (const r of raw) {
      const e = r.trim();
      if (e === '') continue;
      const entry = parseEntry(e.toLowerCase());
      if (typeof entry === 'string') {
        if (options.lenient === true) continue;
        throw new ArgumentError(`NoProxy: cannot read entry ${JSON.stringify(e)}: ${entry}`);
      }
      entries.push(e);
      parsed.push(entry);
    }
    this.entries = Object.freeze(entries);
    this.parsed = parsed;
    this.all = parsed.some((p) => p.kind === 'all');
  }

  /**
   * True when `host` (a URL host name or IP literal; IPv6 with or without brackets) on `port`
   * is reached directly. `port` is the effective port (80/443 filled in); 0 matches any entry.
   */
  matches(host: string, port = 0): boolean {
    if (this.all) return true;
    const h = normalizeHost(host);
    const ip = parseIP(h);
    if (ip !== null ? isLoopback(ip) : h === 'localhost' || h.endsWith('.localhost')) return true;
    for (const e of this.parsed) {
      if (e.kind === 'all') continue; // handled by this.all
      if (e.port !== 0 && port !== 0 && e.port !== port) continue;
      if (e.kind === 'name') {
        if (ip === null && (h === e.name || (h.length > e.name.length && h.endsWith(e.name) && h.charCodeAt(h.length - e.name.length - 1) === 0x2e))) return true;
      } else if (ip !== null && prefixEqual(ip, e.ip, e.bits)) return true;
    }
    return false;
  }

  /** The entries joined with commas, as a `NO_PROXY` value. */
  toString(): string {
    return this.entries.join(',');
  }
}

function checkString(s: unknown): string {
  if (typeof s !== 'string') throw new ArgumentError(`NoProxy: entries must be strings, got ${s === null ? 'null' : typeof s}`);
  return s;
}

function invalid(spec: unknown): never {
  throw new ArgumentError(`NoProxy takes a comma-separated string or an array of strings, got ${spec === null ? 'null' : typeof spec}`);
}

/** Lower case, no brackets, no trailing dots. */
function normalizeHost(host: string): string {
  let h = host.toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  let end = h.length;
  while (end > 0 && h.charCodeAt(end - 1) === 0x2e) end--;
  return end === h.length ? h : h.slice(0, end);
}

/** One lower-cased entry: the parsed form, or why it cannot be read. */
function parseEntry(e: string): Entry | string {
  if (e === '*') return { kind: 'all' };
  let host: string;
  let port = 0;
  let bracketed = false;
  if (e.startsWith('[')) {
    const close = e.indexOf(']');
    if (close < 0) return 'missing "]"';
    host = e.slice(1, close);
    let rest = e.slice(close + 1);
    const slash = rest.match(/^\/\d+/);
    if (slash !== null) {
      host += slash[0];
      rest = rest.slice(slash[0].length);
    }
    if (rest !== '') {
      if (!rest.startsWith(':')) return `unexpected ${JSON.stringify(rest)} after "]"`;
      const p = parsePort(rest.slice(1));
      if (typeof p === 'string') return p;
      port = p;
    }
    bracketed = true;
  } else {
    const colons = e.split(':').length - 1;
    if (colons === 1) {
      const i = e.indexOf(':');
      const p = parsePort(e.slice(i + 1));
      if (typeof p === 'string') return p;
      port = p;
      host = e.slice(0, i);
    } else host = e; // no port, or an IPv6 literal (only bracketed IPv6 takes a port)
  }
  const slash = host.indexOf('/');
  if (slash >= 0) {
    const ip = parseIP(host.slice(0, slash));
    if (ip === null) return `${JSON.stringify(host.slice(0, slash))} before "/" is not an IP address`;
    const lenText = host.slice(slash + 1);
    if (!/^\d{1,3}$/.test(lenText)) return `prefix length ${JSON.stringify(lenText)} is not a number`;
    const len = Number(lenText);
    const v4 = isV4Mapped(ip) && !host.slice(0, slash).includes(':');
    const max = v4 ? 32 : 128;
    if (len > max) return `prefix length ${len} is larger than ${max}`;
    return { kind: 'ip', ip, bits: v4 ? V4_OFFSET_BITS + len : len, port };
  }
  const ip = parseIP(host);
  if (ip !== null) return { kind: 'ip', ip, bits: 128, port };
  if (bracketed) return `${JSON.stringify(host)} in brackets is not an IPv6 address`;
  // A name: `*.example.com` and `.example.com` mean the same as `example.com`.
  let name = host.startsWith('*.') ? host.slice(2) : host.startsWith('.') ? host.slice(1) : host;
  name = normalizeHost(name);
  if (name === '' || /[\s/*[\]@]/.test(name)) return 'not a host name, domain, IP address or CIDR range';
  return { kind: 'name', name, port };
}

function parsePort(s: string): number | string {
  if (!/^\d{1,5}$/.test(s) || Number(s) < 1 || Number(s) > 65535) return `port ${JSON.stringify(s)} is not a number from 1 to 65535`;
  return Number(s);
}
