/**
 * `fetch` against real peers: nginx (Debian's, HTTP/2 over TLS with gzip, started here on a
 * free port) through the default plugins (h2 by ALPN, decompression, redirects), and squid as
 * a forward proxy named by the environment (`HTTP_PROXY`). Also backpressure: a response body
 * nobody reads holds the sender.
 */
import { createHash, randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as HTTP from '../../../index.js';
import { createKernel, type Stream } from '../../../kernel/index.js';
import { presets, proxy, proxyFromEnvironment, h2, decompression, redirects } from '../../../plugins/index.js';
import { closeAfter, closeKernelAfter } from '../../helpers/cleanup.js';
import { startServer, startStreamServer, waitFor } from '../../helpers/client.js';
import { cert } from '../../helpers/h2.js';
import { startNginxH2, stopPeer, type Peer } from '../../helpers/peers.js';
import { startSquid } from '../../helpers/proxies.js';

let dir = '';
let peer: Peer | null = null;
let origin = '';
const BINARY = randomBytes(2 * 1024 * 1024 + 3);
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

beforeAll(async () => {
  ({ peer, dir, origin } = await startNginxH2(
    'swy-nginx-fetch-',
    cert,
    { 'big.bin': BINARY, 'text.txt': 'hello nginx '.repeat(1000) },
    `    location = /proto { default_type text/plain; return 200 "$server_protocol $request_method $http_x_test"; }
    location = /moved { return 301 /proto; }`,
  ));
});

afterAll(async () => {
  await stopPeer(peer);
  if (dir !== '') await rm(dir, { recursive: true, force: true });
});

describe('fetch against nginx (HTTP/2 over TLS)', () => {
  it('negotiates h2 by ALPN, follows nginx redirects, decodes gzip, streams 2 MiB intact', async () => {
    const client = closeAfter(new HTTP.Client({ kernel: closeKernelAfter(createKernel().register(presets.defaults)), tlsConfig: { ca: cert.cert } }));
    const proto = await client.fetch(`${origin}/proto`, { headers: { 'X-Test': 'abc' } });
    expect(await proto.text()).toBe('HTTP/2.0 GET abc');
    const moved = await client.fetch(`${origin}/moved`, { method: 'POST', body: 'x' });
    expect([moved.redirected, moved.url, await moved.text()]).toEqual([true, `${origin}/proto`, 'HTTP/2.0 GET ']);
    const text = await client.fetch(`${origin}/text.txt`);
    expect(await text.text()).toBe('hello nginx '.repeat(1000));
    const big = await client.fetch(`${origin}/big.bin`);
    expect(big.headers.get('content-length')).toBe(String(BINARY.length));
    const chunks: Uint8Array[] = [];
    for await (const c of big.body!) chunks.push(c);
    expect(chunks.length).toBeGreaterThan(1);
    expect(sha(Buffer.concat(chunks))).toBe(sha(BINARY));
    const missing = await client.fetch(`${origin}/nope`);
    expect([missing.status, missing.ok]).toEqual([404, false]);
    await missing.arrayBuffer();
  });
});

describe('fetch through a proxy from the environment (squid)', () => {
  it('sends a plain http fetch through HTTP_PROXY in forward mode', async () => {
    const squid = await startSquid({ hosts: { 'origin.test': '127.0.0.1' } });
    const s = await startServer((req) => new HTTP.Response(200, `via ${req.headers.get('Via') ?? 'none'} ${req.target}`));
    const kernel = closeKernelAfter(
      createKernel()
        .register(proxy, { proxy: proxyFromEnvironment({ HTTP_PROXY: squid.url }) })
        .register(redirects)
        .register(decompression)
        .register(h2),
    );
    const res = await kernel.fetch(`http://origin.test:${s.port}/through`);
    expect(await res.text()).toMatch(/^via .*squid.* \/through$/);
    await squid.waitLog(new RegExp(`GET http://origin\\.test:${s.port}/through`));
  });
});

describe('fetch: backpressure', () => {
  it('a body nobody reads holds the sender; reading it lets the rest through', async () => {
    const TOTAL = 64 * 1024 * 1024;
    const CHUNK = new Uint8Array(1024 * 1024);
    let written = 0;
    let done = false;
    const s = await startStreamServer(async (stream: Stream) => {
      await stream.startRead();
      stream.setHeader('Content-Length', String(TOTAL));
      while (written < TOTAL) {
        await stream.write(CHUNK);
        written += CHUNK.length;
      }
      await stream.closeWrite();
      done = true;
    });
    const res = await HTTP.fetch(s.origin);
    // The server's socket fills up and stays full: its writes wait for a reader that never came.
    await waitFor(() => s.sockets[0]!.writableNeedDrain, 10_000, 'the server socket to fill');
    expect(done).toBe(false);
    expect(written).toBeLessThan(TOTAL / 2);
    let got = 0;
    for await (const c of res.body!) got += c.length;
    expect(got).toBe(TOTAL);
    expect(done).toBe(true);
  });
});
