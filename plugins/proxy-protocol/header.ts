/**
 * The PROXY protocol header (HAProxy's proxy-protocol.txt, versions 1 and 2), parsed from the
 * first bytes of a connection as they arrive.
 *
 * - v1, text: `PROXY TCP4|TCP6 <src> <dst> <sport> <dport>\r\n`, or `PROXY UNKNOWN …\r\n`; at
 *   most {@link V1_MAX_BYTES} bytes with the CRLF. Every field is checked: single spaces,
 *   addresses of the family named, ports 0-65535 in decimal without leading zeros.
 * - v2, binary: the 12-byte signature, version and command, family and transport, a length,
 *   then the addresses and TLVs. Only version 2 and the commands LOCAL and PROXY exist; the
 *   length may not pass {@link V2_MAX_BYTES} in all. TLVs are skipped unread: the header's own
 *   length bounds them, so a TLV's length never indexes anything.
 *
 * The relayed client counts only for PROXY over TCP/IP (v1 TCP4/TCP6, v2 INET/INET6 with
 * STREAM or UNSPEC transport). LOCAL (the proxy's own connection, a health check), UNKNOWN,
 * AF_UNSPEC and AF_UNIX carry no client address: the connection keeps its own.
 */
import { Buffer } from 'node:buffer';
import { isIPv4, isIPv6 } from 'node:net';
import { ParseError, type PeerAddress } from '../../kernel/index.js';

/** Longest v1 header, CRLF included (the specification's 107). */
export const V1_MAX_BYTES = 107;

/**
 * Longest v2 header accepted, signature and fixed part included. The format allows 16 + 65535
 * bytes; what proxies send (addresses and a few TLVs: ALPN, authority, TLS details, a unique
 * id, a cloud endpoint id) is a few hundred at most, and a connection should not be able to
 * make the server hold 64 KiB before it has said anything.
 */
export const V2_MAX_BYTES = 4096;

/** The v2 signature: `\r\n\r\n\0\r\nQUIT\n`. */
export const V2_SIGNATURE: Uint8Array = Uint8Array.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);

const V1_PREFIX = Uint8Array.from(Buffer.from('PROXY '));

/** A whole header: its length in bytes, and the client it relays (null: keep the connection's own). */
export interface ProxyHeader {
  /** Bytes the header took, from the first byte of the connection. */
  readonly length: number;
  /** 1 or 2. */
  readonly version: 1 | 2;
  /** The relayed client, or null (LOCAL, UNKNOWN, AF_UNSPEC, AF_UNIX). */
  readonly source: PeerAddress | null;
  /** The address the client connected to, or null when `source` is. */
  readonly destination: PeerAddress | null;
}

/**
 * Reads a header from the start of `buf`: the header once it is whole, null while `buf` is
 * the start of one (more bytes decide); throws `ParseError` as soon as the bytes
 * cannot be a header, however many more come.
 */
export function parseProxyHeader(buf: Uint8Array): ProxyHeader | null {
  if (buf.length === 0) return null;
  if (buf[0] === V1_PREFIX[0]) return parseV1(buf);
  if (buf[0] === V2_SIGNATURE[0]) return parseV2(buf);
  throw new ParseError('the connection does not begin with a PROXY protocol header');
}

function startsWith(buf: Uint8Array, prefix: Uint8Array, what: string): boolean {
  const n = Math.min(buf.length, prefix.length);
  for (let i = 0; i < n; i++) if (buf[i] !== prefix[i]) throw new ParseError(`not a PROXY protocol header: the ${what} is wrong`);
  return n === prefix.length;
}

function parseV1(buf: Uint8Array): ProxyHeader | null {
  if (!startsWith(buf, V1_PREFIX, 'v1 prefix')) return null;
  const end = Math.min(buf.length, V1_MAX_BYTES);
  let lf = -1;
  for (let i = V1_PREFIX.length; i < end; i++) {
    const c = buf[i]!;
    if (c === 0x0a) {
      lf = i;
      break;
    }
    // Printable ASCII and the CR before the LF only.
    if ((c < 0x20 || c > 0x7e) && c !== 0x0d) throw new ParseError('a PROXY v1 header holds a control or non-ASCII byte');
  }
  if (lf < 0) {
    if (buf.length >= V1_MAX_BYTES) throw new ParseError(`a PROXY v1 header is longer than ${V1_MAX_BYTES} bytes`);
    return null;
  }
  if (buf[lf - 1] !== 0x0d) throw new ParseError('a PROXY v1 header does not end with CRLF');
  const line = Buffer.from(buf.buffer, buf.byteOffset, lf - 1).toString('latin1');
  const fields = line.split(' ');
  const proto = fields[1];
  const length = lf + 1;
  // UNKNOWN: the rest of the line is to be ignored.
  if (proto === 'UNKNOWN') return { length, version: 1, source: null, destination: null };
  if (proto !== 'TCP4' && proto !== 'TCP6') throw new ParseError(`a PROXY v1 header names the protocol ${JSON.stringify(proto ?? '')}, not TCP4, TCP6 or UNKNOWN`);
  if (fields.length !== 6) throw new ParseError('a PROXY v1 header needs exactly: PROXY, protocol, two addresses and two ports, one space apart');
  const isFamily = proto === 'TCP4' ? isIPv4 : isIPv6;
  const family = proto === 'TCP4' ? 'IPv4' : 'IPv6';
  const [, , src, dst, sport, dport] = fields as [string, string, string, string, string, string];
  if (!isFamily(src) || !isFamily(dst)) throw new ParseError(`a PROXY v1 ${proto} header holds an address that is not ${family}`);
  return { length, version: 1, source: { address: src, port: port(sport), family }, destination: { address: dst, port: port(dport), family } };
}

