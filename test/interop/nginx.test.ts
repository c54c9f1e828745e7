/**
 * The client against nginx from Debian (/usr/sbin/nginx), started by the test on a free port
 * with a temp config: static files, gzip on, keep-alive. nginx's `$connection` and
 * `$connection_requests` variables show server-side connection reuse.
 *
 * nginx runs as one process (`master_process off`), prefix and every path it writes (pid,
 * temp dirs) in a temp directory, errors to stderr; it is stopped in afterAll.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import * as HTTP from '../../index.js';
import { Client, createKernel, StatusError, type Response } from '../../kernel/index.js';
import { nginxHttpCommon, nginxPreamble, startNginx, stopPeer, tempDir, type Peer } from '../helpers/peers.js';

let dir = '';
let peer: Peer | null = null;
let origin = '';
const clients: Client[] = [];

const INDEX = '<!doctype html><title>switchyard interop</title><p>hello from nginx</p>\n';
const TEXT = 'The quick brown fox jumps over the lazy dog. '.repeat(5000); // ~225 KB, compressible
const BINARY = randomBytes(2 * 1024 * 1024 + 17);

/** The kernel's own client, no plugins (a Client given no kernel would run on the default ones). */
function client(): Client {
  const c = new Client({ kernel: createKernel() });
  clients.push(c);
  return c;
}

function body(res: Response): Buffer {
  const b = res.body as Uint8Array;
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}

function sha(b: Uint8Array): string {
  return createHash('sha256').update(b).digest('hex');
}

function config(port: number): string {
  return `
${nginxPreamble(dir)}
http {${nginxHttpCommon(dir)}
  sendfile on;
  keepalive_timeout 30s;
  keepalive_requests 1000;
  gzip on;
  gzip_types text/plain;
  gzip_min_length 256;
  server {
    listen 127.0.0.1:${port};
    server_name localhost;
    root ${dir}/www;
    location = /conn { default_type text/plain; return 200 "$connection $connection_requests"; }
    location / { }
  }
}
`;
}

beforeAll(async () => {
  dir = await tempDir('swy-nginx-');
  await mkdir(join(dir, 'www'), { mode: 0o755 });
  await mkdir(join(dir, 'tmp'), { mode: 0o755 });
  await writeFile(join(dir, 'www', 'index.html'), INDEX, { mode: 0o644 });
  await writeFile(join(dir, 'www', 'text.txt'), TEXT, { mode: 0o644 });
  await writeFile(join(dir, 'www', 'data.bin'), BINARY, { mode: 0o644 });
  const started = await startNginx(dir, 1, ([port]) => config(port!));
  peer = started.peer;
  origin = `http://127.0.0.1:${started.ports[0]}`;
});

afterAll(async () => {
  await stopPeer(peer);
  peer = null;
  if (dir !== '') await rm(dir, { recursive: true, force: true });
});

afterEach(() => {
  for (const c of clients.splice(0)) c.close();
});

/** nginx's `$connection $connection_requests` for one request through `c`. */
async function conn(c: Client): Promise<[number, number]> {
  const t = body(await c.get(`${origin}/conn`))
    .toString()
    .split(' ');
  return [Number(t[0]), Number(t[1])];
}

