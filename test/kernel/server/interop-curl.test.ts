/**
 * The HTTP/1.1 server against a real peer: curl (/usr/bin/curl) over loopback sockets.
 *
 * Keep-alive reuse, chunked uploads, `Expect: 100-continue`, HTTP/1.0, HEAD, 204/304, a
 * throwing handler, large bodies; and the server's life cycle: `AddressInUseError`, `port`,
 * `listenAny`, graceful `close()` and `forceClose()` with a request in flight.
 *
 * Every server, socket and child process is closed after each test; tests wait on events,
 * never on sleeps. curl runs as an async child process so the server in this process keeps
 * running while it waits.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { destroyAfter, forceCloseAfter, onCleanup } from '../../helpers/cleanup.js';
import { AddressInUseError, ArgumentError, CallbackBody, listen, port, Response, serve, Server, streamHandler, type Request, type Stream } from '../../../kernel/index.js';
import { curlEnv, deferred, reuses, runCurl, sha256, transfers, W, type CurlResult } from '../../helpers/server.js';

// ---- private helpers (cleanup, curl, parsing) ---------------------------------------------

/** Registers a server for cleanup (force-closed after the test) and returns it. */
function track<T extends Server>(s: T): T {
  return forceCloseAfter(s);
}

/** Server errors are expected in some tests (a handler that throws): keep them, quietly. */
function quiet(): { errors: unknown[]; onError: (e: unknown) => void } {
  const errors: unknown[] = [];
  return { errors, onError: (e) => errors.push(e) };
}

/** Runs curl (async) with `args`; `input` is written to its stdin. Resolves when it exits. */
function curl(args: string[], input?: Buffer): Promise<CurlResult> {
  return runCurl(args, curlEnv(), input);
}

/** Response heads curl -v printed (`< ` lines), one string per response, lower-cased names kept as sent. */
function responseHeads(stderr: string): string[][] {
  const heads: string[][] = [];
  let cur: string[] | null = null;
  for (const raw of stderr.split('\n')) {
    const line = raw.replace(/\r$/, '');
    if (!line.startsWith('< ')) {
      cur = null;
      continue;
    }
    const l = line.slice(2);
    if (/^HTTP\/\d/.test(l)) {
      cur = [l];
      heads.push(cur);
    } else if (cur !== null && l !== '') {
      cur.push(l);
    }
  }
  return heads;
}

/** Value of header `name` in a head from {@link responseHeads}, or null. */
function field(head: string[], name: string): string | null {
  const n = name.toLowerCase() + ':';
  for (const l of head.slice(1)) if (l.toLowerCase().startsWith(n)) return l.slice(n.length).trim();
  return null;
}

/** A temp file holding `data`, removed after the test. */
async function tempFile(name: string, data: Uint8Array | string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'swy-curl-'));
  onCleanup(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, name);
  await writeFile(file, data);
  return file;
}

/** A temp path (in a fresh temp dir, removed after the test). */
async function tempPath(name: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'swy-curl-'));
  onCleanup(() => rm(dir, { recursive: true, force: true }));
  return join(dir, name);
}

function url(server: Server, path = '/'): string {
  return `http://127.0.0.1:${server.port}${path}`;
}

/** A net.Server (not listening) that counts the TCP connections it accepts. */
function countingListener(): { listener: net.Server; count: () => number } {
  const listener = net.createServer();
  let n = 0;
  listener.on('connection', () => n++);
  return { listener, count: () => n };
}

/** Connects to 127.0.0.1:port; resolves 'refused' or 'connected' (the socket is closed either way). */
function tryConnect(p: number): Promise<'refused' | 'connected'> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port: p });
    destroyAfter(s);
    s.once('connect', () => {
      s.destroy();
      resolve('connected');
    });
    s.once('error', () => resolve('refused'));
  });
}

/** A port that was free a moment ago (bound on port 0, then released). */
async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const p = (s.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return p;
}

/** Reads a whole request body on a stream, as bytes. */
async function hashStream(stream: Stream): Promise<{ hash: string; length: number }> {
  const h = createHash('sha256');
  let length = 0;
  for await (const chunk of stream) {
    h.update(chunk);
    length += chunk.length;
  }
  return { hash: h.digest('hex'), length };
}

function bodyBytes(req: Request): Uint8Array {
  const b = req.body;
  if (b === null) return new Uint8Array(0);
  if (typeof b === 'string') return Buffer.from(b, 'utf8');
  if (b instanceof Uint8Array) return b;
  throw new Error('serve() handed the handler a streamed body');
}

/** A streamed body of unknown length over `data`, handed out at most `step` bytes per read. */
function pieceBody(data: Uint8Array, step: number): CallbackBody {
  let pos = 0;
  return new CallbackBody(async (dst) => {
    await Promise.resolve();
    const n = Math.min(dst.length, step, data.length - pos);
    dst.set(data.subarray(pos, pos + n), 0);
    pos += n;
    return n;
  });
}

/** A request handler that answers `<sha256> <length>` of the buffered request body. */
const echoHash = (req: Request): Response => {
  const b = bodyBytes(req);
  return new Response(200, `${sha256(b)} ${b.length}`);
};

// ---- keep-alive ----------------------------------------------------------------------------

