/**
 * Self-signed X.509 certificates made in pure JavaScript on `node:crypto`: no openssl
 * binary, no npm package. Meant for tests, the demo server and `--tls-self-signed`, where
 * a throwaway certificate is made at start and nothing is fetched or committed.
 *
 * The certificate is X.509 v3 (RFC 5280), issuer = subject = `CN=<commonName>`, with
 * subjectAltName (dNSName / iPAddress), basicConstraints `CA:TRUE, pathlen:0` (critical,
 * so a client can pass the certificate itself as its `ca`), keyUsage (critical),
 * extendedKeyUsage serverAuth, and subject/authority key identifiers. It passes
 * `openssl verify -x509_strict -purpose sslserver`.
 *
 * @module
 */
import { Buffer } from 'node:buffer';
import type { KeyObject } from 'node:crypto';
import { isIP } from 'node:net';
import { ArgumentError, nodeCrypto } from '../kernel/index.js';

/** Options of {@link selfSignedCertificate}. */
export interface SelfSignedOptions {
  /**
   * Names the certificate is valid for: DNS names (a leading `*.` wildcard label is
   * allowed) go into subjectAltName as dNSName, IPv4 / IPv6 literals (no brackets, no
   * zone index) as iPAddress. Duplicates are dropped. Default
   * `['localhost', '127.0.0.1', '::1']`.
   */
  hosts?: string[];
  /** Subject (and issuer) common name, 1 to 64 characters. Default `hosts[0]`. */
  commonName?: string;
  /**
   * Validity in days from now, a positive finite number (fractions allowed). Default 30.
   * `notBefore` is one hour before now, to tolerate clock skew.
   */
  days?: number;
  /**
   * Key algorithm: `'ec'` (P-256, signed ecdsa-with-SHA256) or `'rsa'` (2048 bits,
   * sha256WithRSAEncryption). Default `'ec'`.
   */
  keyType?: 'ec' | 'rsa';
}

/** A certificate made by {@link selfSignedCertificate}, ready for `tls.createServer({ key, cert })`. */
export interface SelfSignedCertificate {
  /** The private key, PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`). */
  key: string;
  /** The certificate, PEM (`-----BEGIN CERTIFICATE-----`). Clients trust it by passing it as `ca`. */
  cert: string;
  /** SHA-256 fingerprint of the certificate's DER, formatted as `X509Certificate.fingerprint256` (`AB:CD:…`, upper case). */
  fingerprint256: string;
}

/** Default {@link SelfSignedOptions.hosts}. */
const DEFAULT_HOSTS: readonly string[] = ['localhost', '127.0.0.1', '::1'];
/** Default {@link SelfSignedOptions.days}. */
const DEFAULT_DAYS = 30;
/** `notBefore` is this much before now. */
const CLOCK_SKEW_MS = 60 * 60 * 1000;
const DAY_MS = 24 * 60 * 60 * 1000;
/** Latest instant GeneralizedTime can express with a four-digit year. */
const MAX_TIME_MS = Date.UTC(9999, 11, 31, 23, 59, 59);
/** ub-common-name of RFC 5280. */
const MAX_COMMON_NAME = 64;
const OPTION_KEYS = new Set(['hosts', 'commonName', 'days', 'keyType']);

/**
 * Makes a fresh key pair and a self-signed X.509 v3 certificate for it.
 *
 * @example
 * ```ts
 * const { key, cert } = selfSignedCertificate({ hosts: ['localhost', '127.0.0.1'] });
 * const server = https.createServer({ key, cert }, handler);
 * // client side: https.request({ ca: cert, ... })
 * ```
 * @throws ArgumentError when an option has the wrong type or value: not an object, an
 *   unknown option, an empty or non-array `hosts`, a host that is neither a DNS name nor a
 *   valid IP literal, an empty or too long `commonName`, `days` not a positive finite
 *   number (or so large the date is past year 9999), or an unknown `keyType`.
 */