describe('nginx (Debian) as the peer', () => {
  it('GET a static page', async () => {
    const res = await client().get(`${origin}/index.html`);
    expect(res.status).toBe(200);
    expect(res.protoMinor).toBe(1);
    expect(res.headers.get('Server')).toMatch(/^nginx/);
    expect(res.headers.get('Content-Type')).toBe('text/html');
    expect(res.headers.get('Content-Length')).toBe(String(Buffer.byteLength(INDEX)));
    expect(body(res).toString()).toBe(INDEX);
    expect(res.url).toBe(`${origin}/index.html`);
  });

  it('sequential requests reuse one kept-alive connection (nginx $connection and $connection_requests)', async () => {
    const c = client();
    const seen: [number, number][] = [];
    for (let i = 0; i < 5; i++) seen.push(await conn(c));
    expect(new Set(seen.map((s) => s[0])).size).toBe(1);
    expect(seen.map((s) => s[1])).toEqual([1, 2, 3, 4, 5]);
    expect(c.transport.connectionCount()).toBe(1);
  });

  it('the top-level helpers keep the connection alive too', async () => {
    const a = body(await HTTP.get(`${origin}/conn`))
      .toString()
      .split(' ');
    const b = body(await HTTP.get(`${origin}/conn`))
      .toString()
      .split(' ');
    expect(b[0]).toBe(a[0]);
    expect(Number(b[1])).toBe(Number(a[1]) + 1);
  });

  it('HEAD: headers with the length, no body, and the connection stays usable', async () => {
    const c = client();
    const [id] = await conn(c);
    const res = await c.head(`${origin}/data.bin`);
    expect(res.status).toBe(200);
    expect(res.headers.get('Content-Length')).toBe(String(BINARY.length));
    expect(body(res).length).toBe(0);
    const [id2, n] = await conn(c);
    expect(id2).toBe(id);
    expect(n).toBe(3);
  });

  it('a 404 is a StatusError with nginx error page; statusException: false returns it; the connection is reused', async () => {
    const c = client();
    const [id] = await conn(c);
    let err: unknown;
    try {
      await c.get(`${origin}/missing.html`);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(StatusError);
    expect((err as StatusError).status).toBe(404);
    expect(body((err as StatusError).response).toString()).toContain('404 Not Found');
    const res = await c.get(`${origin}/missing.html`, { statusException: false });
    expect(res.status).toBe(404);
    const [id2] = await conn(c);
    expect(id2).toBe(id);
  });

  it('a POST to a static file is a 405 StatusError', async () => {
    let err: unknown;
    try {
      await client().post(`${origin}/index.html`, { body: 'x=1' });
    } catch (e) {
      err = e;
    }
    expect((err as StatusError).status).toBe(405);
  });

  it('gzip: a chunked, gzip-encoded body arrives intact when asked for', async () => {
    const c = client();
    const res = await c.get(`${origin}/text.txt`, { headers: { 'Accept-Encoding': 'gzip' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('Content-Encoding')).toBe('gzip');
    expect(res.headers.has('Content-Length')).toBe(false);
    expect(res.headers.get('Transfer-Encoding')).toMatch(/chunked/);
    const z = body(res);
    expect(z.length).toBeLessThan(TEXT.length / 10);
    // A plain Client (no decompression plugin): the caller gets the gzip bytes as sent.
    expect(gunzipSync(z).toString()).toBe(TEXT);
    // Without Accept-Encoding the plain client gets identity.
    const id = await c.get(`${origin}/text.txt`);
    expect(id.headers.has('Content-Encoding')).toBe(false);
    expect(body(id).toString()).toBe(TEXT);
    expect(c.transport.connectionCount()).toBe(1);
  });

  it('a 2 MiB binary file, buffered and into a responseStream', async () => {
    const c = client();
    const res = await c.get(`${origin}/data.bin`);
    expect(sha(body(res))).toBe(sha(BINARY));
    const parts: Buffer[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _e, cb) {
        parts.push(Buffer.from(chunk));
        cb();
      },
    });
    const r2 = await c.get(`${origin}/data.bin`, { responseStream: sink });
    expect(r2.body).toBeNull();
    await new Promise<void>((resolve) => sink.end(() => resolve()));
    expect(sha(Buffer.concat(parts))).toBe(sha(BINARY));
    expect(c.transport.connectionCount()).toBe(1);
  });

  it('a byte range: 206 with the slice', async () => {
    const res = await client().get(`${origin}/data.bin`, { headers: { Range: 'bytes=100-199' } });
    expect(res.status).toBe(206);
    expect(body(res).equals(BINARY.subarray(100, 200))).toBe(true);
    expect(res.headers.get('Content-Range')).toBe(`bytes 100-199/${BINARY.length}`);
  });

  it('a query string on a static file and a conditional request (304 with statusException: false)', async () => {
    const c = client();
    const res = await c.get(`${origin}/index.html`, { query: { v: '1', v2: 'x y' } });
    expect(body(res).toString()).toBe(INDEX);
    const etag = res.headers.get('ETag')!;
    const r304 = await c.get(`${origin}/index.html`, { headers: { 'If-None-Match': etag }, statusException: false });
    expect(r304.status).toBe(304);
    expect(body(r304).length).toBe(0);
    expect(body(await c.get(`${origin}/index.html`)).toString()).toBe(INDEX);
    expect(c.transport.connectionCount()).toBe(1);
  });

  it('30 concurrent requests, then 30 more on the kept-alive connections', async () => {
    const c = client();
    const round = () => Promise.all(Array.from({ length: 30 }, () => conn(c)));
    const first = await round();
    const ids1 = new Set(first.map((x) => x[0]));
    const opened = c.transport.connectionCount();
    expect(opened).toBe(ids1.size);
    const second = await round();
    const ids2 = new Set(second.map((x) => x[0]));
    for (const id of ids2) expect(ids1.has(id)).toBe(true);
    expect(c.transport.connectionCount()).toBe(opened);
  });
});
