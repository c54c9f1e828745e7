/**
 * IP literals as 16 bytes (IPv4 as IPv4-mapped IPv6, `::ffff:a.b.c.d`), so one prefix compare
 * covers exact addresses, IPv4 CIDR, IPv6 CIDR and IPv4-mapped forms of IPv4 addresses.
 */
import { isIPv4, isIPv6 } from 'node:net';
import { prefixEqual } from '../../kernel/index.js';

/** Bits an IPv4 address is offset by inside its IPv4-mapped IPv6 form. */
export const V4_OFFSET_BITS = 96;

/** The 16-byte form of an IP literal (IPv6 without brackets or zone), or null when `s` is not one. */
export function parseIP(s: string): Uint8Array | null {
  if (isIPv4(s)) return v4(s);
  if (!isIPv6(s)) return null;
  const out = new Uint8Array(16);
  const parts = s.toLowerCase().split('::');
  const head = parts[0] === '' ? [] : parts[0]!.split(':');
  const tail = parts.length > 1 && parts[1] !== '' ? parts[1]!.split(':') : [];
  const words = (groups: string[]): number[] => {
    const w: number[] = [];
    for (const g of groups) {
      if (g.includes('.')) {
        // An embedded IPv4 tail (`::ffff:1.2.3.4`) is two 16-bit words.
        const b = v4(g);
        w.push((b[12]! << 8) | b[13]!, (b[14]! << 8) | b[15]!);
      } else w.push(parseInt(g, 16));
    }
    return w;
  };
  const hw = words(head);
  const tw = words(tail);
  for (let i = 0; i < hw.length; i++) {
    out[i * 2] = hw[i]! >> 8;
    out[i * 2 + 1] = hw[i]! & 0xff;
  }
  const start = 8 - tw.length;
  for (let i = 0; i < tw.length; i++) {
    out[(start + i) * 2] = tw[i]! >> 8;
    out[(start + i) * 2 + 1] = tw[i]! & 0xff;
  }
  return out;
}

function v4(s: string): Uint8Array {
  const out = new Uint8Array(16);
  out[10] = 0xff;
  out[11] = 0xff;
  const p = s.split('.');
  for (let i = 0; i < 4; i++) out[12 + i] = Number(p[i]);
  return out;
}

const LOOPBACK_V4 = v4('127.0.0.0');
const LOOPBACK_V6 = parseIP('::1')!;

/** True for 127.0.0.0/8 (also IPv4-mapped) and `::1`. */
export function isLoopback(ip: Uint8Array): boolean {
  return prefixEqual(ip, LOOPBACK_V4, V4_OFFSET_BITS + 8) || prefixEqual(ip, LOOPBACK_V6, 128);
}

/** True when the 16-byte form is an IPv4(-mapped) address. */
export function isV4Mapped(ip: Uint8Array): boolean {
  return prefixEqual(ip, LOOPBACK_V4, V4_OFFSET_BITS);
}
