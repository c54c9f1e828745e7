/**
 * Request-target forms and the Host grammar: which target a method may use (RFC 9112 §3.2) and
 * what a Host value or a target's authority may hold (RFC 9110 §7.2, RFC 3986 §3.2). The head
 * parser applies them to what it reads, the serializer to what it writes.
 *
 * - origin-form `/path?query`: any method but CONNECT;
 * - absolute-form `scheme://authority[/path][?query]`: any method but CONNECT (requests to a
 *   proxy). Only URIs with an authority are taken (every `http`/`https` URI has one), with a
 *   non-empty host and no userinfo (RFC 9110 §4.2.4); the authority then stands for the Host;
 * - authority-form `host:port`: CONNECT only, and CONNECT only with it (RFC 9110 §9.3.6: the
 *   port is required);
 * - asterisk-form `*`: OPTIONS only.
 *
 * A Host value is `uri-host [":" port]`: a reg-name (which covers IPv4 addresses, percent-
 * encoding allowed), or an IPv6 or IPvFuture literal in brackets; the port is digits. An empty
 * value is valid: RFC 9110 §7.2 has a client send it when the target URI has no authority, and
 * a server then uses its own name (RFC 9112 §3.3).
 */
import { isIPv6 } from 'node:net';
import * as tables from './tables.js';

const REG_NAME: Uint8Array = tables.REG_NAME;
const HEX: Int8Array = tables.HEX;
const SLASH = 0x2f;
const COLON = 0x3a;
const PERCENT = 0x25;

/** IPvFuture of RFC 3986 §3.2.2 (inside the brackets): `v` HEXDIG+ `.` (unreserved / sub-delims / `:`)+. */
const IPV_FUTURE = /^[vV][0-9A-Fa-f]+\.[A-Za-z0-9\-._~!$&'()*+,;=:]+$/;

/**
 * End of the uri-host that starts `s[start..end)`: the index of the `:` before a port, or `end`;
 * -1 when the host is malformed. `nonEmpty` refuses an empty host.
 */
function hostEnd(s: string, start: number, end: number, nonEmpty: boolean): number {
  let i = start;
  if (i < end && s.charCodeAt(i) === 0x5b) {
    const close = s.indexOf(']', i + 1);
    if (close < 0 || close >= end) return -1;
    const literal = s.slice(i + 1, close);
    // isIPv6 takes a zone ("fe80::1%eth0"), which a Host may not carry.
    if (literal.includes('%') || !(isIPv6(literal) || IPV_FUTURE.test(literal))) return -1;
    i = close + 1;
    return i === end || s.charCodeAt(i) === COLON ? i : -1;
  }
  for (; i < end; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80 && REG_NAME[c] === 1) continue;
    if (c === COLON) break;
    if (c !== PERCENT || i + 2 >= end || !isHex(s.charCodeAt(i + 1)) || !isHex(s.charCodeAt(i + 2))) return -1;
    i += 2;
  }
  if (nonEmpty && i === start) return -1;
  return i;
}

function isHex(c: number): boolean {
  return c < 0x80 && HEX[c] !== -1;
}

/** True when `s[from..end)` is all digits; an empty port only when `required` is false. */
function isPort(s: string, from: number, end: number, required: boolean): boolean {
  if (from === end) return !required;
  for (let i = from; i < end; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return false;
  }
  return true;
}

/** True when `s[start..end)` is `uri-host [":" port]`; see the module notes. */
function isAuthority(s: string, start: number, end: number, nonEmptyHost: boolean, portRequired: boolean): boolean {
  const h = hostEnd(s, start, end, nonEmptyHost);
  if (h < 0) return false;
  if (h === end) return !portRequired;
  return isPort(s, h + 1, end, portRequired);
}

/**
 * True when `value` is a valid Host field value: `uri-host [":" port]` (RFC 9110 §7.2), so no
 * path, no userinfo, no spaces; an empty value is valid.
 */
export function isValidHost(value: string): boolean {
  return isAuthority(value, 0, value.length, false, false);
}

/**
 * Start of the authority of an absolute-form target (just after `scheme://`), or -1 when
 * `target` does not begin with a scheme and `://`.
 */
function authorityStart(target: string): number {
  const n = target.length;
  let i = 0;
  for (; i < n; i++) {
    const c = target.charCodeAt(i);
    const alpha = (c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a;
    if (alpha) continue;
    if (i === 0) return -1;
    if ((c >= 0x30 && c <= 0x39) || c === 0x2b || c === 0x2d || c === 0x2e) continue;
    break;
  }
  if (i === 0 || i + 3 > n || target.charCodeAt(i) !== COLON || target.charCodeAt(i + 1) !== SLASH || target.charCodeAt(i + 2) !== SLASH) return -1;
  return i + 3;
}

/** End of the authority that starts at `from`: the first `/`, `?` or `#`, or the end. */
function authorityEnd(target: string, from: number): number {
  const n = target.length;
  let i = from;
  while (i < n) {
    const c = target.charCodeAt(i);
    if (c === SLASH || c === 0x3f || c === 0x23) break;
    i++;
  }
  return i;
}

/**
 * Why `method` may not use request target `target` (RFC 9112 §3.2), as a sentence for an error
 * message, or null when it may. Checks the form and the authority, not the path's bytes.
 */
export function requestTargetError(method: string, target: string): string | null {
  const c0 = target.charCodeAt(0);
  const connect = method === 'CONNECT';
  if (c0 === SLASH && !connect) return null;
  const shown = JSON.stringify(target.length > 60 ? `${target.slice(0, 60)}...` : target);
  if (connect) {
    if (isAuthority(target, 0, target.length, true, true)) return null;
    return `CONNECT needs a host:port request target (authority-form), got ${shown}`;
  }
  if (target === '*') return method === 'OPTIONS' ? null : `request target * (asterisk-form) is only for OPTIONS, not ${method}`;
  const a = authorityStart(target);
  if (a < 0) return `request target ${shown} is not a path starting with "/" (origin-form) or an absolute URI with an authority`;
  const e = authorityEnd(target, a);
  if (target.lastIndexOf('@', e - 1) >= a) return `request target ${shown} carries userinfo (user@host), which HTTP does not allow`;
  if (!isAuthority(target, a, e, true, false)) return `request target ${shown} has an invalid host or port`;
  return null;
}

/**
 * The authority (`host[:port]`) of an absolute-form target, which stands for the Host header
 * (RFC 9112 §3.2.2); null for any other form. Call on targets `requestTargetError` accepted.
 */
export function absoluteTargetAuthority(target: string): string | null {
  if (target.charCodeAt(0) === SLASH || target === '*') return null;
  const a = authorityStart(target);
  return a < 0 ? null : target.slice(a, authorityEnd(target, a));
}
