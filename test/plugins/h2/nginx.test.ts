/**
 * The HTTP/2 client against nginx from Debian (/usr/sbin/nginx) configured with `http2` over
 * TLS (self-signed certificate made here), started by the test on a free port: ALPN h2, one
 * connection multiplexing concurrent requests (nginx's `$connection`), a 2 MiB download, gzip.
 */
import { createHash, randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, createKernel } from '../../../kernel/index.js';
import { h2 } from '../../../plugins/h2/index.js';
import { decompression } from '../../../plugins/index.js';
import { startNginxH2, stopPeer, type Peer } from '../../helpers/peers.js';
import { cert } from '../../helpers/h2.js';

let dir = '';
let peer: Peer | null = null;
let origin = '';
let client: Client | null = null;
const BINARY = randomBytes(2 * 1024 * 1024 + 3);

beforeAll(async () => {
  ({ peer, dir, origin } = await startNginxH2(
    'swy-nginx-h2-',
    cert,
    { 'big.bin': BINARY, 'text.txt': 'hello nginx over h2 '.repeat(1000) },
    `    location = /conn { default_type text/plain; return 200 "$connection $server_protocol"; }
    location = /echo { default_type text/plain; return 200 "$request_method $http_x_test $host"; }`,
  ));
  const kernel = await createKernel().register(h2).register(decompression).ready();
  client = new Client({ kernel, tlsConfig: { ca: cert.cert } });
});

afterAll(async () => {
  client?.close();
  await stopPeer(peer);
  if (dir !== '') await rm(dir, { recursive: true, force: true });
});

describe('client against nginx (http2 over TLS)', () => {
  it('negotiates h2 and multiplexes concurrent requests over one connection', async () => {
    const c = client!;
    const all = await Promise.all(Array.from({ length: 20 }, () => c.get(`${origin}/conn`)));
    const texts = all.map((r) => Buffer.from(r.body as Uint8Array).toString());
    expect(new Set(texts).size).toBe(1);
    expect(texts[0]).toMatch(/^\d+ HTTP\/2\.0$/);
    expect(all[0]!.protoMajor).toBe(2);
    expect(c.transport.connectionCount()).toBe(1);
  });

  it('sends headers and :authority; downloads 2 MiB intact; decompresses gzip', async () => {
    const c = client!;
    const e = await c.get(`${origin}/echo`, { headers: { 'X-Test': 'abc' } });
    expect(Buffer.from(e.body as Uint8Array).toString()).toBe('GET abc 127.0.0.1');
    const big = await c.get(`${origin}/big.bin`);
    const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
    expect(sha(big.body as Uint8Array)).toBe(sha(BINARY));
    const t = await c.get(`${origin}/text.txt`, { headers: { 'Accept-Encoding': 'gzip' } });
    expect(Buffer.from(t.body as Uint8Array).toString()).toBe('hello nginx over h2 '.repeat(1000));
  });
});