export function selfSignedCertificate(options: SelfSignedOptions = {}): SelfSignedCertificate {
  const opts = validate(options);
  const { generateKeyPairSync, sign } = nodeCrypto();
  const { publicKey, privateKey } = opts.keyType === 'rsa' ? generateKeyPairSync('rsa', { modulusLength: 2048, publicExponent: 0x10001 }) : generateKeyPairSync('ec', { namedCurve: 'P-256' });

  const now = Date.now();
  const notBefore = now - CLOCK_SKEW_MS;
  const notAfter = now + opts.days * DAY_MS;
  const tbs = tbsCertificate(opts, publicKey, notBefore, notAfter);
  const algorithm = signatureAlgorithm(opts.keyType);
  const signature = sign('sha256', tbs, privateKey);
  const der = sequence(tbs, algorithm, bitString(signature));

  return {
    key: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
    cert: pem('CERTIFICATE', der),
    fingerprint256: fingerprint(der),
  };
}

// ---------------------------------------------------------------------------------------
// Options

/** A subjectAltName entry: a dNSName, or an iPAddress as its 4 or 16 network-order bytes. */
type AltName = { kind: 'dns'; name: string } | { kind: 'ip'; bytes: Buffer };

interface Validated {
  altNames: AltName[];
  commonName: string;
  days: number;
  keyType: 'ec' | 'rsa';
}

const WHERE = 'selfSignedCertificate()';

