/**
 * HTTPS: the server with `tls: { key, cert }` or a caller-made `tls.Server` as `listener`,
 * against curl (/usr/bin/curl, trusting a self-signed certificate made in the test) and
 * Node's `https` client.
 *
 * Every server, socket, child process and temp file is removed after each test; tests wait
 * on events, never on sleeps.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeNetServerAfter, forceCloseAfter, onCleanup } from '../../helpers/cleanup.js';
import { listen, port, Response, serve, type Request, type Server, type Stream } from '../../../kernel/index.js';
import { selfSignedCertificate, type SelfSignedCertificate } from '../../../tls/self-signed.js';
import { curlEnv, deferred, reuses, runCurl, sha256, transfers, W, type CurlResult } from '../../helpers/server.js';

// ---- private helpers -------------------------------------------------------------------------

function track<T extends Server>(s: T): T {
  return forceCloseAfter(s);
}

/** Runs curl asynchronously (without CA-bundle settings of the environment); `input` goes to its stdin. */
function curl(args: string[], input?: Buffer): Promise<CurlResult> {
  return runCurl(args, curlEnv(/^(curl_home|ssl_cert_file|ssl_cert_dir|curl_ca_bundle)$/i), input);
}

/** GET over Node's https client trusting `ca`; resolves status, headers and body. */
function httpsGet(
  p: number,
  path: string,
  ca: string,
  host = '127.0.0.1',
  servername?: string,
): Promise<{ status: number; headers: Record<string, unknown>; body: Buffer; alpn: string | false | null }> {
  return new Promise((resolve, reject) => {
    // Offer h2 as well: the server must pick http/1.1, the only protocol it speaks here.
    const opts = { host, port: p, path, ca, agent: false, ALPNProtocols: ['h2', 'http/1.1'], ...(servername !== undefined ? { servername } : {}) };
    const req = https.get(opts, (res) => {
      const chunks: Buffer[] = [];
      const alpn = (res.socket as tls.TLSSocket).alpnProtocol ?? null;
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), alpn }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

// One certificate for the file (EC; valid for localhost, 127.0.0.1, ::1), its PEM in a temp file.
let cert: SelfSignedCertificate;
let certDir = '';
let caFile = '';

beforeAll(async () => {
  cert = selfSignedCertificate();
  certDir = await mkdtemp(join(tmpdir(), 'swy-tls-'));
  caFile = join(certDir, 'ca.pem');
  await writeFile(caFile, cert.cert);
});

afterAll(async () => {
  await rm(certDir, { recursive: true, force: true });
  expect(existsSync(certDir)).toBe(false);
});

const hello = (req: Request): Response => new Response(200, { 'Content-Type': 'text/plain' }, `secure ${req.method} ${req.target}`);

/** A stream handler answering with the peer address it sees. */
async function peerEcho(stream: Stream): Promise<void> {
  const a = stream.peerAddr();
  await stream.write(`${String(a)} ${[...a.ip].join('.')} ${a.port}`);
}

// ---- serve({ tls }) -------------------------------------------------------------------------

describe('serve(handler, { tls: { key, cert } })', () => {
  it('curl --cacert to https://127.0.0.1 verifies the certificate and gets the response', async () => {
    const server = track(await serve(hello, { port: 0, tls: { key: cert.key, cert: cert.cert } }));
    const r = await curl(['-v', '--cacert', caFile, '-w', W, `https://127.0.0.1:${server.port}/a?b=c`]);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/SSL certificate verify ok/);
    // The server offers http/1.1 by ALPN; curl (which also offers h2) takes it.
    expect(r.stderr).toMatch(/ALPN[^\n]*accepted[^\n]*http\/1\.1/i);
    expect(transfers(r.stdout)[0]).toMatchObject({ status: 200, body: 'secure GET /a?b=c' });
  });

  it('curl to https://localhost (--resolve) verifies the DNS name', async () => {
    const server = track(await serve(hello, { port: 0, tls: { key: cert.key, cert: cert.cert } }));
    const p = server.port;
    const r = await curl(['-v', '--cacert', caFile, '--resolve', `localhost:${p}:127.0.0.1`, '-w', W, `https://localhost:${p}/name`]);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/subjectAltName:[^\n]*"localhost" matched/);
    expect(transfers(r.stdout)[0]).toMatchObject({ status: 200, body: 'secure GET /name' });
  });

  it('keep-alive over TLS: several URLs in one curl run share one TLS connection', async () => {
    const server = track(await serve(hello, { port: 0, tls: { key: cert.key, cert: cert.cert } }));
    const base = `https://127.0.0.1:${server.port}`;
    const r = await curl(['-v', '--cacert', caFile, '-w', W, `${base}/1`, `${base}/2`, `${base}/3`]);
    expect(r.code).toBe(0);
    const t = transfers(r.stdout);
    expect(t.map((x) => x.body)).toEqual(['secure GET /1', 'secure GET /2', 'secure GET /3']);
    expect(t.map((x) => x.connects)).toEqual([1, 0, 0]);
    expect(new Set(t.map((x) => x.localPort)).size).toBe(1);
    expect(reuses(r.stderr)).toBe(2);
    expect(r.stderr).not.toMatch(/Connection died/);
    // One handshake only.
    expect((r.stderr.match(/SSL connection using/g) ?? []).length).toBe(1);
  });

  it('a client that does not trust the certificate fails; the server keeps serving', async () => {
    const server = track(await serve(hello, { port: 0, tls: { key: cert.key, cert: cert.cert } }));
    const url = `https://127.0.0.1:${server.port}/`;
    const bad = await curl(['--capath', '/nonexistent', '--cacert', '/dev/null', url]);
    expect(bad.code).not.toBe(0);
    // Plain HTTP on the TLS port: the handshake fails, nothing is served.
    const plain = await curl([`http://127.0.0.1:${server.port}/`]);
    expect(plain.code).not.toBe(0);
    const good = await curl(['--cacert', caFile, '-w', W, url]);
    expect(transfers(good.stdout)[0]).toMatchObject({ status: 200, body: 'secure GET /' });
    expect(server.connectionCount).toBe(0);
  });

  it("Node's https.get with ca works, by IP and by name", async () => {
    const server = track(await serve(hello, { port: 0, tls: { key: cert.key, cert: cert.cert } }));
    const byIp = await httpsGet(server.port, '/node', cert.cert);
    expect(byIp.status).toBe(200);
    expect(byIp.body.toString()).toBe('secure GET /node');
    expect(byIp.headers['content-length']).toBe(String('secure GET /node'.length));
    expect(byIp.alpn).toBe('http/1.1');
    const byName = await httpsGet(server.port, '/name', cert.cert, '127.0.0.1', 'localhost');
    expect(byName.body.toString()).toBe('secure GET /name');
  });

  it('uploads and large downloads over TLS arrive intact', async () => {
    const up = randomBytes(700 * 1024 + 5);
    const down = randomBytes(3 * 1024 * 1024 + 1);
    const server = track(
      await serve(
        (req) => {
          if (req.method === 'GET') return new Response(200, down);
          const b = req.body as Uint8Array;
          return new Response(200, `${sha256(b)} ${b.length}`);
        },
        { port: 0, tls: { key: cert.key, cert: cert.cert } },
      ),
    );
    const url = `https://127.0.0.1:${server.port}/`;
    const u = await curl(['--cacert', caFile, '-H', 'Transfer-Encoding: chunked', '-T', '-', url], up);
    expect(u.code).toBe(0);
    expect(u.stdout.toString()).toBe(`${sha256(up)} ${up.length}`);
    const d = await curl(['--cacert', caFile, url]);
    expect(d.code).toBe(0);
    expect(sha256(d.stdout)).toBe(sha256(down));
  });

  it('listen(): peerAddr() works over TLS and is stable across a kept-alive connection', async () => {
    const server = track(await listen(peerEcho, { port: 0, tls: { key: cert.key, cert: cert.cert } }));
    const base = `https://127.0.0.1:${server.port}`;
    const r = await curl(['-v', '--cacert', caFile, '-w', W, `${base}/1`, `${base}/2`]);
    expect(r.code).toBe(0);
    const t = transfers(r.stdout);
    const lp = t[0]!.localPort;
    expect(t.map((x) => x.body)).toEqual([`127.0.0.1:${lp} 127.0.0.1 ${lp}`, `127.0.0.1:${lp} 127.0.0.1 ${lp}`]);
    expect(t.map((x) => x.connects)).toEqual([1, 0]);
    expect(r.stderr).not.toMatch(/Connection died/);
  });

  it('close() over TLS lets a request in flight finish', async () => {
    const entered = deferred();
    const gate = deferred();
    const server = track(
      await serve(
        async () => {
          entered.resolve();
          await gate.promise;
          return new Response(200, 'finished');
        },
        { port: 0, tls: { key: cert.key, cert: cert.cert } },
      ),
    );
    const inflight = curl(['--cacert', caFile, '-w', W, `https://127.0.0.1:${server.port}/slow`]);
    await entered.promise;
    const closing = server.close();
    gate.resolve();
    const r = await inflight;
    expect(transfers(r.stdout)[0]).toMatchObject({ status: 200, body: 'finished' });
    await closing;
    await server.wait();
    expect(server.connectionCount).toBe(0);
  });

  it('close() drops an idle kept-alive TLS connection at once', async () => {
    const server = track(await serve(hello, { port: 0, tls: { key: cert.key, cert: cert.cert } }));
    const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
    onCleanup(() => agent.destroy());
    let socket: tls.TLSSocket | null = null;
    const body = await new Promise<string>((resolve, reject) => {
      const req = https.get({ host: '127.0.0.1', port: server.port, path: '/ka', ca: cert.cert, agent }, (res) => {
        socket = res.socket as tls.TLSSocket;
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve(text));
      });
      req.on('error', reject);
    });
    expect(body).toBe('secure GET /ka');
    expect(socket).not.toBeNull();
    const closed = new Promise<void>((resolve) => {
      if (socket!.destroyed) resolve();
      else socket!.once('close', () => resolve());
    });
    expect(server.connectionCount).toBe(1);
    await server.close();
    await closed;
    expect(server.connectionCount).toBe(0);
  });

  it('forceClose() over TLS ends a request in flight at once', async () => {
    const entered = deferred();
    const gate = deferred();
    onCleanup(() => gate.resolve());
    const server = track(
      await serve(
        async () => {
          entered.resolve();
          await gate.promise;
          return new Response(200, 'too late');
        },
        { port: 0, tls: { key: cert.key, cert: cert.cert } },
      ),
    );
    const inflight = curl(['--cacert', caFile, `https://127.0.0.1:${server.port}/slow`]);
    await entered.promise;
    await server.forceClose();
    const r = await inflight;
    expect(r.code).not.toBe(0);
    expect(r.stdout.toString()).not.toContain('too late');
    expect(server.connectionCount).toBe(0);
  });
});