describe('keep-alive reuse with curl', () => {
  it('serve(): one curl run with several URLs uses one TCP connection', async () => {
    const { listener, count } = countingListener();
    const server = track(await serve((req) => new Response(200, `hello ${req.target}`), { listener, host: '127.0.0.1', port: 0 }));
    const r = await curl(['-v', '-w', W, url(server, '/a'), url(server, '/b'), url(server, '/c?x=1')]);
    expect(r.code).toBe(0);
    const t = transfers(r.stdout);
    expect(t.map((x) => x.body)).toEqual(['hello /a', 'hello /b', 'hello /c?x=1']);
    expect(t.map((x) => x.status)).toEqual([200, 200, 200]);
    // curl's view: one new connection, then reuse, from the same local port.
    expect(t.map((x) => x.connects)).toEqual([1, 0, 0]);
    expect(new Set(t.map((x) => x.localPort)).size).toBe(1);
    expect(reuses(r.stderr)).toBe(2);
    // The server's view: one accepted connection.
    expect(count()).toBe(1);
    // Responses of a kept-alive HTTP/1.1 connection say nothing about closing it.
    const heads = responseHeads(r.stderr);
    expect(heads.map((h) => field(h, 'connection'))).toEqual([null, null, null]);
    expect(heads.map((h) => field(h, 'content-length'))).toEqual(['8', '8', '12']);
  });

  it('listen(): GET requests on a stream handler that never reads the (empty) body reuse one connection', async () => {
    const peers: string[] = [];
    const server = track(
      await listen(
        async (stream) => {
          const req = await stream.startRead();
          peers.push(String(stream.peerAddr()));
          stream.setHeader('Content-Type', 'text/plain');
          await stream.write(`peer ${String(stream.peerAddr())} ${req.target}`);
        },
        { port: 0 },
      ),
    );
    const r = await curl(['-v', '-w', W, url(server, '/1'), url(server, '/2'), url(server, '/3'), url(server, '/4')]);
    expect(r.code).toBe(0);
    const t = transfers(r.stdout);
    expect(t.map((x) => x.status)).toEqual([200, 200, 200, 200]);
    expect(peers).toHaveLength(4);
    // One distinct peer address, which is curl's own local port.
    expect(new Set(peers).size).toBe(1);
    expect(peers[0]).toBe(`127.0.0.1:${t[0]!.localPort}`);
    expect(t.map((x) => x.body)).toEqual(['/1', '/2', '/3', '/4'].map((p) => `peer ${peers[0]} ${p}`));
    expect(t.map((x) => x.connects)).toEqual([1, 0, 0, 0]);
    expect(reuses(r.stderr)).toBe(3);
    // A response that did not announce Connection: close must not be followed by a close.
    expect(r.stderr).not.toMatch(/Connection died/);
  });

  it('listen(): a stream handler that reads the body to its end also keeps the connection', async () => {
    const peers = new Set<string>();
    const server = track(
      await listen(
        async (stream) => {
          peers.add(String(stream.peerAddr()));
          const body = await stream.readAll();
          await stream.write(`got ${body.length}`);
        },
        { port: 0 },
      ),
    );
    const r = await curl(['-v', '-w', W, url(server, '/x'), '--data-binary', 'abc', url(server, '/y')]);
    expect(r.code).toBe(0);
    const t = transfers(r.stdout);
    expect(t.map((x) => x.body)).toEqual(['got 3', 'got 3']);
    expect(t.map((x) => x.connects)).toEqual([1, 0]);
    expect(peers.size).toBe(1);
  });

  it('serve(): one Response object returned for every request is sent intact each time', async () => {
    const shared = new Response(200, { 'X-Shared': 'yes' }, 'same body');
    const server = track(await serve(() => shared, { port: 0 }));
    const r = await curl(['-v', '-w', W, url(server, '/1'), url(server, '/2'), url(server, '/3')]);
    const t = transfers(r.stdout);
    expect(t.map((x) => [x.status, x.body, x.connects])).toEqual([
      [200, 'same body', 1],
      [200, 'same body', 0],
      [200, 'same body', 0],
    ]);
    expect(responseHeads(r.stderr).map((h) => field(h, 'x-shared'))).toEqual(['yes', 'yes', 'yes']);
  });

  it('peerAddr() over IPv6 loopback is [::1]:port with 16 ip bytes', async () => {
    const seen: string[] = [];
    const server = track(
      await listen(
        async (stream) => {
          const a = stream.peerAddr();
          seen.push(`${String(a)} ${a.ip.length} ${a.ip[15]} ${a.port}`);
          await stream.write('v6');
        },
        { host: '::1', port: 0 },
      ),
    );
    expect(server.port).toBeGreaterThan(0);
    const r = await curl(['-g', '-w', W, `http://[::1]:${server.port}/`]);
    const t = transfers(r.stdout);
    expect(t[0]).toMatchObject({ status: 200, body: 'v6' });
    expect(seen).toEqual([`[::1]:${t[0]!.localPort} 16 1 ${t[0]!.localPort}`]);
  });

  it('peerAddr() gives ip bytes and port of the client', async () => {
    const seen: { s: string; ip: number[]; port: number }[] = [];
    const server = track(
      await listen(
        async (stream) => {
          const a = stream.peerAddr();
          seen.push({ s: String(a), ip: [...a.ip], port: a.port });
          await stream.write('ok');
        },
        { port: 0 },
      ),
    );
    const r = await curl(['-w', W, url(server)]);
    const t = transfers(r.stdout);
    expect(seen).toEqual([{ s: `127.0.0.1:${t[0]!.localPort}`, ip: [127, 0, 0, 1], port: t[0]!.localPort }]);
  });
});

// ---- chunked uploads -------------------------------------------------------------------------