function validate(options: unknown): Validated {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new ArgumentError(`${WHERE}: options must be an object, got ${describe(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (!OPTION_KEYS.has(key)) {
      throw new ArgumentError(`${WHERE}: unknown option ${JSON.stringify(key)} (known: ${[...OPTION_KEYS].join(', ')})`);
    }
  }
  const o = options as Record<string, unknown>;

  const hosts = o.hosts ?? DEFAULT_HOSTS;
  if (!Array.isArray(hosts)) {
    throw new ArgumentError(`${WHERE}: hosts must be an array of host names and IP addresses, got ${describe(hosts)}`);
  }
  if (hosts.length === 0) {
    throw new ArgumentError(`${WHERE}: hosts must not be empty; give at least one DNS name or IP address`);
  }
  const altNames: AltName[] = [];
  const seen = new Set<string>();
  for (const [i, host] of hosts.entries()) {
    const alt = parseHost(host, i);
    const id = alt.kind === 'dns' ? `dns:${alt.name.toLowerCase()}` : `ip:${alt.bytes.toString('hex')}`;
    if (!seen.has(id)) {
      seen.add(id);
      altNames.push(alt);
    }
  }

  const commonName = o.commonName ?? hosts[0];
  if (typeof commonName !== 'string') {
    throw new ArgumentError(`${WHERE}: commonName must be a string, got ${describe(commonName)}`);
  }
  if (commonName.length === 0 || commonName.length > MAX_COMMON_NAME) {
    throw new ArgumentError(
      `${WHERE}: commonName must be 1 to ${MAX_COMMON_NAME} characters, got ${commonName.length}` + (o.commonName === undefined ? ' (it defaults to hosts[0]; pass a shorter commonName)' : ''),
    );
  }

  const days = o.days ?? DEFAULT_DAYS;
  if (typeof days !== 'number' || !Number.isFinite(days) || days <= 0) {
    throw new ArgumentError(`${WHERE}: days must be a positive finite number, got ${describe(days)}`);
  }
  if (Date.now() + days * DAY_MS > MAX_TIME_MS) {
    throw new ArgumentError(`${WHERE}: days ${days} puts notAfter past the year 9999`);
  }

  const keyType = o.keyType ?? 'ec';
  if (keyType !== 'ec' && keyType !== 'rsa') {
    throw new ArgumentError(`${WHERE}: keyType must be 'ec' or 'rsa', got ${describe(keyType)}`);
  }

  return { altNames, commonName, days, keyType };
}

/** Letters, digits, hyphen and underscore; no hyphen at either end; 1 to 63 characters. */
const DNS_LABEL = /^(?!-)[A-Za-z0-9_-]{1,63}(?<!-)$/;

function parseHost(host: unknown, index: number): AltName {
  const where = `${WHERE}: hosts[${index}]`;
  if (typeof host !== 'string') {
    throw new ArgumentError(`${where} must be a string, got ${describe(host)}`);
  }
  if (host.length === 0) throw new ArgumentError(`${where} is an empty string`);

  const family = isIP(host);
  if (family !== 0 || host.includes(':') || /^[0-9.]+$/.test(host) || host.startsWith('[')) {
    if (host.startsWith('[') && host.endsWith(']')) {
      throw new ArgumentError(`${where} ${JSON.stringify(host)} is not a valid IP literal: write it without brackets`);
    }
    if (family === 6 && host.includes('%')) {
      throw new ArgumentError(`${where} ${JSON.stringify(host)} is not a valid IP literal for a certificate: remove the zone index`);
    }
    if (family === 4) return { kind: 'ip', bytes: ipv4Bytes(host) };
    if (family === 6) return { kind: 'ip', bytes: ipv6Bytes(host) };
    throw new ArgumentError(`${where} ${JSON.stringify(host)} is not a valid IPv4 or IPv6 literal`);
  }

  if (host.length > 253) {
    throw new ArgumentError(`${where} is not a valid DNS name: longer than 253 characters`);
  }
  const labels = host.split('.');
  const first = labels[0] === '*' && labels.length > 1 ? 1 : 0;
  for (let i = first; i < labels.length; i++) {
    if (!DNS_LABEL.test(labels[i]!)) {
      throw new ArgumentError(
        `${where} ${JSON.stringify(host)} is not a valid DNS name or IP literal ` +
          '(labels of 1-63 ASCII letters, digits, "-" or "_", separated by single dots, no trailing dot; ' +
          'only a whole "*" first label as wildcard; use punycode for international names)',
      );
    }
  }
  return { kind: 'dns', name: host };
}

/** `a.b.c.d` (already checked by `net.isIP`) to 4 bytes. */
function ipv4Bytes(s: string): Buffer {
  return Buffer.from(s.split('.').map((p) => Number(p)));
}

/** An IPv6 literal (already checked by `net.isIP`, no zone) to 16 bytes. */
function ipv6Bytes(s: string): Buffer {
  const out = Buffer.alloc(16);
  let text = s;
  // Trailing dotted IPv4 (`::ffff:1.2.3.4`) becomes two hextets.
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const b = ipv4Bytes(v4[1]!);
    text = `${text.slice(0, v4.index)}${b.readUInt16BE(0).toString(16)}:${b.readUInt16BE(2).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const hextets = (part: string): number[] => (part === '' ? [] : part.split(':').map((h) => parseInt(h, 16)));
  const before = hextets(head);
  const after = tail === undefined ? [] : hextets(tail);
  before.forEach((h, i) => out.writeUInt16BE(h, i * 2));
  after.forEach((h, i) => out.writeUInt16BE(h, (8 - after.length + i) * 2));
  return out;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `the string ${JSON.stringify(value)}`;
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'function') return 'a function';
  return String(value);
}

// ---------------------------------------------------------------------------------------
// Certificate structure

const OID = {
  commonName: '2.5.4.3',
  ecdsaWithSHA256: '1.2.840.10045.4.3.2',
  sha256WithRSAEncryption: '1.2.840.113549.1.1.11',
  subjectKeyIdentifier: '2.5.29.14',
  keyUsage: '2.5.29.15',
  subjectAltName: '2.5.29.17',
  basicConstraints: '2.5.29.19',
  authorityKeyIdentifier: '2.5.29.35',
  extKeyUsage: '2.5.29.37',
  serverAuth: '1.3.6.1.5.5.7.3.1',
} as const;

/** AlgorithmIdentifier of the signature: ECDSA has no parameters, RSA has NULL (RFC 5758, RFC 4055). */
function signatureAlgorithm(keyType: 'ec' | 'rsa'): Buffer {
  return keyType === 'rsa' ? sequence(oid(OID.sha256WithRSAEncryption), NULL) : sequence(oid(OID.ecdsaWithSHA256));
}

function tbsCertificate(opts: Validated, publicKey: KeyObject, notBefore: number, notAfter: number): Buffer {
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  const name = sequence(set(sequence(oid(OID.commonName), utf8String(opts.commonName))));
  const keyId = subjectKeyId(spki);
  return sequence(
    explicit(0, integer(Buffer.from([2]))), // version v3
    integer(serialNumber()),
    signatureAlgorithm(opts.keyType),
    name, // issuer
    sequence(time(notBefore), time(notAfter)),
    name, // subject
    spki,
    explicit(3, sequence(...extensions(opts, keyId))),
  );
}

function extensions(opts: Validated, keyId: Buffer): Buffer[] {
  const generalNames = opts.altNames.map(
    (alt) =>
      alt.kind === 'dns'
        ? tlv(0x82, Buffer.from(alt.name, 'ascii')) // [2] IMPLICIT IA5String dNSName
        : tlv(0x87, alt.bytes), // [7] IMPLICIT OCTET STRING iPAddress
  );
  // keyUsage bits: digitalSignature(0), keyEncipherment(2), keyCertSign(5).
  const usage = opts.keyType === 'rsa' ? [0, 2, 5] : [0, 5];
  return [
    extension(OID.basicConstraints, true, sequence(BOOLEAN_TRUE, integer(Buffer.from([0])))), // CA:TRUE, pathlen:0
    extension(OID.keyUsage, true, namedBits(usage)),
    extension(OID.extKeyUsage, false, sequence(oid(OID.serverAuth))),
    extension(OID.subjectAltName, false, sequence(...generalNames)),
    extension(OID.subjectKeyIdentifier, false, octetString(keyId)),
    extension(OID.authorityKeyIdentifier, false, sequence(tlv(0x80, keyId))), // [0] keyIdentifier
  ];
}

/** Extension ::= SEQUENCE { extnID, critical BOOLEAN DEFAULT FALSE, extnValue OCTET STRING }. */
function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return critical ? sequence(oid(id), BOOLEAN_TRUE, octetString(value)) : sequence(oid(id), octetString(value)); // DER omits a DEFAULT value
}