function port(s: string): number {
  if (!/^(?:0|[1-9]\d{0,4})$/.test(s) || Number(s) > 65535) throw new ParseError(`a PROXY v1 header holds the port ${JSON.stringify(s)}, not 0-65535`);
  return Number(s);
}

/** v2 families (high nibble of byte 13) and their address block sizes. */
const AF_UNSPEC = 0x0;
const AF_INET = 0x1;
const AF_UNIX = 0x3;
const ADDRESS_BYTES = [0, 12, 36, 216];
/** The v2 datagram transport (low nibble of byte 13; 0 is UNSPEC, 1 STREAM). */
const T_DGRAM = 0x2;

function parseV2(buf: Uint8Array): ProxyHeader | null {
  if (!startsWith(buf, V2_SIGNATURE, 'v2 signature') || buf.length < 16) return null;
  const version = buf[12]! >> 4;
  const command = buf[12]! & 0x0f;
  if (version !== 2) throw new ParseError(`a PROXY v2 header says version ${version}`);
  if (command > 1) throw new ParseError(`a PROXY v2 header has the command ${command}, neither LOCAL (0) nor PROXY (1)`);
  const af = buf[13]! >> 4;
  const transport = buf[13]! & 0x0f;
  if (af > AF_UNIX || transport > T_DGRAM) throw new ParseError(`a PROXY v2 header has the unknown family/transport byte 0x${buf[13]!.toString(16)}`);
  const rest = (buf[14]! << 8) | buf[15]!;
  const length = 16 + rest;
  if (length > V2_MAX_BYTES) throw new ParseError(`a PROXY v2 header of ${length} bytes is longer than the ${V2_MAX_BYTES} accepted`);
  // LOCAL: the proxy's own connection; its address block, family included, is to be discarded.
  if (command !== 0 && rest < ADDRESS_BYTES[af]!) throw new ParseError(`a PROXY v2 header's length ${rest} is shorter than its addresses`);
  if (buf.length < length) return null;
  if (command === 0 || af === AF_UNSPEC || af === AF_UNIX) return { length, version: 2, source: null, destination: null };
  // A relayed datagram flow cannot be this stream connection.
  if (transport === T_DGRAM) throw new ParseError('a PROXY v2 header relays a datagram (UDP) flow over a stream connection');
  const b = Buffer.from(buf.buffer, buf.byteOffset, length);
  if (af === AF_INET) {
    return {
      length,
      version: 2,
      source: { address: v4(b, 16), port: b.readUInt16BE(24), family: 'IPv4' },
      destination: { address: v4(b, 20), port: b.readUInt16BE(26), family: 'IPv4' },
    };
  }
  return {
    length,
    version: 2,
    source: { address: v6(b, 16), port: b.readUInt16BE(48), family: 'IPv6' },
    destination: { address: v6(b, 32), port: b.readUInt16BE(50), family: 'IPv6' },
  };
}

function v4(b: Buffer, at: number): string {
  return `${b[at]}.${b[at + 1]}.${b[at + 2]}.${b[at + 3]}`;
}

/** An IPv6 address in its canonical text (RFC 5952: lowercase, the longest zero run as `::`, IPv4-mapped as `::ffff:a.b.c.d`). */
function v6(b: Buffer, at: number): string {
  const words: number[] = [];
  for (let i = 0; i < 8; i++) words.push(b.readUInt16BE(at + i * 2));
  if (words.slice(0, 5).every((w) => w === 0) && words[5] === 0xffff) return `::ffff:${v4(b, at + 12)}`;
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8;) {
    if (words[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = (ws: number[]): string => ws.map((w) => w.toString(16)).join(':');
  if (best < 0) return hex(words);
  return `${hex(words.slice(0, best))}::${hex(words.slice(best + bestLen))}`;
}
