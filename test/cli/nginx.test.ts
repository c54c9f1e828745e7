/**
 * The real `switchyard` binary against nginx from Debian (/usr/sbin/nginx), started on free
 * ports with a temp config: a plain listener (static files, gzip, a redirect, cookies) and a
 * TLS listener with HTTP/2 using a certificate from `selfSignedCertificate()`. Exit codes,
 * -v output, -o with a 20 MiB file, gzip decoding, --http2 and --http1 over TLS, --cookies
 * in curl's cookies.txt format (read back by curl itself). The real binary for the main
 * checks; variations run the same code in-process (`runMain`) to keep the folder fast.
 */
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selfSignedCertificate } from '../../tls/self-signed.js';
import { cleanEnv, nginxHttpCommon, nginxPreamble, startNginx, stopPeer, tempDir as peerTempDir, type Peer } from '../helpers/peers.js';
import { runCli, runMain, tempDir } from './helpers.js';

const run = promisify(execFile);
const BIG = randomBytes(20 * 1024 * 1024);
const TEXT = 'switchyard and nginx, line after line. '.repeat(4000);
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

let dir = '';
let peer: Peer | null = null;
let plain = '';
let secure = '';
let certFile = '';

function config(port: number, tlsPort: number): string {
  return `
${nginxPreamble(dir)}
http {${nginxHttpCommon(dir)}
  gzip on;
  gzip_types text/plain;
  gzip_min_length 256;
  server {
    listen 127.0.0.1:${port};
    listen 127.0.0.1:${tlsPort} ssl http2;
    server_name localhost;
    ssl_certificate ${dir}/cert.pem;
    ssl_certificate_key ${dir}/key.pem;
    root ${dir}/www;
    location = /old { return 301 /hello.txt; }
    location = /login { add_header Set-Cookie "sid=abc123; Path=/; HttpOnly" always; default_type text/plain; return 200 "welcome\\n"; }
    location = /whoami { default_type text/plain; return 200 "cookie=$http_cookie\\n"; }
    location = /boom { default_type text/plain; return 503 "try later\\n"; }
    location / { }
  }
}
`;
}

beforeAll(async () => {
  dir = await peerTempDir('swy-cli-nginx-');
  await mkdir(join(dir, 'www'), { mode: 0o755 });
  await mkdir(join(dir, 'tmp'), { mode: 0o755 });
  await writeFile(join(dir, 'www', 'hello.txt'), 'hello from nginx\n', { mode: 0o644 });
  await writeFile(join(dir, 'www', 'text.txt'), TEXT, { mode: 0o644 });
  await writeFile(join(dir, 'www', 'big.bin'), BIG, { mode: 0o644 });
  const cert = selfSignedCertificate();
  await writeFile(join(dir, 'cert.pem'), cert.cert, { mode: 0o644 });
  await writeFile(join(dir, 'key.pem'), cert.key, { mode: 0o600 });
  certFile = join(dir, 'cert.pem');
  const started = await startNginx(dir, 2, ([port, tlsPort]) => config(port!, tlsPort!));
  peer = started.peer;
  plain = `http://127.0.0.1:${started.ports[0]}`;
  secure = `https://localhost:${started.ports[1]}`;
});

afterAll(async () => {
  await stopPeer(peer);
  if (dir !== '') await rm(dir, { recursive: true, force: true });
});

