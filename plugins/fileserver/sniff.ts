/**
 * Content-type sniffing per the WHATWG MIME Sniffing standard, "identifying a resource with an
 * unknown MIME type" (§7.1) with the sniff-scriptable flag set, as a server that serves files
 * without a known extension needs (Go's `http.DetectContentType` does the same):
 * HTML and XML, PDF, PostScript, text BOMs, images (§6.1), audio and video (§6.2, with the
 * MP4 and WebM algorithms; MP3 without an ID3 tag is not detected), archives (§6.3), then
 * text vs binary (§7.1 step 7: no binary data byte means text).
 * Only the first 512 bytes are looked at (the standard's resource header). Multipart uses the
 * same rules for a part sent without a content type.
 */

/** How many leading bytes {@link sniffContentType} reads: 512, the standard's resource header. */
export const SNIFF_LENGTH = 512;

interface Pattern {
  readonly pattern: Uint8Array;
  readonly mask: Uint8Array;
  /** Skip leading whitespace bytes (0x09 0x0A 0x0C 0x0D 0x20) first. */
  readonly skipWs: boolean;
  readonly type: string;
}

function bytes(s: string): Uint8Array {
  return Uint8Array.from(s, (c) => c.charCodeAt(0));
}

function exact(sig: string, type: string, skipWs = false): Pattern {
  const p = bytes(sig);
  return { pattern: p, mask: new Uint8Array(p.length).fill(0xff), skipWs, type };
}

function masked(sig: string, mask: string, type: string): Pattern {
  return { pattern: bytes(sig), mask: bytes(mask), skipWs: false, type };
}

// An HTML tag pattern: ASCII letters compared case-insensitively (mask 0xDF), then a
// tag-terminating byte (space or `>`, checked separately).
function htmlTag(tag: string): Pattern {
  const p = bytes(tag.toUpperCase() + ' ');
  const mask = new Uint8Array(p.length);
  for (let i = 0; i < p.length - 1; i++) mask[i] = p[i]! >= 0x41 && p[i]! <= 0x5a ? 0xdf : 0xff;
  return { pattern: p, mask, skipWs: true, type: 'text/html; charset=utf-8' };
}

const HTML_TAGS = ['<!DOCTYPE HTML', '<HTML', '<HEAD', '<SCRIPT', '<IFRAME', '<H1', '<DIV', '<FONT', '<TABLE', '<A', '<STYLE', '<TITLE', '<B', '<BODY', '<BR', '<P', '<!--'];

const SCRIPTABLE: readonly Pattern[] = [...HTML_TAGS.map(htmlTag), exact('<?xml', 'text/xml; charset=utf-8', true), exact('%PDF-', 'application/pdf')];

const NON_SCRIPTABLE: readonly Pattern[] = [
  exact('%!PS-Adobe-', 'application/postscript'),
  exact('\xfe\xff', 'text/plain; charset=utf-16be'),
  exact('\xff\xfe', 'text/plain; charset=utf-16le'),
  exact('\xef\xbb\xbf', 'text/plain; charset=utf-8'),
];

const IMAGES: readonly Pattern[] = [
  exact('\x00\x00\x01\x00', 'image/x-icon'),
  exact('\x00\x00\x02\x00', 'image/x-icon'),
  exact('BM', 'image/bmp'),
  exact('GIF87a', 'image/gif'),
  exact('GIF89a', 'image/gif'),
  masked('RIFF\x00\x00\x00\x00WEBPVP', '\xff\xff\xff\xff\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff', 'image/webp'),
  exact('\x89PNG\x0d\x0a\x1a\x0a', 'image/png'),
  exact('\xff\xd8\xff', 'image/jpeg'),
];

const AUDIO_VIDEO: readonly Pattern[] = [
  masked('FORM\x00\x00\x00\x00AIFF', '\xff\xff\xff\xff\x00\x00\x00\x00\xff\xff\xff\xff', 'audio/aiff'),
  exact('ID3', 'audio/mpeg'),
  exact('OggS\x00', 'application/ogg'),
  exact('MThd\x00\x00\x00\x06', 'audio/midi'),
  masked('RIFF\x00\x00\x00\x00AVI ', '\xff\xff\xff\xff\x00\x00\x00\x00\xff\xff\xff\xff', 'video/avi'),
  masked('RIFF\x00\x00\x00\x00WAVE', '\xff\xff\xff\xff\x00\x00\x00\x00\xff\xff\xff\xff', 'audio/wave'),
];

const ARCHIVES: readonly Pattern[] = [
  exact('\x1f\x8b\x08', 'application/x-gzip'),
  exact('PK\x03\x04', 'application/zip'),
  // The standard's pattern reads `Rar ` (with a space); real RAR files start `Rar!` (v1.5–4 and v5).
  exact('Rar \x1a\x07\x00', 'application/x-rar-compressed'),
  exact('Rar!\x1a\x07\x00', 'application/x-rar-compressed'),
  exact('Rar!\x1a\x07\x01\x00', 'application/x-rar-compressed'),
];

