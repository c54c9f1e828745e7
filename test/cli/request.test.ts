/**
 * The request commands against the project's own server (started in this process on port 0).
 * The real binary (a child process) for what a user runs: exit codes, -v output, -F
 * upload, -o with a 20 MiB body, HTTPS; the same code in-process through `main()` (no process
 * start, so the folder stays fast) for the variations: bodies, redirects, timeouts, the
 * progress bar on a (pretend) terminal.
 */
import { createHash, randomBytes } from 'node:crypto';
import { access, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as HTTP from '../../index.js';
import { CallbackBody, createKernel, Response, type Kernel, type Request, type Server } from '../../kernel/index.js';
import { selfSignedCertificate } from '../../tls/self-signed.js';
import { presets } from '../../plugins/index.js';
import { parseMultipartForm } from '../../plugins/multipart/index.js';
import { cleanEnv, findBinary, freePort, startPeer, stopPeer, waitListening } from '../helpers/peers.js';
import { main } from '../../cli/main.js';
import { BIN, runCli, runCommand, runMain, tempDir } from './helpers.js';

const BIG = randomBytes(20 * 1024 * 1024);
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

let server: Server;
let base = '';
let tlsServer: Server;
let tlsBase = '';
let certFile = '';
let certDir = '';
/** The servers' kernel: the command line's plugins, so HTTP/2 (h2 by ALPN, h2c) is served. */
let kernel: Kernel;
/** Requests the handler saw, by path. */
const seen = new Map<string, Request>();
/** Handlers parked forever by /hang, released in afterAll. */
const parked: (() => void)[] = [];

function bodyText(req: Request): string {
  const b = req.body;
  if (b === null) return '';
  return typeof b === 'string' ? b : Buffer.from(b as Uint8Array).toString('utf8');
}

async function handler(req: Request): Promise<Response> {
  const u = new URL(req.target, 'http://x');
  seen.set(u.pathname, req);
  const p = u.pathname;
  if (p === '/hello')
    return new Response(
      200,
      [
        ['Content-Type', 'text/plain'],
        ['X-Test', 'yes'],
      ],
      'hello world\n',
    );
  const st = /^\/status\/(\d{3})$/.exec(p);
  if (st !== null) return new Response(Number(st[1]), [['Content-Type', 'text/plain']], `status ${st[1]}\n`);
  if (p === '/echo') {
    return new Response(
      200,
      [['Content-Type', 'application/json']],
      JSON.stringify({
        method: req.method,
        contentType: req.headers.get('Content-Type') ?? null,
        accept: req.headers.get('Accept') ?? null,
        authorization: req.headers.get('Authorization') ?? null,
        custom: req.headers.getAll('X-Custom'),
        body: bodyText(req),
      }),
    );
  }
  if (p === '/upload') {
    const parts = parseMultipartForm(req) ?? [];
    return new Response(
      200,
      [['Content-Type', 'application/json']],
      JSON.stringify({
        contentLength: req.headers.get('Content-Length') ?? null,
        transferEncoding: req.headers.get('Transfer-Encoding') ?? null,
        parts: parts.map((x) => ({
          name: x.name,
          filename: x.filename,
          contentType: x.contentType,
          size: x.data.length,
          sha: sha(x.data),
          text: x.filename === null ? Buffer.from(x.data).toString() : '',
        })),
      }),
    );
  }
  if (p === '/big') return new Response(200, [['Content-Type', 'application/octet-stream']], BIG);
  if (p === '/redirect') return new Response(302, [['Location', '/hello']], 'moved\n');
  if (p === '/empty404') return new Response(404, null);
  if (p === '/stall') {
    // 64 KiB of a declared 1 MiB, then nothing until afterAll.
    let sent = false;
    const body = new CallbackBody((dst) => {
      if (sent) return new Promise<number>((resolve) => parked.push(() => resolve(0)));
      sent = true;
      const n = Math.min(dst.length, 64 * 1024);
      dst.fill(120, 0, n);
      return n;
    });
    return new Response(200, [['Content-Length', String(1024 * 1024)]], body);
  }
  if (p === '/gone-redirect') return new Response(302, [['Location', '/status/410']], 'moved\n');
  if (p === '/method')
    return new Response(
      200,
      [
        ['Content-Type', 'text/plain'],
        ['X-Method', req.method],
      ],
      `${req.method} ${req.headers.get('User-Agent') ?? '-'}\n`,
    );
  if (p === '/gzip') {
    const gz = /\bgzip\b/.test(req.headers.get('Accept-Encoding') ?? '');
    return new Response(200, [['Content-Type', 'text/plain'], ...(gz ? [['Content-Encoding', 'gzip'] as [string, string]] : [])], gz ? gzipSync('squeezed\n') : 'squeezed\n');
  }
  if (p === '/hang') return new Promise<Response>((resolve) => parked.push(() => resolve(new Response(200, null, 'late'))));
  return new Response(404, [['Content-Type', 'text/plain']], 'not found\n');
}

beforeAll(async () => {
  kernel = createKernel().register(presets.defaults);
  server = await HTTP.serve(handler, { kernel, host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${server.port}`;
  const cert = selfSignedCertificate();
  certDir = await mkdtemp(join(tmpdir(), 'swy-cli-tls-'));
  certFile = join(certDir, 'cert.pem');
  await writeFile(certFile, cert.cert);
  tlsServer = await HTTP.serve(handler, { kernel, host: '127.0.0.1', port: 0, tls: { key: cert.key, cert: cert.cert } });
  tlsBase = `https://localhost:${tlsServer.port}`;
});

afterAll(async () => {
  for (const p of parked.splice(0)) p();
  await server?.forceClose();
  await tlsServer?.forceClose();
  await kernel?.close();
  if (certDir !== '') await rm(certDir, { recursive: true, force: true });
});

describe('the binary', () => {
  it('prints the body and exits 0 for a 2xx', async () => {
    const r = await runCli(['get', `${base}/hello`]);
    expect(r.stderr).toBe('');
    expect(r.out).toBe('hello world\n');
    expect(r.code).toBe(0);
  });

  it('exits 4 for a 404 (and, in-process, a 500), still printing the body', async () => {
    const [a, b] = await Promise.all([runCli(['get', `${base}/nope`]), runMain(['get', `${base}/status/500`])]);
    expect(a.code).toBe(4);
    expect(a.out).toBe('not found\n');
    expect(b.code).toBe(4);
    expect(b.out).toBe('status 500\n');
  });

  it('exits 1 with the error message when the connection is refused', async () => {
    // A port that was just in use and is now closed.
    const s = await HTTP.serve(() => new Response(200), { port: 0 });
    const port = s.port;
    await s.forceClose();
    const r = await runCli(['get', `http://127.0.0.1:${port}/`]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^switchyard: cannot connect to 127\\.0\\.0\\.1:${port}: .*ECONNREFUSED`));
    expect(r.out).toBe('');
  });

  it('exits 2 for usage errors, saying what was wrong (the full table runs in main.test.ts)', async () => {
    const [a, d] = await Promise.all([runCli(['get', 'http://x/', '--frobnicate']), runCli([])]);
    expect(a.stderr).toMatch(/^switchyard get: unknown option --frobnicate\nRun 'switchyard get --help' for its options\.\n$/);
    expect(d.stderr).toMatch(/^Usage: switchyard <command>/);
    for (const r of [a, d]) {
      expect(r.code).toBe(2);
      expect(r.out).toBe('');
    }
  });

  it('--help lists the options and examples and exits 0', async () => {
    const r = await runCli(['post', '--help']);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^Usage: switchyard post URL \[options\]/);
    for (const flag of ['--header', '--data', '--form', '--json', '--output', '--http2', '--http1', '--proxy', '--no-follow', '--timeout', '--verbose', '--cookies', '--cacert']) {
      expect(r.out).toContain(flag);
    }
    expect(r.out).toMatch(/Examples:\n/);
    expect(r.out).toMatch(/Exit codes:\n/);
  });

  it('-v prints the status line and headers before the body and a trace on stderr; -vv adds the heads to the trace', async () => {
    const [r, rr] = await Promise.all([runCli(['get', '-v', `${base}/hello`]), runMain(['get', '-vv', `${base}/hello`])]);
    expect(r.code).toBe(0);
    const [head, body] = r.out.split('\n\n');
    const lines = head!.split('\n');
    expect(lines[0]).toBe('HTTP/1.1 200 OK');
    expect(lines).toContain('Content-Type: text/plain');
    expect(lines).toContain('X-Test: yes');
    expect(lines).toContain('Content-Length: 12');
    expect(body).toBe('hello world\n');
    expect(r.stderr).toMatch(new RegExp(`switchyard > GET ${base}/hello`));
    expect(r.stderr).toMatch(/switchyard < 200 OK/);
    expect(r.stderr).toMatch(/switchyard = 200 .* in [\d.]+ ms \(1 attempt\)/);
    expect(r.stderr).not.toMatch(/User-Agent/);
    expect(rr.code).toBe(0);
    expect(rr.stderr).toMatch(/switchyard > {3}User-Agent: switchyard/);
    expect(rr.stderr).toMatch(/switchyard < {3}X-Test: yes/);
  });

  it('-F uploads files and fields as multipart/form-data with a Content-Length', async () => {
    const dir = await tempDir();
    const file = randomBytes(3 * 1024 * 1024 + 5);
    await writeFile(join(dir, 'photo.png'), file);
    await writeFile(join(dir, 'notes.bin'), 'plain words');
    const r = await runCli([
      'post',
      `${base}/upload`,
      '-F',
      `image=@${join(dir, 'photo.png')}`,
      '-F',
      `doc=@${join(dir, 'notes.bin')};type=text/markdown;filename=README.md`,
      '-F',
      'note=hello there',
    ]);
    expect(r.code).toBe(0);
    const u = JSON.parse(r.out);
    expect(u.transferEncoding).toBeNull();
    expect(Number(u.contentLength)).toBeGreaterThan(file.length);
    expect(u.parts).toEqual([
      { name: 'image', filename: 'photo.png', contentType: 'image/png', size: file.length, sha: sha(file), text: '' },
      { name: 'doc', filename: 'README.md', contentType: 'text/markdown', size: 11, sha: sha(Buffer.from('plain words')), text: '' },
      { name: 'note', filename: null, contentType: 'text/plain', size: 11, sha: sha(Buffer.from('hello there')), text: 'hello there' },
    ]);
  });

  it('-o writes a 20 MiB body to a file, nothing to stdout, no progress bar off a terminal', async () => {
    const dir = await tempDir();
    const out = join(dir, 'big.bin');
    const r = await runCli(['get', `${base}/big`, '-o', out]);
    expect(r.code).toBe(0);
    expect(r.out).toBe('');
    expect(r.stderr).toBe('');
    const got = await readFile(out);
    expect(got.length).toBe(BIG.length);
    expect(sha(got)).toBe(sha(BIG));
  });

  it('HTTPS: an untrusted certificate fails with exit 1; --cacert trusts it', async () => {
    const [a, b] = await Promise.all([runMain(['get', `${tlsBase}/hello`]), runCli(['get', `${tlsBase}/hello`, '--cacert', certFile])]);
    expect(a.code).toBe(1);
    expect(a.stderr).toMatch(/^switchyard: .*(self[- ]signed|certificate)/i);
    expect(b.stderr).toBe('');
    expect(b.out).toBe('hello world\n');
    expect(b.code).toBe(0);
  });
});

describe('the progress bar on a real terminal', () => {
  it('-o under a pseudo-terminal (util-linux script) draws the bar on stderr, ending at 100%', async () => {
    const script = findBinary(['/usr/bin/script'], 'bsdutils');
    const dir = await tempDir();
    const out = join(dir, 'big.bin');
    const quote = (a: string): string => `'${a.replace(/'/g, `'\\''`)}'`;
    const cmd = [process.execPath, BIN, 'get', `${base}/big`, '-o', out].map(quote).join(' ');
    // script runs the command on a new pty and copies what the terminal shows to its stdout.
    const r = await runCommand(script, ['-qec', cmd, '/dev/null']);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/\r\[#{20,40}\] 100% +20\.0 MiB \/ +20\.0 MiB +[\d.]+ [KMG]i?B\/s {2}in \d+s *\x1b\[K\r?\n/);
    expect(sha(await readFile(out))).toBe(sha(BIG));
  });
});

describe('HTTP/2', () => {
  it('--http2 over TLS (ALPN) with --cacert; in-process: h2c (prior knowledge) on http://, -F and -o over HTTP/2', async () => {
    const dir = await tempDir();
    const file = randomBytes(1024 * 1024 + 3);
    await writeFile(join(dir, 'f.bin'), file);
    const [a, b, c, d] = await Promise.all([
      runCli(['get', '-v', '--http2', '--cacert', certFile, `${tlsBase}/hello`]),
      runMain(['get', '-v', '--http2', `${base}/hello`]),
      runMain(['post', '--http2', '--cacert', certFile, `${tlsBase}/upload`, '-F', `f=@${join(dir, 'f.bin')}`]),
      runMain(['get', '--http2', '--cacert', certFile, `${tlsBase}/big`, '-o', join(dir, 'big.bin')]),
    ]);
    for (const r of [a, b]) {
      expect(r.stderr).not.toMatch(/^switchyard: /m);
      expect(r.code).toBe(0);
      expect(r.out).toMatch(/^HTTP\/2 200\n/);
      expect(r.out.endsWith('\n\nhello world\n')).toBe(true);
    }
    expect(c.code).toBe(0);
    expect(JSON.parse(c.out).parts).toEqual([{ name: 'f', filename: 'f.bin', contentType: 'application/octet-stream', size: file.length, sha: sha(file), text: '' }]);
    expect(d.code).toBe(0);
    expect(sha(await readFile(join(dir, 'big.bin')))).toBe(sha(BIG));
  });

  it('without --http2, https negotiates HTTP/2 by ALPN anyway; --http1 keeps HTTP/1.1', async () => {
    const a = await runMain(['get', '-v', '--cacert', certFile, `${tlsBase}/hello`]);
    const b = await runMain(['get', '-v', '--http1', '--cacert', certFile, `${tlsBase}/hello`]);
    expect(a.out).toMatch(/^HTTP\/2 200\n/);
    expect(b.out).toMatch(/^HTTP\/1\.1 200 OK\n/);
  });
});

describe('--proxy', () => {
  it('goes through a SOCKS5 proxy (microsocks with a password); a wrong password fails with exit 1', async () => {
    const microsocks = findBinary(['/usr/bin/microsocks'], 'microsocks');
    const port = await freePort();
    const socks = startPeer(microsocks, ['-i', '127.0.0.1', '-p', String(port), '-u', 'cli', '-P', 'pw'], { env: cleanEnv() });
    try {
      await waitListening(port, socks);
      // 0.0.0.0 is not a loopback name (loopback always goes direct), and reaches this server from the proxy.
      const target = `http://0.0.0.0:${server.port}/hello`;
      const [ok, bad] = await Promise.all([runCli(['get', target, '--proxy', `socks5://cli:pw@127.0.0.1:${port}`]), runMain(['get', target, '--proxy', `socks5://cli:wrong@127.0.0.1:${port}`])]);
      expect(ok.stderr).toBe('');
      expect(ok.out).toBe('hello world\n');
      expect(ok.code).toBe(0);
      expect(bad.code).toBe(1);
      expect(bad.stderr).toMatch(/^switchyard: .*(auth|password|credential)/i);
    } finally {
      await stopPeer(socks);
    }
  });
});

describe('in-process: exit codes', () => {
  it('exits 1 when --timeout passes, naming the timeout', async () => {
    const r = await runMain(['get', `${base}/hang`, '--timeout', '300']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^switchyard: .*tim/i);
  });

  it('exits 0 for a 3xx that is not followed (--no-follow)', async () => {
    const r = await runMain(['get', `${base}/redirect`, '--no-follow', '-v']);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^HTTP\/1\.1 302 Found\n/);
    expect(r.out).toMatch(/\nlocation: \/hello\n/i);
    expect(r.out.endsWith('\n\nmoved\n')).toBe(true);
  });

  it('follows redirects by default (and with -L); -v shows the final response', async () => {
    const a = await runMain(['get', `${base}/redirect`]);
    const b = await runMain(['get', '-L', '-v', `${base}/redirect`]);
    expect(a.code).toBe(0);
    expect(a.out).toBe('hello world\n');
    expect(b.out).toMatch(/^HTTP\/1\.1 200 OK\n[\s\S]*\n\nhello world\n$/);
    expect(b.stderr).toMatch(/switchyard ~ 302 redirect/);
  });

  it('-v on a HEAD prints the head only', async () => {
    const r = await runMain(['head', '-v', `${base}/hello`]);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^HTTP\/1\.1 200 OK\n[\s\S]*\nContent-Length: 12\n[\s\S]*\n\n$/);
  });
});

describe('in-process: request bodies', () => {
  it('-d sends form-encoded data; several -d are joined with &; -H adds headers', async () => {
    const r = await runMain(['post', `${base}/echo`, '-d', 'a=1', '-d', 'b=2', '-H', 'X-Custom: one', '-H', 'X-Custom: two']);
    expect(r.code).toBe(0);
    const e = JSON.parse(r.out);
    expect(e).toMatchObject({ method: 'POST', contentType: 'application/x-www-form-urlencoded', body: 'a=1&b=2' });
    expect(e.custom.join(',')).toBe('one,two');
  });

  it('--json sends JSON with its content type and asks for JSON', async () => {
    const r = await runMain(['put', `${base}/echo`, '--json', '-d', '{"name":"tea"}']);
    expect(JSON.parse(r.out)).toMatchObject({ method: 'PUT', contentType: 'application/json', accept: 'application/json', body: '{"name":"tea"}' });
  });

  it('-d @- reads stdin and -d @FILE a file, unchanged', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'data.txt'), 'line one\nline two\n');
    const a = await runMain(['patch', `${base}/echo`, '-d', '@-', '-H', 'Content-Type: text/plain'], { stdin: 'from stdin' });
    const b = await runMain(['query', `${base}/echo`, '-d', `@${join(dir, 'data.txt')}`]);
    expect(JSON.parse(a.out)).toMatchObject({ method: 'PATCH', contentType: 'text/plain', body: 'from stdin' });
    expect(JSON.parse(b.out)).toMatchObject({ method: 'QUERY', body: 'line one\nline two\n' });
  });

  it('-u sends basic authentication; a URL without a scheme gets http://', async () => {
    const r = await runMain(['delete', `127.0.0.1:${server.port}/echo`, '-u', 'ann:s3cret']);
    expect(JSON.parse(r.out)).toMatchObject({ method: 'DELETE', authorization: `Basic ${Buffer.from('ann:s3cret').toString('base64')}` });
  });
});

