/**
 * PeerAddr: the client address of a server stream, in the reference's three forms.
 */
import { isIPv4, isIPv6 } from 'node:net';
import type { Duplex } from 'node:stream';

/** Address of the peer of a server connection: `String(addr)` is `ip:port` (`[ip]:port` for IPv6). */
export class PeerAddr {
  /** The IP address as text. */
  readonly address: string;
  /** The port. */
  readonly port: number;
  /** `IPv4` or `IPv6`. */
  readonly family: string;
  private bytes: Uint8Array | null = null;

  /** Wraps an address and port as Node reports them (`socket.remoteAddress`, `remotePort`). */
  constructor(address: string, port: number, family?: string) {
    this.address = address;
    this.port = port;
    this.family = family ?? (isIPv6(address) ? 'IPv6' : 'IPv4');
  }

  /** The address bytes: 4 for IPv4, 16 for IPv6. */
  get ip(): Uint8Array {
    return (this.bytes ??= ipBytes(this.address));
  }

  /** `ip:port`, or `[ip]:port` for IPv6. */
  toString(): string {
    return this.family === 'IPv6' ? `[${this.address}]:${this.port}` : `${this.address}:${this.port}`;
  }

  /** Same as {@link PeerAddr.toString}. */
  toJSON(): string {
    return this.toString();
  }
}

/** Client addresses a connection's preamble relayed (the PROXY protocol), by socket. */
const relayed = new WeakMap<Duplex, PeerAddr>();

/**
 * The client address of a server connection's socket: the one a preamble relayed for it
 * (see `PreambleReader`), else the socket's own remote address; null for a stream that has
 * none. What every protocol's `peerAddr()` reports, so they agree.
 */
export function socketPeer(socket: Duplex): PeerAddr | null {
  const r = relayed.get(socket);
  if (r !== undefined) return r;
  const s = socket as Duplex & { remoteAddress?: string; remotePort?: number; remoteFamily?: string };
  return typeof s.remoteAddress === 'string' ? new PeerAddr(s.remoteAddress, s.remotePort ?? 0, s.remoteFamily) : null;
}

/** @internal Records the client address a preamble relayed for `socket`. */
export function relayPeer(socket: Duplex, peer: { readonly address: string; readonly port: number; readonly family: string }): void {
  relayed.set(socket, peer instanceof PeerAddr ? peer : new PeerAddr(peer.address, peer.port, peer.family));
}

/** @internal A TLS socket made over `raw` reports what was relayed for `raw`. */
export function inheritPeer(raw: Duplex, secure: Duplex): void {
  const r = relayed.get(raw);
  if (r !== undefined) relayed.set(secure, r);
}

/** True when the first `bits` bits of the address bytes `a` and `b` are equal: whether an address lies in a CIDR range. */
export function prefixEqual(a: Uint8Array, b: Uint8Array, bits: number): boolean {
  let i = 0;
  for (; bits >= 8; bits -= 8, i++) if (a[i] !== b[i]) return false;
  if (bits === 0) return true;
  const mask = (0xff << (8 - bits)) & 0xff;
  return (a[i]! & mask) === (b[i]! & mask);
}

/** Bytes of an IPv4 or IPv6 address (IPv4-mapped IPv6 stays 16 bytes). */
export function ipBytes(address: string): Uint8Array {
  if (isIPv4(address)) return Uint8Array.from(address.split('.').map(Number));
  const zone = address.indexOf('%');
  const a = zone >= 0 ? address.slice(0, zone) : address;
  if (!isIPv6(a)) return new Uint8Array(0);
  const out = new Uint8Array(16);
  let head = a;
  let tail = '';
  const dbl = a.indexOf('::');
  if (dbl >= 0) {
    head = a.slice(0, dbl);
    tail = a.slice(dbl + 2);
  }
  const parse = (part: string): number[] => {
    if (part === '') return [];
    const groups: number[] = [];
    for (const g of part.split(':')) {
      if (g.includes('.')) {
        const v4 = g.split('.').map(Number);
        groups.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
      } else {
        groups.push(parseInt(g, 16));
      }
    }
    return groups;
  };
  const h = parse(head);
  const t = parse(tail);
  const groups = [...h, ...new Array<number>(8 - h.length - t.length).fill(0), ...t];
  for (let i = 0; i < 8; i++) {
    out[i * 2] = groups[i]! >> 8;
    out[i * 2 + 1] = groups[i]! & 0xff;
  }
  return out;
}