describe('switchyard against nginx', () => {
  it('get: body and exit 0; a missing file exits 4; a 503 exits 4', async () => {
    const [a, b, c] = await Promise.all([runCli(['get', `${plain}/hello.txt`]), runCli(['get', `${plain}/missing.txt`]), runMain(['get', `${plain}/boom`])]);
    expect(a.out).toBe('hello from nginx\n');
    expect(a.code).toBe(0);
    expect(b.code).toBe(4);
    expect(b.out).toMatch(/404 Not Found/);
    expect(c.code).toBe(4);
    expect(c.out).toBe('try later\n');
  });

  it('-v: the head as nginx sent it, gzip included, and the decoded body; redirects followed', async () => {
    const [a, b] = await Promise.all([runCli(['get', '-v', `${plain}/text.txt`]), runMain(['get', '-v', `${plain}/old`])]);
    expect(a.code).toBe(0);
    const split = a.out.indexOf('\n\n');
    const head = a.out.slice(0, split);
    expect(head).toMatch(/^HTTP\/1\.1 200 OK\n/);
    expect(head).toMatch(/\nServer: nginx/);
    expect(head).toMatch(/\nContent-Encoding: gzip(\n|$)/);
    expect(a.out.slice(split + 2)).toBe(TEXT);
    expect(b.out).toMatch(/^HTTP\/1\.1 200 OK\n[\s\S]*\n\nhello from nginx\n$/);
    expect(b.stderr).toMatch(/switchyard ~ 301 redirect .*\/old -> .*\/hello\.txt/);
  });

  it('-o: a 20 MiB file, byte for byte', async () => {
    const d = await tempDir();
    const r = await runCli(['get', `${plain}/big.bin`, '-o', join(d, 'big.bin')]);
    expect(r.code).toBe(0);
    expect(r.out).toBe('');
    expect(sha(await readFile(join(d, 'big.bin')))).toBe(sha(BIG));
  });

  it('--http2 over TLS (ALPN) with --cacert; --http1 stays on HTTP/1.1; HEAD over HTTP/2', async () => {
    const [a, b, c] = await Promise.all([
      runCli(['get', '-v', '--http2', '--cacert', certFile, `${secure}/hello.txt`]),
      runMain(['get', '-v', '--http1', '--cacert', certFile, `${secure}/hello.txt`]),
      runMain(['head', '-v', '--http2', '--cacert', certFile, `${secure}/big.bin`]),
    ]);
    expect(a.stderr).not.toMatch(/^switchyard: /m);
    expect(a.code).toBe(0);
    expect(a.out).toMatch(/^HTTP\/2 200\n/);
    expect(a.out.endsWith('\n\nhello from nginx\n')).toBe(true);
    expect(b.out).toMatch(/^HTTP\/1\.1 200 OK\n/);
    expect(b.out.endsWith('\n\nhello from nginx\n')).toBe(true);
    expect(c.code).toBe(0);
    expect(c.out).toMatch(/^HTTP\/2 200\n[\s\S]*\ncontent-length: 20971520\n[\s\S]*\n\n$/i);
  });

  it('in-process: -o over HTTP/2, the 20 MiB file byte for byte', async () => {
    const d = await tempDir();
    const r = await runMain(['get', '--http2', '--cacert', certFile, `${secure}/big.bin`, '-o', join(d, 'big.bin')]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(sha(await readFile(join(d, 'big.bin')))).toBe(sha(BIG));
  });

  it('--cookies: stores Set-Cookie in a cookies.txt that curl reads, and sends what curl wrote', async () => {
    const d = await tempDir();
    const jar = join(d, 'cookies.txt');
    const login = await runCli(['post', `${plain}/login`, '--cookies', jar]);
    expect(login.code).toBe(0);
    const text = await readFile(jar, 'utf8');
    expect(text).toMatch(/^# Netscape HTTP Cookie File\n/);
    expect(text).toMatch(/\n#HttpOnly_127\.0\.0\.1\tFALSE\t\/\tFALSE\t0\tsid\tabc123\n/);
    // Our file, read by curl.
    const viaCurl = await run('/usr/bin/curl', ['-s', '-b', jar, `${plain}/whoami`], { env: cleanEnv(), encoding: 'utf8' });
    expect(viaCurl.stdout).toBe('cookie=sid=abc123\n');
    // Our file, read by us on the next call.
    const again = await runMain(['get', `${plain}/whoami`, '--cookies', jar]);
    expect(again.out).toBe('cookie=sid=abc123\n');
    // curl's file, read by us.
    const curlJar = join(d, 'curl-cookies.txt');
    await run('/usr/bin/curl', ['-s', '-c', curlJar, '-o', '/dev/null', `${plain}/login`], { env: cleanEnv() });
    const fromCurl = await runMain(['get', `${plain}/whoami`, '--cookies', curlJar]);
    expect(fromCurl.out).toBe('cookie=sid=abc123\n');
  });
});
