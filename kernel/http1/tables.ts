/**
 * Byte-class tables, well-known header names and methods, and status reason phrases used by
 * the HTTP/1 parser and serializer.
 *
 * Everything here is built once at module load so the hot paths do table lookups instead of
 * regular expressions or string operations.
 */
import { canonicalHeaderKey } from '../message/headers.js';

/** Carriage return. */
export const CR = 13;
/** Line feed. */
export const LF = 10;
/** Space. */
export const SP = 32;
/** Horizontal tab. */
export const HTAB = 9;
/** `:` */
export const COLON = 58;

/**
 * `tchar` of RFC 9110 §5.6.2: 1 for bytes allowed in a method or a field name, else 0.
 */
export const TOKEN: Uint8Array = (() => {
  const t = new Uint8Array(256);
  for (const c of "!#$%&'*+-.^_`|~") t[c.charCodeAt(0)] = 1;
  for (let c = 0x30; c <= 0x39; c++) t[c] = 1;
  for (let c = 0x41; c <= 0x5a; c++) t[c] = 1;
  for (let c = 0x61; c <= 0x7a; c++) t[c] = 1;
  return t;
})();

/** True when `s` is a non-empty RFC 9110 token (a method, a field name, a cookie name, a parameter name). */
export function isToken(s: string): boolean {
  const n = s.length;
  if (n === 0) return false;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c > 0xff || TOKEN[c] === 0) return false;
  }
  return true;
}

/**
 * Field-value bytes (RFC 9110 §5.5): 1 for VCHAR and obs-text, 2 for SP and HTAB (kept inside a
 * value, trimmed at its ends), 0 for everything else (CTLs including CR, LF and NUL, and DEL).
 */
export const VALUE: Uint8Array = (() => {
  const t = new Uint8Array(256);
  for (let c = 0x21; c <= 0x7e; c++) t[c] = 1;
  for (let c = 0x80; c <= 0xff; c++) t[c] = 1;
  t[SP] = 2;
  t[HTAB] = 2;
  return t;
})();

/**
 * Request-target bytes: visible ASCII and, like Node's parser, obs-text (raw UTF-8 some clients
 * send). Space, CTLs and DEL end or break the target.
 */
export const TARGET: Uint8Array = (() => {
  const t = new Uint8Array(256);
  for (let c = 0x21; c <= 0x7e; c++) t[c] = 1;
  for (let c = 0x80; c <= 0xff; c++) t[c] = 1;
  return t;
})();

/**
 * Bytes of a `reg-name` (RFC 3986 §3.2.2) other than `%`: unreserved (`ALPHA DIGIT - . _ ~`)
 * and sub-delims (`! $ & ' ( ) * + , ; =`). An IPv4 address is a reg-name too.
 */
export const REG_NAME: Uint8Array = (() => {
  const t = new Uint8Array(256);
  for (const c of "-._~!$&'()*+,;=") t[c.charCodeAt(0)] = 1;
  for (let c = 0x30; c <= 0x39; c++) t[c] = 1;
  for (let c = 0x41; c <= 0x5a; c++) t[c] = 1;
  for (let c = 0x61; c <= 0x7a; c++) t[c] = 1;
  return t;
})();

/** Hex digit values; -1 for bytes that are not hex digits. */
export const HEX: Int8Array = (() => {
  const t = new Int8Array(256).fill(-1);
  for (let c = 0; c < 10; c++) t[0x30 + c] = c;
  for (let c = 0; c < 6; c++) {
    t[0x41 + c] = 10 + c;
    t[0x61 + c] = 10 + c;
  }
  return t;
})();

// ---------------------------------------------------------------------------------------------
// Well-known header names. The parser hashes the name bytes while it validates them, then
// confirms a hit by comparing bytes, so a known name costs no string allocation and no
// case conversion: the interned canonical string is reused.

