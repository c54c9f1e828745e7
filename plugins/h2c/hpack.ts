/**
 * The one HPACK form the h2c upgrade needs (RFC 7541): a header field as a literal without
 * indexing, with a literal name and no Huffman coding. It leaves the decoder's dynamic table
 * untouched, so it can be spliced into a connection before any other header block.
 */
import { Buffer } from 'node:buffer';

/** HPACK integer with an `n`-bit prefix, the prefix's high bits set from `flags`. */
function hpackInt(value: number, n: number, flags: number): number[] {
  const max = (1 << n) - 1;
  if (value < max) return [flags | value];
  const out = [flags | max];
  value -= max;
  while (value >= 128) {
    out.push((value % 128) + 128);
    value = Math.floor(value / 128);
  }
  out.push(value);
  return out;
}

function hpackString(s: string): Buffer {
  const bytes = Buffer.from(s, 'latin1');
  return Buffer.concat([Buffer.from(hpackInt(bytes.length, 7, 0)), bytes]);
}

/** `name: value` as "Literal Header Field without Indexing — New Name" (name must be lowercase). */
export function hpackLiteral(name: string, value: string): Buffer {
  return Buffer.concat([Buffer.from([0x00]), hpackString(name), hpackString(value)]);
}