describe('chunked uploads from curl', () => {
  const data = randomBytes(300 * 1024 + 123);
  const want = `${sha256(data)} ${data.length}`;

  it('serve(): --data-binary @file with Transfer-Encoding: chunked arrives byte for byte', async () => {
    const file = await tempFile('upload.bin', data);
    const server = track(await serve(echoHash, { port: 0 }));
    const r = await curl(['-v', '-H', 'Transfer-Encoding: chunked', '-H', 'Content-Type: application/octet-stream', '--data-binary', `@${file}`, url(server, '/up')]);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/^> Transfer-Encoding: chunked/im);
    expect(r.stderr).not.toMatch(/^> Content-Length:/im);
    expect(r.stdout.toString()).toBe(want);
  });

  it('serve(): -T - from stdin (PUT, chunked) arrives byte for byte', async () => {
    let method = '';
    const server = track(
      await serve(
        (req) => {
          method = req.method;
          return echoHash(req);
        },
        { port: 0 },
      ),
    );
    const r = await curl(['-v', '-T', '-', url(server, '/put')], data);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/^> Transfer-Encoding: chunked/im);
    expect(method).toBe('PUT');
    expect(r.stdout.toString()).toBe(want);
  });

  it('listen(): async iteration over a chunked upload sees the exact bytes', async () => {
    const file = await tempFile('upload.bin', data);
    const server = track(
      await listen(
        async (stream) => {
          await stream.startRead();
          const { hash, length } = await hashStream(stream);
          await stream.write(`${hash} ${length}`);
        },
        { port: 0 },
      ),
    );
    const r = await curl(['-v', '-H', 'Transfer-Encoding: chunked', '--data-binary', `@${file}`, url(server, '/up')]);
    expect(r.code).toBe(0);
    expect(r.stdout.toString()).toBe(want);
  });

  it('listen(): readBytes with a small buffer over -T - sees the exact bytes', async () => {
    const server = track(
      await listen(
        async (stream) => {
          const h = createHash('sha256');
          const buf = new Uint8Array(1000);
          let length = 0;
          for (;;) {
            const n = await stream.readBytes(buf);
            if (n === 0) break;
            h.update(buf.subarray(0, n));
            length += n;
          }
          await stream.write(`${h.digest('hex')} ${length}`);
        },
        { port: 0 },
      ),
    );
    const r = await curl(['-T', '-', url(server, '/put')], data);
    expect(r.code).toBe(0);
    expect(r.stdout.toString()).toBe(want);
  });

  it('streamHandler(requestHandler) on listen(): a chunked upload is buffered for the request handler', async () => {
    const server = track(await listen(streamHandler(echoHash), { port: 0 }));
    const r = await curl(['-T', '-', url(server, '/put')], data);
    expect(r.code).toBe(0);
    expect(r.stdout.toString()).toBe(want);
  });

  it('several chunked uploads in one curl run reuse the connection', async () => {
    const file = await tempFile('upload.bin', data);
    const { listener, count } = countingListener();
    const server = track(await serve(echoHash, { listener, port: 0 }));
    const up = ['-H', 'Transfer-Encoding: chunked', '--data-binary', `@${file}`];
    const r = await curl(['-v', '-w', W, ...up, url(server, '/1'), '--next', '-w', W, ...up, url(server, '/2')]);
    expect(r.code).toBe(0);
    expect(transfers(r.stdout).map((x) => x.body)).toEqual([want, want]);
    expect(count()).toBe(1);
  });
});

// ---- Expect: 100-continue ------------------------------------------------------------------

describe('Expect: 100-continue with curl', () => {
  const big = randomBytes(1536 * 1024 + 7); // > 1 MiB
  const want = `${sha256(big)} ${big.length}`;

  it('serve(): curl gets 100 Continue, then the body arrives', async () => {
    const file = await tempFile('big.bin', big);
    const server = track(await serve(echoHash, { port: 0 }));
    const r = await curl(['-v', '-H', 'Expect: 100-continue', '--data-binary', `@${file}`, url(server, '/e')]);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/^> Expect: 100-continue/im);
    expect(r.stderr).toMatch(/^< HTTP\/1\.1 100 Continue/m);
    expect(r.stdout.toString()).toBe(want);
  });

  it('serve(): chunked upload with Expect gets 100 Continue and arrives intact', async () => {
    const file = await tempFile('big.bin', big);
    const server = track(await serve(echoHash, { port: 0 }));
    const r = await curl(['-v', '-H', 'Expect: 100-continue', '-H', 'Transfer-Encoding: chunked', '--data-binary', `@${file}`, url(server, '/e')]);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/^< HTTP\/1\.1 100 Continue/m);
    expect(r.stdout.toString()).toBe(want);
  });

  it('listen(): 100 Continue is sent when the handler starts reading', async () => {
    const file = await tempFile('big.bin', big);
    const server = track(
      await listen(
        async (stream) => {
          const { hash, length } = await hashStream(stream);
          await stream.write(`${hash} ${length}`);
        },
        { port: 0 },
      ),
    );
    const r = await curl(['-v', '-H', 'Expect: 100-continue', '--data-binary', `@${file}`, url(server, '/e')]);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/^< HTTP\/1\.1 100 Continue/m);
    expect(r.stdout.toString()).toBe(want);
  });

  it('listen(): a handler that answers without reading sends no 100 Continue', async () => {
    const file = await tempFile('big.bin', big);
    const server = track(
      await listen(
        async (stream) => {
          stream.setStatus(403);
          await stream.write('no thanks');
        },
        { port: 0 },
      ),
    );
    const r = await curl(['-v', '--expect100-timeout', '15', '-H', 'Expect: 100-continue', '--data-binary', `@${file}`, url(server, '/e')]);
    expect(r.code).toBe(0);
    expect(r.stderr).not.toMatch(/^< HTTP\/1\.1 100/m);
    expect(r.stderr).toMatch(/^< HTTP\/1\.1 403/m);
    expect(r.stdout.toString()).toBe('no thanks');
    // The server keeps serving.
    const again = await curl(['-w', W, url(server, '/after')]);
    expect(transfers(again.stdout)[0]).toMatchObject({ status: 403, body: 'no thanks' });
  });

  it('listen(): closeRead() without reading sends no 100 Continue and closes after the response', async () => {
    const file = await tempFile('big.bin', big);
    const server = track(
      await listen(
        async (stream) => {
          const res = stream.closeRead();
          expect(res.status).toBe(200);
          stream.setStatus(422);
          await stream.write('declined');
        },
        { port: 0 },
      ),
    );
    const r = await curl(['-v', '--expect100-timeout', '15', '-w', W, '-H', 'Expect: 100-continue', '--data-binary', `@${file}`, url(server, '/e')]);
    expect(r.code).toBe(0);
    expect(r.stderr).not.toMatch(/^< HTTP\/1\.1 100/m);
    expect(transfers(r.stdout)[0]).toMatchObject({ status: 422, body: 'declined' });
    expect(field(responseHeads(r.stderr)[0]!, 'connection')).toBe('close');
  });

  it('serve(): a body over maxBodyBytes gets 413 without 100 Continue; the server keeps serving', async () => {
    const file = await tempFile('big.bin', big);
    const { errors, onError } = quiet();
    let calls = 0;
    const server = track(
      await serve(
        (req) => {
          calls++;
          return echoHash(req);
        },
        { port: 0, maxBodyBytes: 64 * 1024, onError },
      ),
    );
    // A long expect timeout: had the server sent nothing, curl would still be waiting, not sending.
    const r = await curl(['-v', '--expect100-timeout', '15', '-w', W, '-H', 'Expect: 100-continue', '--data-binary', `@${file}`, url(server, '/e')]);
    expect(r.code).toBe(0);
    expect(r.stderr).not.toMatch(/^< HTTP\/1\.1 100/m);
    expect(transfers(r.stdout)[0]!.status).toBe(413);
    const heads = responseHeads(r.stderr);
    expect(heads).toHaveLength(1);
    expect(field(heads[0]!, 'connection')).toBe('close');
    expect(calls).toBe(0);
    // Next request, small body: served.
    const ok = await curl(['-w', W, '--data-binary', 'small', url(server, '/ok')]);
    expect(transfers(ok.stdout)[0]).toMatchObject({ status: 200, body: `${sha256(Buffer.from('small'))} 5` });
    expect(calls).toBe(1);
    expect(errors).toEqual([]);
  });

  it('serve(): a chunked body that grows past maxBodyBytes gets 413; the server keeps serving', async () => {
    const file = await tempFile('big.bin', big);
    const server = track(await serve(echoHash, { port: 0, maxBodyBytes: 64 * 1024 }));
    const r = await curl(['-w', W, '-H', 'Transfer-Encoding: chunked', '--data-binary', `@${file}`, url(server, '/e')]);
    // curl may report the aborted upload, but it got the 413.
    expect(transfers(r.stdout)[0]?.status ?? r.stderr).toBe(413);
    const ok = await curl(['-w', W, url(server, '/ok')]);
    expect(transfers(ok.stdout)[0]!.status).toBe(200);
  });
});