/** 16 random bytes, top bit cleared (positive) and the next one set (so exactly 16 bytes, never zero). */
function serialNumber(): Buffer {
  const serial = nodeCrypto().randomBytes(16);
  serial[0] = (serial[0]! & 0x7f) | 0x40;
  return serial;
}

/** RFC 5280 4.2.1.2 method (1): SHA-1 of the subjectPublicKey BIT STRING's bits. */
function subjectKeyId(spki: Buffer): Buffer {
  // SubjectPublicKeyInfo ::= SEQUENCE { algorithm SEQUENCE, subjectPublicKey BIT STRING }
  const outer = readTlv(spki, 0);
  const algorithm = readTlv(spki, outer.contentStart);
  const key = readTlv(spki, algorithm.end);
  if (outer.tag !== 0x30 || algorithm.tag !== 0x30 || key.tag !== 0x03) {
    throw new Error('selfSignedCertificate(): unexpected SubjectPublicKeyInfo from node:crypto');
  }
  return nodeCrypto()
    .createHash('sha1')
    .update(spki.subarray(key.contentStart + 1, key.end))
    .digest();
}

/** Reads the tag and length at `offset` of DER. */
function readTlv(der: Buffer, offset: number): { tag: number; contentStart: number; end: number } {
  const tag = der[offset]!;
  let length = der[offset + 1]!;
  let contentStart = offset + 2;
  if (length & 0x80) {
    const n = length & 0x7f;
    length = 0;
    for (let i = 0; i < n; i++) length = length * 256 + der[contentStart + i]!;
    contentStart += n;
  }
  return { tag, contentStart, end: contentStart + length };
}

function pem(label: string, der: Buffer): string {
  const b64 = der.toString('base64');
  const lines: string[] = [];
  for (let i = 0; i < b64.length; i += 64) lines.push(b64.slice(i, i + 64));
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}