/** No special meaning for framing. */
export const H_OTHER = 0;
/** Content-Length */
export const H_CONTENT_LENGTH = 1;
/** Transfer-Encoding */
export const H_TRANSFER_ENCODING = 2;
/** Connection */
export const H_CONNECTION = 3;
/** Host */
export const H_HOST = 4;
/** Upgrade */
export const H_UPGRADE = 5;
/** Expect */
export const H_EXPECT = 6;

const KNOWN_LIST: readonly string[] = [
  'accept',
  'accept-charset',
  'accept-encoding',
  'accept-language',
  'accept-ranges',
  'accept-patch',
  'access-control-allow-credentials',
  'access-control-allow-headers',
  'access-control-allow-methods',
  'access-control-allow-origin',
  'access-control-expose-headers',
  'access-control-max-age',
  'access-control-request-headers',
  'access-control-request-method',
  'age',
  'allow',
  'alt-svc',
  'authorization',
  'cache-control',
  'cdn-loop',
  'connection',
  'content-disposition',
  'content-encoding',
  'content-language',
  'content-length',
  'content-location',
  'content-range',
  'content-security-policy',
  'content-type',
  'cookie',
  'date',
  'dnt',
  'etag',
  'expect',
  'expires',
  'forwarded',
  'from',
  'host',
  'if-match',
  'if-modified-since',
  'if-none-match',
  'if-range',
  'if-unmodified-since',
  'keep-alive',
  'last-event-id',
  'last-modified',
  'link',
  'location',
  'max-forwards',
  'origin',
  'pragma',
  'priority',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'range',
  'referer',
  'referrer-policy',
  'refresh',
  'retry-after',
  'sec-ch-ua',
  'sec-ch-ua-mobile',
  'sec-ch-ua-platform',
  'sec-fetch-dest',
  'sec-fetch-mode',
  'sec-fetch-site',
  'sec-fetch-user',
  'sec-gpc',
  'sec-purpose',
  'sec-websocket-accept',
  'sec-websocket-extensions',
  'sec-websocket-key',
  'sec-websocket-protocol',
  'sec-websocket-version',
  'server',
  'server-timing',
  'set-cookie',
  'strict-transport-security',
  'te',
  'timing-allow-origin',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'upgrade-insecure-requests',
  'user-agent',
  'vary',
  'via',
  'warning',
  'www-authenticate',
  'x-content-type-options',
  'x-csrf-token',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-port',
  'x-forwarded-proto',
  'x-frame-options',
  'x-powered-by',
  'x-real-ip',
  'x-request-id',
  'x-requested-with',
  'x-xss-protection',
];

const SPECIAL: Readonly<Record<string, number>> = {
  'content-length': H_CONTENT_LENGTH,
  'transfer-encoding': H_TRANSFER_ENCODING,
  connection: H_CONNECTION,
  host: H_HOST,
  upgrade: H_UPGRADE,
  expect: H_EXPECT,
};

/** Length of the longest known name. */
export const KNOWN_MAX_LENGTH: number = KNOWN_LIST.reduce((n, s) => Math.max(n, s.length), 0);

/** Slots in the open-addressing table; a power of two well above the entry count. */
export const KNOWN_MASK = 1023;

/**
 * Slot of a field name in the known-name table, from its length and three of its bytes (first,
 * last, middle) with ASCII case folded by `| 0x20`. The parser computes it after validating the
 * name, then confirms a hit by comparing every byte; for token bytes `| 0x20` maps only letters
 * onto letters, so that comparison is exact.
 */
export function knownSlot(first: number, last: number, mid: number, len: number): number {
  return (((first | 0x20) << 5) ^ ((last | 0x20) << 2) ^ (mid | 0x20) ^ (len * 37)) & KNOWN_MASK;
}

