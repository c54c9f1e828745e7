import { execFile } from 'node:child_process';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as tls from 'node:tls';
import { afterEach, describe, expect, it } from 'vitest';
import { ArgumentError } from '../../kernel/errors.js';
import { selfSignedCertificate, type SelfSignedOptions } from '../../tls/self-signed.js';

const run = promisify(execFile);
const HOUR = 60 * 60 * 1000;
const DAY = 24 * HOUR;
const KEY_TYPES = ['ec', 'rsa'] as const;

// Everything opened by a test is closed after it, whatever the outcome.
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** A temp file holding `text`, removed after the test. */
async function tempFile(name: string, text: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'swy-self-signed-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, name);
  await writeFile(file, text);
  return file;
}

/** A TLS server on 127.0.0.1, port 0, that writes "hello" and ends each connection. */
async function tlsServer(key: string, cert: string): Promise<number> {
  const sockets = new Set<tls.TLSSocket>();
  const server = tls.createServer({ key, cert }, (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    socket.end('hello');
  });
  // A client refusing the certificate makes the handshake fail on this side too.
  server.on('tlsClientError', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  );
  return (server.address() as AddressInfo).port;
}

type Outcome = { ok: true; authorized: boolean; data: string } | { ok: false; code: string | undefined };

/** Connects with full verification (rejectUnauthorized defaults to true) and reads to the end. */
function connect(options: tls.ConnectionOptions): Promise<Outcome> {
  return new Promise((resolve) => {
    const socket = tls.connect(options);
    cleanups.push(() => {
      socket.destroy();
    });
    let data = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (data += chunk));
    socket.on('end', () => resolve({ ok: true, authorized: socket.authorized, data }));
    socket.on('error', (err: NodeJS.ErrnoException) => resolve({ ok: false, code: err.code }));
  });
}