/**
 * Opens a TCP connection to a TLS server and sends nothing (no ClientHello); resolves once
 * the server side accepted it, with a promise that resolves when the client socket closes.
 */
async function stalledTcp(l: tls.Server, p: number): Promise<{ closed: Promise<void>; socket: net.Socket }> {
  const accepted = new Promise<void>((resolve) => l.once('connection', () => resolve()));
  const socket = net.connect({ host: '127.0.0.1', port: p });
  socket.on('error', () => {});
  onCleanup(() => void socket.destroy());
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.resume();
  await accepted;
  return { closed, socket };
}

/** Resolves `'closed'` when `p` does, `'still open'` after `ms` (a bound on a failure, not a wait for success). */
function within(p: Promise<void>, ms: number): Promise<'closed' | 'still open'> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<'still open'>((resolve) => (timer = setTimeout(() => resolve('still open'), ms)));
  return Promise.race([p.then(() => 'closed' as const), limit]).finally(() => clearTimeout(timer));
}

describe('connections that never finish the TLS handshake', () => {
  it('forceClose() drops a TCP connection still before its TLS handshake', async () => {
    const l = tls.createServer({ key: cert.key, cert: cert.cert });
    closeNetServerAfter(l);
    const server = track(await serve(hello, { listener: l, port: 0 }));
    const { closed } = await stalledTcp(l, server.port);
    await server.forceClose();
    expect(await within(closed, 3000)).toBe('closed');
  });

  it('close() drops a TCP connection still before its TLS handshake (it has no request in flight)', async () => {
    const server = track(await serve(hello, { port: 0, tls: { key: cert.key, cert: cert.cert } }));
    const connected = deferred();
    const socket = net.connect({ host: '127.0.0.1', port: server.port }, () => connected.resolve());
    socket.on('error', () => {});
    onCleanup(() => void socket.destroy());
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.resume();
    await connected.promise;
    // A full HTTPS exchange after the stalled connect: by then the server has accepted both.
    const r = await curl(['--cacert', caFile, '-w', W, `https://127.0.0.1:${server.port}/`]);
    expect(transfers(r.stdout)[0]!.status).toBe(200);
    await server.close();
    expect(await within(closed, 3000)).toBe('closed');
  });
});