// ---- HTTP/1.0 ------------------------------------------------------------------------------

describe('HTTP/1.0 peers (curl -0)', () => {
  it('listen(): a body written without Content-Length is delimited by close, not chunked', async () => {
    const server = track(
      await listen(
        async (stream) => {
          expect(stream.request.protoMinor).toBe(0);
          for (let i = 0; i < 5; i++) await stream.write(`part${i};`);
        },
        { port: 0 },
      ),
    );
    const r = await curl(['-0', '-v', url(server, '/raw')]);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/^> GET \/raw HTTP\/1\.0/m);
    expect(r.stdout.toString()).toBe('part0;part1;part2;part3;part4;');
    const [head] = responseHeads(r.stderr);
    expect(field(head!, 'transfer-encoding')).toBeNull();
    expect(field(head!, 'content-length')).toBeNull();
    expect(field(head!, 'connection')).toBe('close');
  });

  it('listen(): the same with a large streamed body (1 MiB in 16 KiB writes)', async () => {
    const data = randomBytes(1024 * 1024);
    const server = track(
      await listen(
        async (stream) => {
          for (let i = 0; i < data.length; i += 16384) await stream.write(data.subarray(i, i + 16384));
        },
        { port: 0 },
      ),
    );
    const r = await curl(['-0', '-v', url(server, '/raw')]);
    expect(r.code).toBe(0);
    expect(sha256(r.stdout)).toBe(sha256(data));
    expect(field(responseHeads(r.stderr)[0]!, 'transfer-encoding')).toBeNull();
  });

  it('serve(): Content-Length; without keep-alive each request gets its own connection and Connection: close', async () => {
    const { listener, count } = countingListener();
    const server = track(await serve((req) => new Response(200, `v1.${req.protoMinor} ${req.target}`), { listener, port: 0 }));
    const r = await curl(['-0', '-v', '-w', W, url(server, '/a'), url(server, '/b')]);
    expect(r.code).toBe(0);
    const t = transfers(r.stdout);
    expect(t.map((x) => x.body)).toEqual(['v1.0 /a', 'v1.0 /b']);
    expect(t.map((x) => x.connects)).toEqual([1, 1]);
    for (const h of responseHeads(r.stderr)) {
      expect(field(h, 'content-length')).toBe('7');
      expect(field(h, 'connection')).toBe('close');
      expect(field(h, 'transfer-encoding')).toBeNull();
    }
    expect(count()).toBe(2);
  });

  it('serve(): Connection: keep-alive from an HTTP/1.0 client is honoured and answered with Connection: keep-alive', async () => {
    const { listener, count } = countingListener();
    const server = track(await serve((req) => new Response(200, `v1.${req.protoMinor} ${req.target}`), { listener, port: 0 }));
    const r = await curl(['-0', '-v', '-H', 'Connection: keep-alive', '-w', W, url(server, '/a'), url(server, '/b'), url(server, '/c')]);
    expect(r.code).toBe(0);
    const t = transfers(r.stdout);
    expect(t.map((x) => x.body)).toEqual(['v1.0 /a', 'v1.0 /b', 'v1.0 /c']);
    for (const h of responseHeads(r.stderr)) {
      expect(field(h, 'connection')?.toLowerCase()).toBe('keep-alive');
      expect(field(h, 'content-length')).toBe('7');
    }
    expect(t.map((x) => x.connects)).toEqual([1, 0, 0]);
    expect(count()).toBe(1);
  });

  it('listen(): HTTP/1.0 keep-alive with a Content-Length response keeps the connection', async () => {
    const peers = new Set<string>();
    const server = track(
      await listen(
        async (stream) => {
          peers.add(String(stream.peerAddr()));
          stream.setHeader('Content-Length', '2');
          await stream.write('ok');
        },
        { port: 0 },
      ),
    );
    const r = await curl(['-0', '-v', '-H', 'Connection: keep-alive', '-w', W, url(server, '/a'), url(server, '/b')]);
    expect(r.code).toBe(0);
    const t = transfers(r.stdout);
    expect(t.map((x) => x.body)).toEqual(['ok', 'ok']);
    for (const h of responseHeads(r.stderr)) expect(field(h, 'connection')?.toLowerCase()).toBe('keep-alive');
    expect(peers.size).toBe(1);
  });
});