function fingerprint(der: Buffer): string {
  const hex = nodeCrypto().createHash('sha256').update(der).digest('hex').toUpperCase();
  return hex.match(/../g)!.join(':');
}

// ---------------------------------------------------------------------------------------
// Minimal DER encoder

/** Tag, definite length (short form below 128, else long form), contents. */
function tlv(tag: number, content: Buffer): Buffer {
  const n = content.length;
  let header: Buffer;
  if (n < 0x80) {
    header = Buffer.from([tag, n]);
  } else {
    const len: number[] = [];
    for (let v = n; v > 0; v = Math.floor(v / 256)) len.unshift(v & 0xff);
    header = Buffer.from([tag, 0x80 | len.length, ...len]);
  }
  return Buffer.concat([header, content]);
}

function sequence(...items: Buffer[]): Buffer {
  return tlv(0x30, Buffer.concat(items));
}

/** SET OF: DER sorts the encoded elements. */
function set(...items: Buffer[]): Buffer {
  return tlv(0x31, Buffer.concat([...items].sort(Buffer.compare)));
}

/** A non-negative INTEGER from big-endian magnitude bytes: minimal, with a 0x00 pad if the top bit is set. */
function integer(magnitude: Buffer): Buffer {
  let start = 0;
  while (start < magnitude.length - 1 && magnitude[start] === 0) start++;
  let bytes = magnitude.subarray(start);
  if (bytes.length === 0) bytes = Buffer.from([0]);
  if (bytes[0]! & 0x80) bytes = Buffer.concat([Buffer.from([0]), bytes]);
  return tlv(0x02, bytes);
}

function oid(dotted: string): Buffer {
  const arcs = dotted.split('.').map(Number);
  const values = [arcs[0]! * 40 + arcs[1]!, ...arcs.slice(2)];
  const out: number[] = [];
  for (const value of values) {
    const base128: number[] = [value & 0x7f];
    for (let v = Math.floor(value / 128); v > 0; v = Math.floor(v / 128)) base128.unshift((v & 0x7f) | 0x80);
    out.push(...base128);
  }
  return tlv(0x06, Buffer.from(out));
}

function utf8String(s: string): Buffer {
  return tlv(0x0c, Buffer.from(s, 'utf8'));
}

function octetString(content: Buffer): Buffer {
  return tlv(0x04, content);
}

/** BIT STRING of whole bytes (0 unused bits). */
function bitString(content: Buffer): Buffer {
  return tlv(0x03, Buffer.concat([Buffer.from([0]), content]));
}

/** Named-bit BIT STRING (bit 0 = most significant bit of the first byte), trailing zero bits dropped as DER wants. */
function namedBits(bits: number[]): Buffer {
  const highest = Math.max(...bits);
  const bytes = Buffer.alloc(Math.floor(highest / 8) + 1);
  for (const bit of bits) bytes[bit >> 3]! |= 0x80 >> (bit & 7);
  const unused = 7 - (highest & 7);
  return tlv(0x03, Buffer.concat([Buffer.from([unused]), bytes]));
}

/** UTCTime (`YYMMDDHHMMSSZ`) for years before 2050, else GeneralizedTime (`YYYYMMDDHHMMSSZ`), RFC 5280 4.1.2.5. */
function time(ms: number): Buffer {
  const d = new Date(ms);
  const year = d.getUTCFullYear();
  const pad = (n: number): string => String(n).padStart(2, '0');
  const rest = `${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}${pad(d.getUTCSeconds())}Z`;
  return year < 2050 ? tlv(0x17, Buffer.from(`${pad(year % 100)}${rest}`, 'ascii')) : tlv(0x18, Buffer.from(`${String(year).padStart(4, '0')}${rest}`, 'ascii'));
}

/** [n] EXPLICIT: constructed context-specific tag around the whole inner encoding. */
function explicit(n: number, inner: Buffer): Buffer {
  return tlv(0xa0 | n, inner);
}

const NULL = Buffer.from([0x05, 0x00]);
const BOOLEAN_TRUE = Buffer.from([0x01, 0x01, 0xff]);