// ---- a caller-made tls.Server as listener ----------------------------------------------------

describe('a caller-made tls.Server as listener', () => {
  it('not yet listening: the server listens it on host/port and serves HTTPS', async () => {
    const l = tls.createServer({ key: cert.key, cert: cert.cert });
    closeNetServerAfter(l);
    let handshakes = 0;
    l.on('secureConnection', () => handshakes++);
    expect(l.listening).toBe(false);
    const server = track(await serve(hello, { listener: l, host: '127.0.0.1', port: 0 }));
    expect(l.listening).toBe(true);
    const addr = l.address() as AddressInfo;
    expect(addr.address).toBe('127.0.0.1');
    expect(server.port).toBe(addr.port);
    expect(port(server)).toBe(addr.port);
    const base = `https://127.0.0.1:${server.port}`;
    const r = await curl(['-v', '--cacert', caFile, '-w', W, `${base}/x`, `${base}/y`]);
    expect(r.code).toBe(0);
    const t = transfers(r.stdout);
    expect(t.map((x) => x.body)).toEqual(['secure GET /x', 'secure GET /y']);
    expect(t.map((x) => x.connects)).toEqual([1, 0]);
    expect(handshakes).toBe(1);
    // Also over Node's https.
    const n = await httpsGet(server.port, '/node', cert.cert);
    expect(n.body.toString()).toBe('secure GET /node');
  });

  it('already listening on port 0: the server serves on its port', async () => {
    const l = tls.createServer({ key: cert.key, cert: cert.cert });
    closeNetServerAfter(l);
    await new Promise<void>((resolve) => l.listen(0, '127.0.0.1', resolve));
    const p = (l.address() as AddressInfo).port;
    const server = track(await serve(hello, { listener: l }));
    expect(server.port).toBe(p);
    const r = await curl(['--cacert', caFile, '--resolve', `localhost:${p}:127.0.0.1`, '-w', W, `https://localhost:${p}/ready`]);
    expect(r.code).toBe(0);
    expect(transfers(r.stdout)[0]).toMatchObject({ status: 200, body: 'secure GET /ready' });
    const n = await httpsGet(p, '/node', cert.cert);
    expect(n.body.toString()).toBe('secure GET /node');
    // close() stops the listener it was given.
    await server.close();
    expect(l.listening).toBe(false);
  });

  it('listen() with a tls.Server listener: peerAddr() works', async () => {
    const l = tls.createServer({ key: cert.key, cert: cert.cert });
    closeNetServerAfter(l);
    const server = track(await listen(peerEcho, { listener: l, port: 0 }));
    const r = await curl(['--cacert', caFile, '-w', W, `https://127.0.0.1:${server.port}/`]);
    const t = transfers(r.stdout);
    const lp = t[0]!.localPort;
    expect(t[0]!.body).toBe(`127.0.0.1:${lp} 127.0.0.1 ${lp}`);
  });

  it('tls options and a listener together are refused', async () => {
    const l = tls.createServer({ key: cert.key, cert: cert.cert });
    await expect(serve(hello, { listener: l, tls: { key: cert.key, cert: cert.cert } })).rejects.toThrow(/either tls options or a listener/);
  });
});