/** Slot → entry index + 1 (0 = empty). */
export const KNOWN_SLOTS = new Uint16Array(KNOWN_MASK + 1);
/** Lowercase bytes of every entry, back to back. */
export const KNOWN_BYTES: Uint8Array = new Uint8Array(KNOWN_LIST.reduce((n, s) => n + s.length, 0));
/** Offset of each entry in {@link KNOWN_BYTES}. */
export const KNOWN_OFFSET = new Uint32Array(KNOWN_LIST.length);
/** Byte length of each entry. */
export const KNOWN_LENGTH = new Uint8Array(KNOWN_LIST.length);
/** Framing role (`H_*`) of each entry. */
export const KNOWN_ROLE = new Uint8Array(KNOWN_LIST.length);
/** Canonical spelling of each entry (interned; see `canonicalHeaderKey`). */
export const KNOWN_NAMES: readonly string[] = KNOWN_LIST.map((s) => canonicalHeaderKey(s));

/**
 * The known names as little-endian 32-bit words for word-at-a-time comparison: lowercase bytes
 * zero-padded to a whole word ({@link KNOWN_WORDS}), 0x20 at the letter positions
 * ({@link KNOWN_CASE}; OR-ing it into input folds case only where the name has a letter, so
 * '-' and digits must match exactly), the first word of each entry ({@link KNOWN_WORD_OFFSET})
 * and the mask of valid bytes in its last word ({@link KNOWN_LAST_MASK}).
 */
export const KNOWN_WORDS = new Int32Array(KNOWN_LIST.reduce((n, s) => n + ((s.length + 3) >> 2), 0));
/** See {@link KNOWN_WORDS}. */
export const KNOWN_CASE = new Int32Array(KNOWN_WORDS.length);
/** See {@link KNOWN_WORDS}. */
export const KNOWN_WORD_OFFSET = new Uint16Array(KNOWN_LIST.length);
/** See {@link KNOWN_WORDS}. */
export const KNOWN_LAST_MASK = new Int32Array(KNOWN_LIST.length);

(() => {
  let w = 0;
  for (let i = 0; i < KNOWN_LIST.length; i++) {
    const s = KNOWN_LIST[i]!;
    KNOWN_WORD_OFFSET[i] = w;
    for (let j = 0; j < s.length; j++) {
      const c = s.charCodeAt(j);
      const shift = (j & 3) * 8;
      KNOWN_WORDS[w + (j >> 2)]! |= c << shift;
      if (c >= 0x61 && c <= 0x7a) KNOWN_CASE[w + (j >> 2)]! |= 0x20 << shift;
    }
    const rem = s.length & 3;
    KNOWN_LAST_MASK[i] = rem === 0 ? -1 : (1 << (rem * 8)) - 1;
    w += (s.length + 3) >> 2;
  }
})();

(() => {
  let off = 0;
  for (let i = 0; i < KNOWN_LIST.length; i++) {
    const s = KNOWN_LIST[i]!;
    for (let j = 0; j < s.length; j++) KNOWN_BYTES[off + j] = s.charCodeAt(j);
    KNOWN_OFFSET[i] = off;
    KNOWN_LENGTH[i] = s.length;
    KNOWN_ROLE[i] = SPECIAL[s] ?? H_OTHER;
    off += s.length;
    let slot = knownSlot(s.charCodeAt(0), s.charCodeAt(s.length - 1), s.charCodeAt(s.length >> 1), s.length);
    while (KNOWN_SLOTS[slot] !== 0) slot = (slot + 1) & KNOWN_MASK;
    KNOWN_SLOTS[slot] = i + 1;
  }
})();

// ---------------------------------------------------------------------------------------------
// Trailers.

/**
 * Field names (lowercase) that never go in a trailer section, written or read. RFC 9110 §6.5.1:
 * fields needed before the content can be processed (framing, routing, authentication, request
 * modifiers, response controls, content format) cannot be trailers, and §6.5.2 forbids merging
 * a trailer into the header section unless its definition allows it. The list is Go net/http's
 * (`badTrailer`, less the unregistered Realm) plus Upgrade and the cookie fields; fields that
 * RFC 9110 lets trail (Authentication-Info, Server-Timing, ...) are not in it.
 */