describe('in-process: -o and TLS options', () => {
  it('writes the body of a 4xx too, and exits 4', async () => {
    const dir = await tempDir();
    const r = await runMain(['get', `${base}/status/403`, '-o', join(dir, 'x')]);
    expect(r.code).toBe(4);
    expect(await readFile(join(dir, 'x'), 'utf8')).toBe('status 403\n');
  });

  it('fails with exit 1 before sending when the file cannot be written', async () => {
    const r = await runMain(['get', `${base}/hello`, '-o', '/nonexistent-dir/x']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^switchyard: cannot write \/nonexistent-dir\/x: ENOENT/);
  });

  it('-o - writes to stdout', async () => {
    const r = await runMain(['get', `${base}/hello`, '-o', '-']);
    expect(r.out).toBe('hello world\n');
  });

  it('draws a progress bar on a terminal: 100%, sizes, rate; -s turns it off', async () => {
    const dir = await tempDir();
    const r = await runMain(['get', `${base}/big`, '-o', join(dir, 'big.bin')], { ttyColumns: 100 });
    expect(r.code).toBe(0);
    const frames = r.stderr.split('\r').filter((f) => f !== '');
    const last = frames[frames.length - 1]!;
    expect(last).toMatch(/^\[#{40}\] 100% +20\.0 MiB \/ +20\.0 MiB +[\d.]+ [KMG]iB\/s {2}in \d+s *\x1b\[K\n$/);
    // Every frame has the same length: the bar does not jitter as the numbers change.
    expect(new Set(frames.map((f) => f.replace(/\x1b\[K\n?$/, '').length)).size).toBe(1);
    const s = await runMain(['get', `${base}/big`, '-o', join(dir, 'big2.bin'), '-s'], { ttyColumns: 100 });
    expect(s.stderr).toBe('');
  });

  it('a certificate this machine does not trust: the message names --cacert and -k, not the library options', async () => {
    const r = await runMain(['get', `${tlsBase}/hello`, '--retry', '0']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^switchyard: TLS handshake failed: .*certificate.*; .*--cacert FILE.*-k\n/);
    expect(r.stderr).not.toMatch(/tlsConfig/);
  });

  it('-k skips certificate verification; an unreadable --cacert is a usage error', async () => {
    const a = await runMain(['get', '-k', `${tlsBase}/hello`]);
    expect(a.out).toBe('hello world\n');
    const b = await runMain(['get', `${tlsBase}/hello`, '--cacert', '/nonexistent.pem']);
    expect(b.code).toBe(2);
    expect(b.stderr).toMatch(/--cacert \/nonexistent\.pem: cannot read the file \(ENOENT\)/);
  });
});

describe('curl habits', () => {
  it('-X sends any method token, with any request command; -A sets the User-Agent', async () => {
    const [a, b] = await Promise.all([runCli(['get', `${base}/method`, '-X', 'PURGE', '-A', 'probe/1.0']), runMain(['post', `${base}/method`, '--request', 'PROPFIND'])]);
    expect(a.stderr).toBe('');
    expect(a.out).toBe('PURGE probe/1.0\n');
    expect(a.code).toBe(0);
    expect(b.out).toMatch(/^PROPFIND switchyard/);
  });

  it('-i prints the status line and headers, a blank line, then the body, all on stdout', async () => {
    const r = await runCli(['get', '-i', `${base}/hello`]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.out).toMatch(/^HTTP\/1\.1 200 OK\n(.+\n)*X-Test: yes\n(.+\n)*\nhello world\n$/);
  });

  it('-I sends HEAD and prints the head only; with -o the head goes to the file', async () => {
    const dir = await tempDir();
    const [a, b] = await Promise.all([runCli(['get', '-I', `${base}/method`]), runMain(['get', '-I', `${base}/hello`, '-o', join(dir, 'head.txt')])]);
    expect(a.code).toBe(0);
    expect(a.out).toMatch(/^HTTP\/1\.1 200 OK\n(.+\n)*X-Method: HEAD\n(.+\n)*\n$/);
    expect(b.out).toBe('');
    expect(await readFile(join(dir, 'head.txt'), 'utf8')).toMatch(/^HTTP\/1\.1 200 OK\n(.+\n)*Content-Length: 12\n(.+\n)*\n$/);
  });

  it('a 4xx/5xx answer puts its status line on stderr, also when the body is empty', async () => {
    const [a, b] = await Promise.all([runCli(['get', `${base}/empty404`]), runMain(['get', `${base}/status/503`])]);
    expect(a.code).toBe(4);
    expect(a.out).toBe('');
    expect(a.stderr).toBe(`switchyard: HTTP/1.1 404 Not Found (GET ${base}/empty404)\n`);
    expect(b.code).toBe(4);
    expect(b.out).toBe('status 503\n');
    expect(b.stderr).toBe(`switchyard: HTTP/1.1 503 Service Unavailable (GET ${base}/status/503)\n`);
  });

  it('-f: a 4xx/5xx answer prints no body (the status line on stderr, the final URL after redirects) and exits 4; a 2xx prints as usual', async () => {
    const [a, b, c] = await Promise.all([runCli(['get', '-f', `${base}/nope`]), runMain(['get', '--fail', '-v', `${base}/gone-redirect`]), runMain(['get', '-f', `${base}/hello`])]);
    expect(a.code).toBe(4);
    expect(a.out).toBe('');
    expect(a.stderr).toBe(`switchyard: HTTP/1.1 404 Not Found (GET ${base}/nope)\n`);
    expect(b.code).toBe(4);
    expect(b.out).toBe('');
    expect(b.stderr).toMatch(new RegExp(`switchyard: HTTP/1\\.1 410 Gone \\(GET ${base}/status/410\\)\\n$`));
    expect(c.out).toBe('hello world\n');
  });

  it('-f with -o: a 4xx/5xx answer leaves an existing file as it was and creates none; -o without -f writes it', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'kept.txt'), 'old content\n');
    const [a, b] = await Promise.all([runMain(['get', '-f', `${base}/status/500`, '-o', join(dir, 'kept.txt')]), runMain(['get', '-f', `${base}/status/500`, '-o', join(dir, 'new.txt')])]);
    expect(a.code).toBe(4);
    expect(b.code).toBe(4);
    expect(await readFile(join(dir, 'kept.txt'), 'utf8')).toBe('old content\n');
    await expect(access(join(dir, 'new.txt'))).rejects.toThrow(/ENOENT/);
    const c = await runMain(['get', `${base}/hello`, '-o', join(dir, 'kept.txt')]);
    expect(c.code).toBe(0);
    expect(await readFile(join(dir, 'kept.txt'), 'utf8')).toBe('hello world\n');
  });

  it('-s: no error message and no status line (the exit code tells); -sS prints them', async () => {
    const s = await HTTP.serve(() => new Response(200), { port: 0 });
    const port = s.port;
    await s.forceClose();
    const [a, b, c, d] = await Promise.all([
      runCli(['get', '-s', `http://127.0.0.1:${port}/`]),
      runMain(['get', '-sS', `http://127.0.0.1:${port}/`]),
      runMain(['get', '-fs', `${base}/nope`]),
      runMain(['get', '-fsS', `${base}/nope`]),
    ]);
    expect(a.code).toBe(1);
    expect(a.stderr).toBe('');
    expect(b.code).toBe(1);
    expect(b.stderr).toMatch(/^switchyard: cannot connect to .*ECONNREFUSED/);
    expect(c.code).toBe(4);
    expect(c.stderr).toBe('');
    expect(c.out).toBe('');
    expect(d.stderr).toMatch(/^switchyard: HTTP\/1\.1 404 Not Found/);
  });

  it('-O writes to a file named like the last path segment, in the current directory', async () => {
    const dir = await tempDir();
    const r = await runCli(['get', '-O', `${base}/hello?x=1`], { cwd: dir });
    expect(r.code).toBe(0);
    expect(r.out).toBe('');
    expect(await readFile(join(dir, 'hello'), 'utf8')).toBe('hello world\n');
  });

  it('--max-time takes seconds, fractions too', async () => {
    const t0 = performance.now();
    const r = await runMain(['get', `${base}/hang`, '--max-time', '0.3']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^switchyard: .*tim.*300 ms/i);
    expect(performance.now() - t0).toBeLessThan(5000);
  });

  it('--compressed asks for a compressed body and prints it decoded', async () => {
    const r = await runMain(['get', '--compressed', `${base}/gzip`, '-i']);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/\ncontent-encoding: gzip\n/i);
    expect(r.out.endsWith('\n\nsqueezed\n')).toBe(true);
    expect(seen.get('/gzip')!.headers.get('Accept-Encoding')).toMatch(/gzip/);
  });
});

describe('Ctrl-C during a download', () => {
  it('ends the progress bar line, prints no error and exits 130', async () => {
    const dir = await tempDir();
    const stderr = Object.assign(new PassThrough(), { isTTY: true, columns: 100 });
    let err = '';
    let drawn: () => void = () => undefined;
    const firstFrame = new Promise<void>((resolve) => (drawn = resolve));
    stderr.on('data', (c: Buffer) => {
      err += c.toString();
      if (err.includes('\r')) drawn();
    });
    const stdin = new PassThrough();
    stdin.end();
    const code = await main(['get', `${base}/stall`, '-o', join(dir, 'part.bin')], { stdin, stdout: new PassThrough(), stderr, env: {}, waitForInterrupt: () => firstFrame });
    expect(code).toBe(130);
    expect(err).toMatch(/^(\r[^\r\n]*\x1b\[K)+\n$/);
    expect(err).not.toMatch(/switchyard:/);
  });
});