// ---- HEAD, 204, 304 ---------------------------------------------------------------------------

describe('responses without a body', () => {
  it('serve(): HEAD (curl -I) gets the Content-Length a GET would have and no body; the connection stays in sync', async () => {
    const body = 'x'.repeat(1234);
    const { listener, count } = countingListener();
    const server = track(await serve(() => new Response(200, { 'Content-Type': 'text/plain' }, body), { listener, port: 0 }));
    const r = await curl(['-v', '-I', url(server, '/h'), '--next', '-v', '-w', W, url(server, '/g')]);
    expect(r.code).toBe(0);
    const heads = responseHeads(r.stderr);
    expect(heads).toHaveLength(2);
    expect(field(heads[0]!, 'content-length')).toBe('1234');
    expect(field(heads[1]!, 'content-length')).toBe('1234');
    // -I prints the head to stdout; then the GET's body. Had HEAD sent a body, the GET would read it as its response.
    const text = r.stdout.toString('latin1');
    expect(text.startsWith('HTTP/1.1 200')).toBe(true);
    const t = transfers(Buffer.from(text.slice(text.indexOf('\r\n\r\n') + 4), 'latin1'));
    expect(t).toHaveLength(1);
    expect(t[0]).toMatchObject({ status: 200, body, connects: 0 });
    expect(count()).toBe(1);
  });

  it('listen(): HEAD with Content-Length set and a body written: head only, connection reusable', async () => {
    const server = track(
      await listen(
        async (stream) => {
          stream.setHeader('Content-Length', '5');
          await stream.write('hello');
        },
        { port: 0 },
      ),
    );
    const r = await curl(['-v', '-I', url(server, '/h'), '--next', '-v', '-w', W, url(server, '/g')]);
    expect(r.code).toBe(0);
    const heads = responseHeads(r.stderr);
    expect(field(heads[0]!, 'content-length')).toBe('5');
    const text = r.stdout.toString('latin1');
    const t = transfers(Buffer.from(text.slice(text.indexOf('\r\n\r\n') + 4), 'latin1'));
    expect(t[0]).toMatchObject({ status: 200, body: 'hello', connects: 0 });
  });

  it('serve(): 204 and 304 have no body; curl completes without hanging, and the next request on the connection works', async () => {
    const server = track(
      await serve(
        (req) => {
          if (req.target === '/204') return new Response(204, 'must not be sent');
          if (req.target === '/304') return new Response(304, { ETag: '"v1"' }, null);
          if (req.target === '/304-cl') return new Response(304, { ETag: '"v1"', 'Content-Length': '42' }, null);
          return new Response(200, 'after');
        },
        { port: 0 },
      ),
    );
    const r = await curl(['-v', '-w', W, url(server, '/204'), url(server, '/304'), url(server, '/304-cl'), url(server, '/200')]);
    expect(r.code).toBe(0);
    const t = transfers(r.stdout);
    expect(t.map((x) => [x.status, x.size, x.body])).toEqual([
      [204, 0, ''],
      [304, 0, ''],
      [304, 0, ''],
      [200, 5, 'after'],
    ]);
    expect(t.map((x) => x.connects)).toEqual([1, 0, 0, 0]);
    const heads = responseHeads(r.stderr);
    expect(field(heads[0]!, 'content-length')).toBeNull();
    expect(field(heads[0]!, 'transfer-encoding')).toBeNull();
    expect(field(heads[1]!, 'etag')).toBe('"v1"');
    expect(field(heads[1]!, 'transfer-encoding')).toBeNull();
  });

  it('listen(): 204 and 304 from a stream handler (even one that writes) have no body', async () => {
    const server = track(
      await listen(
        async (stream) => {
          const t = stream.request.target;
          stream.setStatus(t === '/204' ? 204 : t === '/304' ? 304 : 200);
          if (t !== '/200') await stream.write('dropped');
          else await stream.write('fine');
        },
        { port: 0 },
      ),
    );
    const r = await curl(['-v', '-w', W, url(server, '/204'), url(server, '/304'), url(server, '/200')]);
    expect(r.code).toBe(0);
    const t = transfers(r.stdout);
    expect(t.map((x) => [x.status, x.body])).toEqual([
      [204, ''],
      [304, ''],
      [200, 'fine'],
    ]);
    expect(t.map((x) => x.connects)).toEqual([1, 0, 0]);
    expect(field(responseHeads(r.stderr)[0]!, 'transfer-encoding')).toBeNull();
  });
});

// ---- handler failures --------------------------------------------------------------------