export const FORBIDDEN_TRAILERS: ReadonlySet<string> = new Set([
  // message framing and transfer codings
  'content-length',
  'transfer-encoding',
  'trailer',
  'te',
  // connection management
  'connection',
  'keep-alive',
  'proxy-connection',
  'upgrade',
  // routing and request modifiers
  'host',
  'expect',
  'max-forwards',
  'range',
  // authentication and state
  'authorization',
  'proxy-authorization',
  'www-authenticate',
  'proxy-authenticate',
  'cookie',
  'set-cookie',
  // content format
  'content-encoding',
  'content-type',
  'content-range',
  // response controls (caching)
  'cache-control',
  'expires',
  'pragma',
]);

/** True when `name` (any letter case) is in {@link FORBIDDEN_TRAILERS}. */
export function isForbiddenTrailer(name: string): boolean {
  return FORBIDDEN_TRAILERS.has(name.toLowerCase());
}

/** 1 for the known names that are in {@link FORBIDDEN_TRAILERS} (all of them are known names). */
export const KNOWN_NO_TRAILER: Uint8Array = (() => {
  const t = new Uint8Array(KNOWN_LIST.length);
  for (const name of FORBIDDEN_TRAILERS) {
    const i = KNOWN_LIST.indexOf(name);
    // The parser finds forbidden trailers by their known-name index, so each must have one.
    if (i < 0) throw new Error(`forbidden trailer ${name} is not a known header name`);
    t[i] = 1;
  }
  return t;
})();

// ---------------------------------------------------------------------------------------------

/** Reason phrases of the registered status codes (RFC 9110 and friends). */
export const STATUS_TEXT: Readonly<Record<number, string>> = Object.freeze({
  100: 'Continue',
  101: 'Switching Protocols',
  102: 'Processing',
  103: 'Early Hints',
  200: 'OK',
  201: 'Created',
  202: 'Accepted',
  203: 'Non-Authoritative Information',
  204: 'No Content',
  205: 'Reset Content',
  206: 'Partial Content',
  207: 'Multi-Status',
  208: 'Already Reported',
  226: 'IM Used',
  300: 'Multiple Choices',
  301: 'Moved Permanently',
  302: 'Found',
  303: 'See Other',
  304: 'Not Modified',
  305: 'Use Proxy',
  307: 'Temporary Redirect',
  308: 'Permanent Redirect',
  400: 'Bad Request',
  401: 'Unauthorized',
  402: 'Payment Required',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  407: 'Proxy Authentication Required',
  408: 'Request Timeout',
  409: 'Conflict',
  410: 'Gone',
  411: 'Length Required',
  412: 'Precondition Failed',
  413: 'Content Too Large',
  414: 'URI Too Long',
  415: 'Unsupported Media Type',
  416: 'Range Not Satisfiable',
  417: 'Expectation Failed',
  418: "I'm a teapot",
  421: 'Misdirected Request',
  422: 'Unprocessable Content',
  423: 'Locked',
  424: 'Failed Dependency',
  425: 'Too Early',
  426: 'Upgrade Required',
  428: 'Precondition Required',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  451: 'Unavailable For Legal Reasons',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
  505: 'HTTP Version Not Supported',
  506: 'Variant Also Negotiates',
  507: 'Insufficient Storage',
  508: 'Loop Detected',
  510: 'Not Extended',
  511: 'Network Authentication Required',
});

/** The standard reason phrase of `status`, or `''` for an unregistered code. */
export function statusText(status: number): string {
  return STATUS_TEXT[status] ?? '';
}

/** Longest probe sequence in the known-name table (kept small by the hash; checked in tests). */
export const KNOWN_MAX_PROBE: number = (() => {
  let worst = 0;
  for (let i = 0; i < KNOWN_LIST.length; i++) {
    const s = KNOWN_LIST[i]!;
    let slot = knownSlot(s.charCodeAt(0), s.charCodeAt(s.length - 1), s.charCodeAt(s.length >> 1), s.length);
    let probes = 1;
    while (KNOWN_SLOTS[slot] !== i + 1) {
      slot = (slot + 1) & KNOWN_MASK;
      probes++;
    }
    if (probes > worst) worst = probes;
  }
  return worst;
})();