function isWs(b: number): boolean {
  return b === 0x09 || b === 0x0a || b === 0x0c || b === 0x0d || b === 0x20;
}

/** §4.6 pattern matching; an HTML tag pattern's last byte is the tag-terminating byte. */
function matches(input: Uint8Array, p: Pattern): boolean {
  let s = 0;
  if (p.skipWs) while (s < input.length && isWs(input[s]!)) s++;
  const tagPattern = p.type.startsWith('text/html');
  const n = p.pattern.length;
  if (input.length - s < n) return false;
  const check = tagPattern ? n - 1 : n;
  for (let i = 0; i < check; i++) {
    if ((input[s + i]! & p.mask[i]!) !== p.pattern[i]) return false;
  }
  if (tagPattern) {
    const t = input[s + n - 1]!;
    return t === 0x20 || t === 0x3e;
  }
  return true;
}

function firstMatch(input: Uint8Array, list: readonly Pattern[]): string | null {
  for (const p of list) if (matches(input, p)) return p.type;
  return null;
}

function u32(b: Uint8Array, i: number): number {
  return ((b[i]! << 24) | (b[i + 1]! << 16) | (b[i + 2]! << 8) | b[i + 3]!) >>> 0;
}

/** §6.2.1: an ISO BMFF box `ftyp` whose major or compatible brands include `mp4`. */
function isMp4(b: Uint8Array): boolean {
  if (b.length < 12) return false;
  const boxSize = u32(b, 0);
  if (b.length < boxSize || boxSize % 4 !== 0 || boxSize < 12) return false;
  if (b[4] !== 0x66 || b[5] !== 0x74 || b[6] !== 0x79 || b[7] !== 0x70) return false; // "ftyp"
  if (b[8] === 0x6d && b[9] === 0x70 && b[10] === 0x34) return true; // "mp4"
  for (let i = 16; i + 3 <= boxSize && i + 3 <= b.length; i += 4) {
    if (b[i] === 0x6d && b[i + 1] === 0x70 && b[i + 2] === 0x34) return true;
  }
  return false;
}

/** §6.2.2: an EBML header whose DocType element (0x42 0x82) reads `webm`. */
function isWebm(b: Uint8Array): boolean {
  if (b.length < 4 || b[0] !== 0x1a || b[1] !== 0x45 || b[2] !== 0xdf || b[3] !== 0xa3) return false;
  for (let i = 4; i < b.length - 1 && i < 38; i++) {
    if (b[i] !== 0x42 || b[i + 1] !== 0x82) continue;
    i += 2;
    if (i >= b.length) return false;
    // A variable-length integer: its length is the position of the first set bit of byte one.
    let len = 1;
    let mask = 0x80;
    while (len <= 8 && (b[i]! & mask) === 0) {
      mask >>= 1;
      len++;
    }
    if (len > 8) return false;
    let n = b[i]! & (mask - 1);
    for (let k = 1; k < len; k++) n = n * 256 + (b[i + k] ?? 0);
    i += len;
    if (n !== 4 || i + 4 > b.length) return false;
    return b[i] === 0x77 && b[i + 1] === 0x65 && b[i + 2] === 0x62 && b[i + 3] === 0x6d; // "webm"
  }
  return false;
}

/** §7.1 step 7: binary data bytes are 0x00–0x08, 0x0B, 0x0E–0x1A and 0x1C–0x1F. */
function hasBinaryByte(b: Uint8Array): boolean {
  for (let i = 0; i < b.length; i++) {
    const c = b[i]!;
    if (c <= 0x08 || c === 0x0b || (c >= 0x0e && c <= 0x1a) || (c >= 0x1c && c <= 0x1f)) return true;
  }
  return false;
}

/**
 * The content type of `data` by the WHATWG sniffing rules, from its first 512 bytes:
 * `text/html; charset=utf-8`, `image/png`, `application/pdf`, `application/zip`, …,
 * `text/plain; charset=utf-8` for text and `application/octet-stream` for other bytes.
 */
export function sniffContentType(data: Uint8Array): string {
  const b = data.length > SNIFF_LENGTH ? data.subarray(0, SNIFF_LENGTH) : data;
  return (
    firstMatch(b, SCRIPTABLE) ??
    firstMatch(b, NON_SCRIPTABLE) ??
    firstMatch(b, IMAGES) ??
    firstMatch(b, AUDIO_VIDEO) ??
    (isMp4(b) ? 'video/mp4' : null) ??
    (isWebm(b) ? 'video/webm' : null) ??
    firstMatch(b, ARCHIVES) ??
    (hasBinaryByte(b) ? 'application/octet-stream' : 'text/plain; charset=utf-8')
  );
}