describe('selfSignedCertificate() output', () => {
  it.each(KEY_TYPES)('%s: defaults parse with X509Certificate', (keyType) => {
    const before = Date.now();
    const made = selfSignedCertificate({ keyType });
    const after = Date.now();
    const x = new X509Certificate(made.cert);

    expect(made.cert).toMatch(/^-----BEGIN CERTIFICATE-----\n[A-Za-z0-9+/=\n]+\n-----END CERTIFICATE-----\n$/);
    expect(made.key).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    expect(x.subject).toBe('CN=localhost');
    expect(x.issuer).toBe('CN=localhost');
    expect(x.subjectAltName).toBe('DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1');
    expect(x.checkHost('localhost')).toBe('localhost');
    expect(x.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(x.checkIP('::1')).toBe('::1');
    expect(x.checkHost('example.com')).toBeUndefined();
    expect(x.ca).toBe(true);
    expect(x.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']); // extendedKeyUsage serverAuth

    // Validity: one hour back for clock skew, 30 days ahead; DER times have whole seconds.
    const from = Date.parse(x.validFrom);
    const to = Date.parse(x.validTo);
    expect(from).toBeGreaterThanOrEqual(Math.floor((before - HOUR) / 1000) * 1000);
    expect(from).toBeLessThanOrEqual(after - HOUR);
    expect(to).toBeGreaterThanOrEqual(Math.floor((before + 30 * DAY) / 1000) * 1000);
    expect(to).toBeLessThanOrEqual(after + 30 * DAY);

    const privateKey = createPrivateKey(made.key);
    expect(privateKey.asymmetricKeyType).toBe(keyType);
    expect(x.publicKey.asymmetricKeyType).toBe(keyType);
    if (keyType === 'ec') expect(x.publicKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    else expect(x.publicKey.asymmetricKeyDetails?.modulusLength).toBe(2048);
    expect(x.checkPrivateKey(privateKey)).toBe(true);
    expect(x.verify(x.publicKey)).toBe(true); // self-signed
    expect(x.checkIssued(x)).toBe(true);
    expect(made.fingerprint256).toBe(x.fingerprint256);
    expect(made.fingerprint256).toMatch(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
  });

  it('takes hosts, commonName and days; dedupes hosts; wildcard and IPv6 forms', () => {
    const made = selfSignedCertificate({
      hosts: ['api.test', '*.apps.test', '10.0.0.1', '2001:db8::1', '::ffff:192.0.2.1', 'API.test', '10.0.0.1'],
      commonName: 'My dev server',
      days: 2,
    });
    const x = new X509Certificate(made.cert);
    expect(x.subject).toBe('CN=My dev server');
    expect(x.subjectAltName).toBe('DNS:api.test, DNS:*.apps.test, IP Address:10.0.0.1, IP Address:2001:DB8:0:0:0:0:0:1, IP Address:0:0:0:0:0:FFFF:C000:201');
    expect(x.checkHost('x.apps.test')).toBe('*.apps.test');
    expect(x.checkIP('2001:db8::1')).toBe('2001:db8::1');
    const span = Date.parse(x.validTo) - Date.parse(x.validFrom);
    expect(Math.abs(span - (2 * DAY + HOUR))).toBeLessThanOrEqual(1000);
  });

  it('commonName defaults to hosts[0], which may be an IP address', () => {
    const x = new X509Certificate(selfSignedCertificate({ hosts: ['127.0.0.1'] }).cert);
    expect(x.subject).toBe('CN=127.0.0.1');
    expect(x.subjectAltName).toBe('IP Address:127.0.0.1');
  });

  it('uses GeneralizedTime past 2049', () => {
    const days = 40 * 365;
    const x = new X509Certificate(selfSignedCertificate({ days }).cert);
    const to = new Date(Date.parse(x.validTo));
    expect(to.getUTCFullYear()).toBeGreaterThanOrEqual(2050);
    expect(Math.abs(to.getTime() - (Date.now() + days * DAY))).toBeLessThan(60_000);
  });

  it('serial numbers are positive, 16 bytes and random', () => {
    const serials = new Set<string>();
    for (let i = 0; i < 5; i++) {
      const serial = new X509Certificate(selfSignedCertificate().cert).serialNumber;
      expect(serial).toMatch(/^[4-7][0-9A-F]{31}$/);
      serials.add(serial);
    }
    expect(serials.size).toBe(5);
  });
});

describe('selfSignedCertificate() over TLS', () => {
  it.each(KEY_TYPES)('%s: verifies for localhost and 127.0.0.1, not for a name outside the SANs', async (keyType) => {
    const { key, cert } = selfSignedCertificate({ keyType });
    const port = await tlsServer(key, cert);

    const byName = await connect({ host: '127.0.0.1', port, ca: cert, servername: 'localhost' });
    expect(byName).toEqual({ ok: true, authorized: true, data: 'hello' });

    // An IP host sends no SNI and is checked against the iPAddress SANs.
    const byIp = await connect({ host: '127.0.0.1', port, ca: cert });
    expect(byIp).toEqual({ ok: true, authorized: true, data: 'hello' });

    const wrongName = await connect({ host: '127.0.0.1', port, ca: cert, servername: 'not-listed.test' });
    expect(wrongName).toEqual({ ok: false, code: 'ERR_TLS_CERT_ALTNAME_INVALID' });

    // Without the certificate as trust anchor the chain does not verify at all.
    const untrusted = await connect({ host: '127.0.0.1', port, servername: 'localhost' });
    expect(untrusted).toEqual({ ok: false, code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
  });

  it('a certificate made for another key is not trusted', async () => {
    const served = selfSignedCertificate();
    const other = selfSignedCertificate();
    const port = await tlsServer(served.key, served.cert);
    const result = await connect({ host: '127.0.0.1', port, ca: other.cert, servername: 'localhost' });
    expect(result.ok).toBe(false);
  });
});

describe('selfSignedCertificate() with external tools', () => {
  it.each(KEY_TYPES)('%s: curl --cacert fetches from an https server', async (keyType) => {
    const { key, cert } = selfSignedCertificate({ keyType });
    const server = createHttpsServer({ key, cert }, (_req, res) => {
      res.end(`body over ${keyType}`);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(
      () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    );
    const { port } = server.address() as AddressInfo;
    const caFile = await tempFile('cert.pem', cert);

    const curl = (url: string, ...extra: string[]) => run('/usr/bin/curl', ['--silent', '--show-error', '--fail', '--max-time', '15', '--cacert', caFile, ...extra, url]);

    const byIp = await curl(`https://127.0.0.1:${port}/`);
    expect(byIp.stdout).toBe(`body over ${keyType}`);
    const byName = await curl(`https://localhost:${port}/`, '--resolve', `localhost:${port}:127.0.0.1`);
    expect(byName.stdout).toBe(`body over ${keyType}`);
    // A name outside the SANs fails verification.
    await expect(curl(`https://elsewhere.test:${port}/`, '--resolve', `elsewhere.test:${port}:127.0.0.1`)).rejects.toMatchObject({ code: 60 }); // CURLE_PEER_FAILED_VERIFICATION
  });

  it.each(KEY_TYPES)('%s: openssl parses it and verifies it strictly as a TLS server certificate', async (keyType) => {
    const { cert } = selfSignedCertificate({ keyType, hosts: ['localhost', 'dev.test', '127.0.0.1', '::1'] });
    const file = await tempFile('cert.pem', cert);

    const { stdout: text } = await run('/usr/bin/openssl', ['x509', '-noout', '-text', '-in', file]);
    expect(text).toContain('Version: 3 (0x2)');
    expect(text).toContain('Subject: CN = localhost');
    expect(text).toContain('DNS:localhost, DNS:dev.test, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1');
    expect(text).toMatch(/Basic Constraints: critical\s+CA:TRUE/);
    expect(text).toContain(keyType === 'ec' ? 'ecdsa-with-SHA256' : 'sha256WithRSAEncryption');
    expect(text).toMatch(keyType === 'ec' ? /Key Usage: critical\s+Digital Signature, Certificate Sign\n/ : /Key Usage: critical\s+Digital Signature, Key Encipherment, Certificate Sign\n/);
    expect(text).toContain('TLS Web Server Authentication');

    const { stdout: verified } = await run('/usr/bin/openssl', ['verify', '-x509_strict', '-purpose', 'sslserver', '-CAfile', file, file]);
    expect(verified.trim()).toBe(`${file}: OK`);
  });
});

describe('selfSignedCertificate() option validation', () => {
  const bad: Array<[string, unknown, RegExp]> = [
    ['options not an object', 'localhost', /options must be an object/],
    ['options null', null, /options must be an object/],
    ['unknown option', { host: ['localhost'] }, /unknown option "host"/],
    ['hosts not an array', { hosts: 'localhost' }, /hosts must be an array/],
    ['hosts empty', { hosts: [] }, /hosts must not be empty/],
    ['host not a string', { hosts: ['localhost', 42] }, /hosts\[1\] must be a string/],
    ['host empty', { hosts: [''] }, /hosts\[0\] is an empty string/],
    ['bad IPv4', { hosts: ['256.1.1.1'] }, /hosts\[0\] "256.1.1.1" is not a valid IPv4 or IPv6 literal/],
    ['short IPv4', { hosts: ['10.1'] }, /not a valid IPv4 or IPv6 literal/],
    ['bad IPv6', { hosts: ['1:2:3:4:5:6:7:8:9'] }, /not a valid IPv4 or IPv6 literal/],
    ['bracketed IPv6', { hosts: ['[::1]'] }, /without brackets/],
    ['IPv6 zone', { hosts: ['fe80::1%eth0'] }, /remove the zone index/],
    ['bad DNS name', { hosts: ['has space.test'] }, /not a valid DNS name/],
    ['trailing dot', { hosts: ['localhost.'] }, /not a valid DNS name/],
    ['hyphen edge', { hosts: ['-bad.test'] }, /not a valid DNS name/],
    ['inner wildcard', { hosts: ['a.*.test'] }, /not a valid DNS name/],
    ['non-ASCII name', { hosts: ['bücher.test'] }, /punycode/],
    ['commonName not a string', { commonName: 7 }, /commonName must be a string/],
    ['commonName empty', { commonName: '' }, /commonName must be 1 to 64 characters/],
    ['commonName too long', { commonName: 'x'.repeat(65) }, /commonName must be 1 to 64 characters/],
    ['default commonName too long', { hosts: [`${'a'.repeat(60)}.${'b'.repeat(10)}`] }, /defaults to hosts\[0\]/],
    ['days zero', { days: 0 }, /days must be a positive finite number, got 0/],
    ['days negative', { days: -1 }, /days must be a positive finite number/],
    ['days NaN', { days: NaN }, /days must be a positive finite number/],
    ['days infinite', { days: Infinity }, /days must be a positive finite number/],
    ['days a string', { days: '30' }, /days must be a positive finite number, got the string "30"/],
    ['days past 9999', { days: 3_000_000 }, /past the year 9999/],
    ['keyType unknown', { keyType: 'ed25519' }, /keyType must be 'ec' or 'rsa'/],
  ];

  it.each(bad)('%s throws ArgumentError', (_label, options, message) => {
    let caught: unknown;
    try {
      selfSignedCertificate(options as SelfSignedOptions);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ArgumentError);
    expect((caught as ArgumentError).code).toBe('SWY_ERR_ARGUMENT');
    expect((caught as Error).message).toMatch(/^selfSignedCertificate\(\): /);
    expect((caught as Error).message).toMatch(message);
  });

  it('undefined options fall back to the defaults', () => {
    const x = new X509Certificate(selfSignedCertificate({ hosts: undefined, commonName: undefined, days: undefined, keyType: undefined }).cert);
    expect(x.subjectAltName).toBe('DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1');
  });
});
