/**
 * Which addresses are trusted: CIDR ranges and single addresses (`10.0.0.0/8`, `fd00::/8`,
 * `192.0.2.7`, `::1`). An IPv4 range also matches the IPv4-mapped IPv6 form of its addresses
 * (`::ffff:10.1.2.3`, as a dual-stack listener reports IPv4 peers).
 */
import { isIP } from 'node:net';
import { PeerAddr, prefixEqual } from '../../kernel/index.js';

interface Range {
  readonly bytes: Uint8Array;
  readonly bits: number;
}

/** A parsed list of trusted addresses and ranges. */
export class TrustList {
  private readonly ranges: readonly Range[];

  private constructor(ranges: readonly Range[]) {
    this.ranges = ranges;
  }

  /** The list, or why an entry cannot be read (for an option check's message). */
  static parse(entries: readonly unknown[]): TrustList | string {
    const ranges: Range[] = [];
    for (const e of entries) {
      const r = typeof e === 'string' ? parseRange(e.trim()) : null;
      if (r === null) return `a list of IP addresses and CIDR ranges (such as '10.0.0.0/8' or 'fd00::/8'); ${JSON.stringify(e)} is neither`;
      ranges.push(r);
    }
    return new TrustList(ranges);
  }

  /** True when `address` (IPv4 or IPv6 text) lies in one of the ranges; false for anything that is not an IP address. */
  has(address: string): boolean {
    const bytes = ipOf(address);
    if (bytes === null) return false;
    for (const r of this.ranges) if (r.bytes.length === bytes.length && prefixEqual(r.bytes, bytes, r.bits)) return true;
    return false;
  }
}

function parseRange(s: string): Range | null {
  const slash = s.indexOf('/');
  const addr = slash < 0 ? s : s.slice(0, slash);
  const bytes = ipOf(addr);
  if (bytes === null) return null;
  const max = bytes.length * 8;
  if (slash < 0) return { bytes, bits: max };
  const b = s.slice(slash + 1);
  if (!/^\d{1,3}$/.test(b) || Number(b) > max) return null;
  return { bytes, bits: Number(b) };
}

/** The address bytes, an IPv4-mapped IPv6 address as its 4 IPv4 bytes; null for what is not an IP address. */
function ipOf(address: string): Uint8Array | null {
  if (isIP(address) === 0) return null;
  const b = new PeerAddr(address, 0).ip;
  if (b.length === 16 && b.subarray(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff) return b.subarray(12);
  return b;
}