describe('a handler that throws', () => {
  it('serve(): sync and async throws get 500, and the same connection serves the next request', async () => {
    const { errors, onError } = quiet();
    const { listener, count } = countingListener();
    const server = track(
      await serve(
        async (req) => {
          if (req.target === '/sync') throw new Error('boom sync');
          if (req.target === '/async') {
            await Promise.resolve();
            throw new Error('boom async');
          }
          return new Response(200, 'fine');
        },
        { listener, port: 0, onError },
      ),
    );
    const r = await curl(['-v', '-w', W, url(server, '/async'), url(server, '/ok'), url(server, '/async'), url(server, '/ok')]);
    expect(r.code).toBe(0);
    const t = transfers(r.stdout);
    expect(t.map((x) => x.status)).toEqual([500, 200, 500, 200]);
    expect(t[1]!.body).toBe('fine');
    expect(t.map((x) => x.connects)).toEqual([1, 0, 0, 0]);
    expect(count()).toBe(1);
    expect(errors.map((e) => (e as Error).message)).toEqual(['boom async', 'boom async']);
  });

  it('serve(): a handler that throws synchronously (not async) gets 500 and the connection keeps working', async () => {
    const { errors, onError } = quiet();
    const server = track(
      await serve(
        (req) => {
          if (req.target === '/throw') throw new Error('boom');
          return new Response(200, 'fine');
        },
        { port: 0, onError },
      ),
    );
    const r = await curl(['-w', W, url(server, '/throw'), url(server, '/ok')]);
    expect(r.code).toBe(0);
    const t = transfers(r.stdout);
    expect(t.map((x) => [x.status, x.connects])).toEqual([
      [500, 1],
      [200, 0],
    ]);
    expect(t[1]!.body).toBe('fine');
    expect(errors).toHaveLength(1);
  });

  it('serve(): a handler that returns something that is not a Response gets 500', async () => {
    const { errors, onError } = quiet();
    const server = track(
      await serve(((req: Request) => (req.target === '/bad' ? 'not a response' : new Response(200, 'fine'))) as unknown as (r: Request) => Response, {
        port: 0,
        onError,
      }),
    );
    const r = await curl(['-w', W, url(server, '/bad'), url(server, '/ok')]);
    expect(transfers(r.stdout).map((x) => x.status)).toEqual([500, 200]);
    expect(errors).toHaveLength(1);
  });

  it('listen(): a stream handler that throws before writing (GET) gets 500, and the connection keeps working', async () => {
    const { errors, onError } = quiet();
    const server = track(
      await listen(
        async (stream) => {
          if (stream.request.target === '/throw') throw new Error('stream boom');
          await stream.write('fine');
        },
        { port: 0, onError },
      ),
    );
    const r = await curl(['-v', '-w', W, url(server, '/throw'), url(server, '/ok')]);
    expect(r.code).toBe(0);
    const t = transfers(r.stdout);
    expect(t.map((x) => x.status)).toEqual([500, 200]);
    expect(t[1]!.body).toBe('fine');
    expect(t.map((x) => x.connects)).toEqual([1, 0]);
    expect(errors).toHaveLength(1);
  });

  it('listen(): a fixed-length response with the wrong number of bytes gets a clean 500', async () => {
    const { errors, onError } = quiet();
    const server = track(
      await listen(
        async (stream) => {
          if (stream.request.target === '/short') {
            stream.setHeader('Content-Length', '10');
            await stream.write('abc');
            return;
          }
          await stream.write('fine');
        },
        { port: 0, onError },
      ),
    );
    const r = await curl(['-w', W, url(server, '/short'), url(server, '/ok')]);
    expect(r.code).toBe(0);
    const t = transfers(r.stdout);
    expect(t.map((x) => x.status)).toEqual([500, 200]);
    expect(t[1]!.body).toBe('fine');
    expect(errors).toHaveLength(1);
  });
});

// ---- large responses -----------------------------------------------------------------------

describe('large responses', () => {
  const five = randomBytes(5 * 1024 * 1024 + 3);

  it('serve(): a 5 MiB bytes body arrives intact, twice on one connection', async () => {
    const server = track(await serve(() => new Response(200, five), { port: 0 }));
    const out1 = await tempPath('one.bin');
    const out2 = await tempPath('two.bin');
    const r = await curl(['-v', '-w', W, '-o', out1, url(server, '/1'), '-o', out2, url(server, '/2')]);
    expect(r.code).toBe(0);
    const t = transfers(r.stdout);
    expect(t.map((x) => [x.status, x.size, x.connects])).toEqual([
      [200, five.length, 1],
      [200, five.length, 0],
    ]);
    expect(sha256(await readFile(out1))).toBe(sha256(five));
    expect(sha256(await readFile(out2))).toBe(sha256(five));
    expect(field(responseHeads(r.stderr)[0]!, 'content-length')).toBe(String(five.length));
  });

  it('serve(): a 5 MiB streamed body of unknown length goes out chunked and arrives intact', async () => {
    const server = track(await serve(() => new Response(200, pieceBody(five, 50_000)), { port: 0 }));
    const r = await curl(['-v', '-w', W, '-o', '-', url(server, '/s'), '-o', '/dev/null', url(server, '/again')]);
    expect(r.code).toBe(0);
    expect(sha256(r.stdout.subarray(0, five.length))).toBe(sha256(five));
    const t = transfers(r.stdout.subarray(five.length));
    expect(t.map((x) => [x.status, x.size, x.connects])).toEqual([
      [200, five.length, 1],
      [200, five.length, 0],
    ]);
    expect(field(responseHeads(r.stderr)[0]!, 'transfer-encoding')).toBe('chunked');
  });

  it('serve(): the same streamed body to an HTTP/1.0 client is delimited by close', async () => {
    const server = track(await serve(() => new Response(200, pieceBody(five, 50_000)), { port: 0 }));
    const r = await curl(['-0', '-v', url(server, '/s')]);
    expect(r.code).toBe(0);
    expect(sha256(r.stdout)).toBe(sha256(five));
    const [head] = responseHeads(r.stderr);
    expect(field(head!, 'transfer-encoding')).toBeNull();
    expect(field(head!, 'content-length')).toBeNull();
    expect(field(head!, 'connection')).toBe('close');
  });

  it('listen(): 5 MiB streamed chunked in 64 KiB writes arrives intact', async () => {
    const server = track(
      await listen(
        async (stream) => {
          stream.startWrite();
          for (let i = 0; i < five.length; i += 65536) await stream.write(five.subarray(i, i + 65536));
          stream.addTrailer('X-Sum', sha256(five));
          await stream.closeWrite();
        },
        { port: 0 },
      ),
    );
    const r = await curl(['-v', url(server, '/big')]);
    expect(r.code).toBe(0);
    expect(r.stdout.length).toBe(five.length);
    expect(sha256(r.stdout)).toBe(sha256(five));
    expect(field(responseHeads(r.stderr)[0]!, 'transfer-encoding')).toBe('chunked');
  });

  it('listen(): 5 MiB with Content-Length streamed in uneven writes arrives intact', async () => {
    const server = track(
      await listen(
        async (stream) => {
          stream.setHeader('Content-Length', String(five.length));
          let i = 0;
          let step = 1000;
          while (i < five.length) {
            await stream.write(five.subarray(i, i + step));
            i += step;
            step = step * 2 > 200_000 ? 777 : step * 2;
          }
        },
        { port: 0 },
      ),
    );
    const r = await curl(['-v', '-w', W, '-o', '-', url(server, '/big'), '-o', '/dev/null', url(server, '/again')]);
    expect(r.code).toBe(0);
    const got = r.stdout.subarray(0, five.length);
    expect(sha256(got)).toBe(sha256(five));
    const t = transfers(r.stdout.subarray(five.length));
    expect(t.map((x) => [x.status, x.size, x.connects])).toEqual([
      [200, five.length, 1],
      [200, five.length, 0],
    ]);
    expect(field(responseHeads(r.stderr)[0]!, 'content-length')).toBe(String(five.length));
  });
});

// ---- server life cycle ---------------------------------------------------------------------

describe('server life cycle', () => {
  const hello = (): Response => new Response(200, 'hello');

  it('port(server) is the configured port before listen and the bound one after', async () => {
    const s = new Server({ handler: hello, port: 4321 });
    expect(port(s)).toBe(4321);
    expect(s.port).toBe(4321);
    await s.close(); // never listened: closes at once
    const z = track(new Server({ handler: hello, port: 0 }));
    expect(port(z)).toBe(0);
    await z.listen();
    expect(port(z)).toBeGreaterThan(0);
    expect(port(z)).toBe(z.port);
    const r = await curl(['-w', W, `http://127.0.0.1:${port(z)}/`]);
    expect(transfers(r.stdout)[0]).toMatchObject({ status: 200, body: 'hello' });
    expect(() => port({} as Server)).toThrow(ArgumentError);
  });

  it('serve twice on the same fixed port: the second rejects with AddressInUseError naming the address', async () => {
    const p = await freePort();
    const first = track(await serve(hello, { port: p }));
    expect(first.port).toBe(p);
    const err = await serve(hello, { port: p }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AddressInUseError);
    expect((err as AddressInUseError).address).toBe(`127.0.0.1:${p}`);
    expect((err as AddressInUseError).code).toBe('SWY_ERR_ADDRESS_IN_USE');
    // listen() and new Server().listen() the same; the failed server counts as stopped.
    await expect(listen(async () => {}, { port: p })).rejects.toBeInstanceOf(AddressInUseError);
    const s = new Server({ handler: hello, port: p });
    await expect(s.listen()).rejects.toMatchObject({ address: `127.0.0.1:${p}` });
    await s.wait();
    expect(s.listening).toBe(false);
    // The first server is unaffected.
    const r = await curl(['-w', W, `http://127.0.0.1:${p}/`]);
    expect(transfers(r.stdout)[0]).toMatchObject({ status: 200, body: 'hello' });
  });

  it("new Server({ network: 'tcp', address: 'host:port' }) as the reference writes it; bad forms are ArgumentErrors", async () => {
    const s = track(new Server({ network: 'tcp', address: '127.0.0.1:0', handler: hello }));
    await s.listen();
    const r = await curl(['-w', W, `http://127.0.0.1:${s.port}/`]);
    expect(transfers(r.stdout)[0]).toMatchObject({ status: 200, body: 'hello' });
    const v6 = track(await serve(hello, { address: '[::1]:0' }));
    const r6 = await curl(['-g', '-w', W, `http://[::1]:${v6.port}/`]);
    expect(transfers(r6.stdout)[0]).toMatchObject({ status: 200, body: 'hello' });
    expect(() => new Server({ handler: hello, network: 'unix' as 'tcp' })).toThrow(/network must be 'tcp'/);
    expect(() => new Server({ handler: hello, address: 'localhost' })).toThrow(/address must be 'host:port'/);
    expect(() => new Server({ handler: hello, address: '127.0.0.1:70000' })).toThrow(ArgumentError);
    expect(() => new Server({ handler: hello, address: '127.0.0.1:80', port: 80 })).toThrow(/either address or host and port/);
  });

  it('AddressInUseError on an IPv6 host names it in brackets', async () => {
    const first = track(await serve(hello, { host: '::1', port: 0 }));
    const err = await serve(hello, { host: '::1', port: first.port }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AddressInUseError);
    expect((err as AddressInUseError).address).toBe(`[::1]:${first.port}`);
  });

  it('listenAny ignores the port and listens on a free one', async () => {
    const first = track(await serve(hello, { port: 0 }));
    const taken = first.port;
    const any = track(await serve(() => new Response(200, 'any'), { port: taken, listenAny: true }));
    expect(any.port).toBeGreaterThan(0);
    expect(any.port).not.toBe(taken);
    const r = await curl(['-w', W, url(any)]);
    expect(transfers(r.stdout)[0]).toMatchObject({ status: 200, body: 'any' });
  });

  it('new Server({ handler, stream: true }).listen() serves a stream handler', async () => {
    const s = track(
      new Server({
        handler: async (stream: Stream) => {
          await stream.write(`stream ${stream.message.target}`);
        },
        stream: true,
        port: 0,
      }),
    );
    expect(s.listening).toBe(false);
    await s.listen();
    expect(s.listening).toBe(true);
    const r = await curl(['-w', W, url(s, '/p')]);
    expect(transfers(r.stdout)[0]).toMatchObject({ status: 200, body: 'stream /p' });
  });

  it('close() lets a slow request in flight finish; new connections are refused; wait() resolves after', async () => {
    const entered = deferred();
    const gate = deferred();
    const server = track(
      await serve(
        async () => {
          entered.resolve();
          await gate.promise;
          return new Response(200, 'slow but complete');
        },
        { port: 0 },
      ),
    );
    const p = server.port;
    const inflight = curl(['-v', '-w', W, url(server, '/slow')]);
    await entered.promise;
    expect(server.connectionCount).toBe(1);
    let waited = false;
    const waiting = server.wait().then(() => (waited = true));
    const closing = server.close();
    expect(server.listening).toBe(false);
    expect(server.closing).toBe(true);
    // The listener is closed: a new connection is refused (a real round trip through the kernel).
    expect(await tryConnect(p)).toBe('refused');
    expect(waited).toBe(false);
    gate.resolve();
    const r = await inflight;
    expect(r.code).toBe(0);
    const t = transfers(r.stdout);
    expect(t[0]).toMatchObject({ status: 200, body: 'slow but complete' });
    expect(field(responseHeads(r.stderr)[0]!, 'connection')).toBe('close');
    await closing;
    await waiting;
    expect(waited).toBe(true);
    expect(server.connectionCount).toBe(0);
  });

  it('close() lets a chunked response being streamed finish', async () => {
    const firstSent = deferred();
    const gate = deferred();
    const server = track(
      await listen(
        async (stream) => {
          stream.startWrite();
          await stream.write('first;');
          firstSent.resolve();
          await gate.promise;
          await stream.write('second');
        },
        { port: 0 },
      ),
    );
    const inflight = curl(['-N', '-w', W, url(server, '/stream')]);
    await firstSent.promise;
    const closing = server.close();
    expect(await tryConnect(server.port)).toBe('refused');
    gate.resolve();
    const r = await inflight;
    expect(r.code).toBe(0);
    expect(transfers(r.stdout)[0]).toMatchObject({ status: 200, body: 'first;second' });
    await closing;
    expect(server.connectionCount).toBe(0);
  });

  it('close() drops idle keep-alive connections at once', async () => {
    const server = track(await serve(hello, { port: 0 }));
    const s = net.connect({ host: '127.0.0.1', port: server.port });
    destroyAfter(s);
    let received = '';
    const gotResponse = deferred();
    const ended = deferred();
    s.on('data', (c: Buffer) => {
      received += c.toString('latin1');
      if (received.endsWith('hello')) gotResponse.resolve();
    });
    s.on('end', () => ended.resolve());
    s.on('close', () => ended.resolve());
    s.on('error', () => {});
    s.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await gotResponse.promise;
    expect(server.connectionCount).toBe(1);
    await server.close();
    await ended.promise;
    expect(server.connectionCount).toBe(0);
  });

  it('close() and forceClose() drop a plain connection that never sent a byte', async () => {
    for (const how of ['close', 'forceClose'] as const) {
      const l = countingListener();
      const server = track(await serve(hello, { listener: l.listener, port: 0 }));
      const accepted = new Promise<void>((resolve) => l.listener.once('connection', () => resolve()));
      const s = net.connect({ host: '127.0.0.1', port: server.port });
      destroyAfter(s);
      s.on('error', () => {});
      s.resume();
      const closed = new Promise<void>((resolve) => s.once('close', () => resolve()));
      await accepted;
      expect(server.connectionCount).toBe(1);
      await (how === 'close' ? server.close() : server.forceClose());
      await closed;
      expect(server.connectionCount).toBe(0);
    }
  });

  it('forceClose() ends an in-flight request at once: the client sees EOF/reset', async () => {
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
        { port: 0 },
      ),
    );
    const inflight = curl(['-w', W, url(server, '/slow')]);
    await entered.promise;
    const t0 = Date.now();
    await server.forceClose();
    const r = await inflight;
    expect(Date.now() - t0).toBeLessThan(5000);
    // 52: empty reply from server; 56: failure receiving (reset).
    expect([52, 56]).toContain(r.code);
    expect(r.stdout.toString()).not.toContain('too late');
    await server.wait();
    expect(server.connectionCount).toBe(0);
    expect(server.listening).toBe(false);
    // The handler finishing later does not throw or write anywhere.
    gate.resolve();
  });

  it('forceClose() cuts a streamed response in the middle', async () => {
    const firstSent = deferred();
    const gate = deferred();
    onCleanup(() => gate.resolve());
    const server = track(
      await listen(
        async (stream) => {
          stream.startWrite();
          await stream.write('first part;');
          firstSent.resolve();
          await gate.promise;
          await stream.write('second part');
        },
        { port: 0, onError: () => {} },
      ),
    );
    const inflight = curl(['-N', url(server, '/stream')]);
    await firstSent.promise;
    await server.forceClose();
    const r = await inflight;
    // 18: partial file (chunked body cut short); 56: reset while receiving.
    expect([18, 56]).toContain(r.code);
    expect(r.stdout.toString()).not.toContain('second part');
    expect(server.connectionCount).toBe(0);
    gate.resolve();
  });
});
