/**
 * The decompression plugin against real loopback servers whose handlers compress with
 * node:zlib: every coding, Accept-Encoding, `decompress: false`, the bodies it must leave
 * alone, streaming reads, bombs, and broken streams.
 */
import { createHash, randomBytes } from 'node:crypto';
import zlib from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import { AbstractBody, ArgumentError, BytesBody, HTTPError, ParseError, Request, Response, createKernel, definePlugin, type Stream } from '../../../kernel/index.js';
import { DecompressionLimitError, ACCEPT_ENCODING, DecodingBody, decodedContentEncoding, decompression, isZlibHeader, parseCodings, presets } from '../../../plugins/index.js';
import { bootKernel, makeClient, onCleanup, record, startServer, startStreamServer, waitConnections, within, type Seen } from '../../helpers/redirects.js';

/** Text that compresses well but is not trivial: numbered lines with some random hex. */
function sample(bytes: number): Buffer {
  const parts: Buffer[] = [];
  let n = 0;
  for (let i = 0; n < bytes; i++) {
    const line = Buffer.from(`line ${i} ${randomBytes(8).toString('hex')} the quick brown fox jumps over the lazy dog\n`);
    parts.push(line);
    n += line.length;
  }
  return Buffer.concat(parts).subarray(0, bytes);
}

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

const encoders: Record<string, (b: Buffer) => Buffer> = {
  gzip: (b) => zlib.gzipSync(b),
  'x-gzip': (b) => zlib.gzipSync(b),
  deflate: (b) => zlib.deflateSync(b),
  'deflate (raw)': (b) => zlib.deflateRawSync(b),
  br: (b) => zlib.brotliCompressSync(b, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 5 } }),
};
const headerFor = (name: string): string => (name === 'deflate (raw)' ? 'deflate' : name);

/** A server that answers every request with `make(req)`, recording requests. */
async function server(make: (req: Request) => Response | Promise<Response>): Promise<{ base: string; seen: Seen[]; port: number; server: Awaited<ReturnType<typeof startServer>>['server'] }> {
  const seen: Seen[] = [];
  const s = await startServer((req) => {
    record(seen, req);
    return make(req);
  });
  return { base: `http://127.0.0.1:${s.port}`, seen, port: s.port, server: s.server };
}

function encoded(body: Uint8Array, encoding: string, extra: Record<string, string> = {}): Response {
  return new Response(200, body, { headers: { 'Content-Encoding': encoding, 'Content-Type': 'text/plain', ...extra } });
}

describe('decompression: codings', () => {
  const plain = sample(200_000);

  it.each(Object.keys(encoders))('decodes %s, drops Content-Encoding and Content-Length, keeps the value findable', async (name) => {
    const body = encoders[name]!(plain);
    const o = await server(() => encoded(body, headerFor(name)));
    const client = await makeClient();
    const res = await client.get(`${o.base}/`);
    expect(res.status).toBe(200);
    expect(sha(res.body as Uint8Array)).toBe(sha(plain));
    expect(res.headers.has('Content-Encoding')).toBe(false);
    expect(res.headers.has('Content-Length')).toBe(false);
    expect(res.headers.get('Content-Type')).toBe('text/plain');
    expect(decodedContentEncoding(res)).toBe(headerFor(name));
  });

  it('decodes a chunked (streamed) gzip body of several MiB', async () => {
    const plainBig = sample(6 * 1024 * 1024);
    const gz = zlib.gzipSync(plainBig);
    const { port } = await startStreamServer(async (stream: Stream) => {
      await stream.startRead();
      stream.setHeader('Content-Encoding', 'gzip');
      for (let off = 0; off < gz.length; off += 10_000) await stream.write(gz.subarray(off, off + 10_000));
      await stream.closeWrite();
    });
    const client = await makeClient();
    const res = await client.get(`http://127.0.0.1:${port}/`);
    expect((res.body as Uint8Array).length).toBe(plainBig.length);
    expect(sha(res.body as Uint8Array)).toBe(sha(plainBig));
  });

  it('decodes several codings in reverse order (one header, and two header lines)', async () => {
    const once = zlib.deflateSync(plain);
    const twice = zlib.gzipSync(once); // deflate first, then gzip: "deflate, gzip"
    const thrice = zlib.brotliCompressSync(twice);
    const o = await server((req) =>
      req.target === '/two'
        ? encoded(twice, 'deflate, gzip')
        : new Response(200, thrice, {
            headers: [
              ['Content-Encoding', 'deflate, gzip'],
              ['Content-Encoding', 'br'],
            ],
          }),
    );
    const client = await makeClient();
    const a = await client.get(`${o.base}/two`);
    expect(sha(a.body as Uint8Array)).toBe(sha(plain));
    expect(decodedContentEncoding(a)).toBe('deflate, gzip');
    const b = await client.get(`${o.base}/three`);
    expect(sha(b.body as Uint8Array)).toBe(sha(plain));
    expect(b.headers.has('Content-Encoding')).toBe(false);
  });

  it('leaves unknown codings, identity, and over-long lists alone', async () => {
    const gz = zlib.gzipSync(plain);
    const o = await server((req) => {
      if (req.target === '/zstd') return encoded(Buffer.from('not really zstd'), 'zstd');
      if (req.target === '/mixed') return encoded(gz, 'gzip, compress');
      if (req.target === '/identity') return encoded(Buffer.from('plain'), 'identity');
      return encoded(gz, 'identity, identity, gzip, gzip, gzip, gzip, gzip, gzip'); // six gzip
    });
    const client = await makeClient();
    const z = await client.get(`${o.base}/zstd`);
    expect(z.text()).toBe('not really zstd');
    expect(z.headers.get('Content-Encoding')).toBe('zstd');
    expect(decodedContentEncoding(z)).toBeNull();
    const m = await client.get(`${o.base}/mixed`);
    expect(Buffer.from(m.body as Uint8Array).equals(gz)).toBe(true);
    expect(m.headers.get('Content-Length')).toBe(String(gz.length));
    const i = await client.get(`${o.base}/identity`);
    expect(i.text()).toBe('plain');
    expect(i.headers.get('Content-Encoding')).toBe('identity');
    const six = await client.get(`${o.base}/six`);
    expect(Buffer.from(six.body as Uint8Array).equals(gz)).toBe(true);
  });

  it('leaves HEAD, 204, 304 and empty bodies alone; an empty chunked body decodes to nothing', async () => {
    const { port } = await startStreamServer(async (stream: Stream) => {
      const req = await stream.startRead();
      stream.setHeader('Content-Encoding', 'gzip');
      if (req.target === '/204') stream.setStatus(204);
      else if (req.target === '/304') stream.setStatus(304);
      else if (req.target === '/empty') stream.setHeader('Content-Length', '0');
      else if (req.target === '/head') stream.setHeader('Content-Length', '1234');
      else stream.setHeader('Transfer-Encoding', 'chunked');
      await stream.closeWrite();
    });
    const client = await makeClient();
    const base = `http://127.0.0.1:${port}`;
    const head = await client.head(`${base}/head`);
    expect(head.headers.get('Content-Encoding')).toBe('gzip');
    expect(head.headers.get('Content-Length')).toBe('1234');
    for (const p of ['/204', '/304', '/empty']) {
      const res = await client.get(`${base}${p}`, { statusException: false });
      expect(res.headers.get('Content-Encoding'), p).toBe('gzip');
      expect((res.body as Uint8Array).length, p).toBe(0);
    }
    const chunked = await client.get(`${base}/chunked`);
    expect((chunked.body as Uint8Array).length).toBe(0);
  });

  it('tells zlib-wrapped from raw deflate by the first two bytes, also for tiny bodies', async () => {
    expect(isZlibHeader(0x78, 0x9c)).toBe(true);
    expect(isZlibHeader(0x78, 0x01)).toBe(true);
    expect(isZlibHeader(0x78, 0xda)).toBe(true);
    const raw = zlib.deflateRawSync(Buffer.alloc(0));
    expect(isZlibHeader(raw[0]!, raw[1] ?? 0)).toBe(false);
    const o = await server((req) => encoded(req.target === '/raw-empty' ? raw : zlib.deflateRawSync(Buffer.from('x')), 'deflate'));
    const client = await makeClient();
    expect((await client.get(`${o.base}/raw-empty`)).text()).toBe('');
    expect((await client.get(`${o.base}/raw-x`)).text()).toBe('x');
  });

  it('parseCodings: order, aliases, identity, unknown', () => {
    expect(parseCodings('gzip')).toEqual(['gzip']);
    expect(parseCodings(' X-GZIP , br')).toEqual(['gzip', 'br']);
    expect(parseCodings('identity')).toEqual([]);
    expect(parseCodings('gzip, zstd')).toBeNull();
    expect(parseCodings('gzip,gzip,gzip,gzip,gzip,gzip')).toBeNull();
  });
});

describe('decompression: Accept-Encoding and the switch', () => {
  it(`sends Accept-Encoding: ${ACCEPT_ENCODING} by default`, async () => {
    const o = await server(() => new Response(200, 'ok'));
    const client = await makeClient();
    await client.get(`${o.base}/`);
    expect(o.seen[0]!.headers['accept-encoding']).toBe('gzip, deflate, br');
  });

  it("keeps the caller's Accept-Encoding (and still decodes what comes back)", async () => {
    const o = await server(() => encoded(zlib.gzipSync('hello'), 'gzip'));
    const client = await makeClient();
    const res = await client.get(`${o.base}/`, { headers: { 'accept-encoding': 'gzip' } });
    expect(o.seen[0]!.headers['accept-encoding']).toBe('gzip');
    expect(res.text()).toBe('hello');
    const viaDefaults = await makeClient({ defaultHeaders: { 'Accept-Encoding': 'br' } });
    await viaDefaults.get(`${o.base}/`);
    expect(o.seen[1]!.headers['accept-encoding']).toBe('br');
  });

  it('decompress: false sends no Accept-Encoding and returns the encoded bytes with their headers', async () => {
    const gz = zlib.gzipSync('hello');
    const o = await server(() => encoded(gz, 'gzip'));
    const client = await makeClient();
    const res = await client.get(`${o.base}/`, { decompress: false });
    expect(o.seen[0]!.headers['accept-encoding']).toBeUndefined();
    expect(Buffer.from(res.body as Uint8Array).equals(gz)).toBe(true);
    expect(res.headers.get('Content-Encoding')).toBe('gzip');
    expect(res.headers.get('Content-Length')).toBe(String(gz.length));
    expect(decodedContentEncoding(res)).toBeNull();
    // As a client default, overridden per call.
    const off = await makeClient({ decompress: false });
    expect(Buffer.from((await off.get(`${o.base}/`)).body as Uint8Array).equals(gz)).toBe(true);
    expect((await off.get(`${o.base}/`, { decompress: true })).text()).toBe('hello');
  });

  it('decodes a response an onRequest tap made (bytes body, no network)', async () => {
    const mock = definePlugin({
      name: 'mock',
      register(kernel) {
        kernel.hooks.client.onRequest.tap({ name: 'mock', stage: 100 }, (req) => new Response(200, zlib.gzipSync(`mocked ${req.target}`), { headers: { 'Content-Encoding': 'gzip' } }));
      },
    });
    const kernel = await bootKernel([decompression, mock]);
    const client = await makeClient({}, kernel);
    const res = await client.get('http://127.0.0.1:9/x');
    expect(res.text()).toBe('mocked /x');
  });

  it('works with redirects: every hop asks for compression, the final body is decoded', async () => {
    const o = await server((req) =>
      req.target === '/go' ? new Response(302, zlib.gzipSync('moved'), { headers: { Location: '/land', 'Content-Encoding': 'gzip' } }) : encoded(zlib.brotliCompressSync('landed'), 'br'),
    );
    const client = await makeClient();
    const res = await client.get(`${o.base}/go`);
    expect(res.text()).toBe('landed');
    expect(res.url).toBe(`${o.base}/land`);
    expect(o.seen.map((s) => s.headers['accept-encoding'])).toEqual([ACCEPT_ENCODING, ACCEPT_ENCODING]);
  });

  it('presets.defaults includes decompression', async () => {
    expect(presets.defaults.map((p) => p.name)).toEqual(expect.arrayContaining(['redirects', 'decompression']));
  });
});

describe('decompression: streaming', () => {
  it('dispatch streams the decoded body: small reads, then iteration', async () => {
    const plain = sample(300_000);
    const o = await server(() => encoded(zlib.gzipSync(plain), 'gzip'));
    const client = await makeClient();
    const req = new Request('GET', '/', { host: `127.0.0.1:${o.port}` });
    req.url = `${o.base}/`;
    const res = await client.dispatch(req);
    expect(res.body).toBeInstanceOf(DecodingBody);
    expect(res.contentLength).toBe(-1);
    const body = res.body as DecodingBody;
    const first = new Uint8Array(1000);
    const parts: Uint8Array[] = [];
    for (let i = 0; i < 5; i++) {
      const n = await body.read(first);
      expect(n).toBeGreaterThan(0);
      parts.push(first.slice(0, n));
    }
    for await (const c of body) parts.push(c);
    expect(await body.read(first)).toBe(0);
    expect(sha(Buffer.concat(parts))).toBe(sha(plain));
    expect(body.decodedBytes).toBe(plain.length);
    body.close();
    expect(body.closed).toBe(true);
  });

  it('a decoded body read to its end leaves the connection reusable', async () => {
    const ports: number[] = [];
    const gz = zlib.gzipSync(sample(100_000));
    const { port } = await startStreamServer(async (stream: Stream) => {
      await stream.startRead();
      ports.push(stream.peerAddr().port);
      stream.setHeader('Content-Encoding', 'gzip');
      await stream.write(gz);
      await stream.closeWrite();
    });
    const client = await makeClient();
    for (let i = 0; i < 3; i++) expect((await client.get(`http://127.0.0.1:${port}/`)).body).toHaveLength(100_000);
    expect(ports).toHaveLength(3);
    expect(new Set(ports).size).toBe(1);
  });

  it('closing the decoded body early closes the source and its connection', async () => {
    const plain = sample(4 * 1024 * 1024);
    const gz = zlib.gzipSync(plain);
    const { port, server: srv } = await startStreamServer(async (stream: Stream) => {
      await stream.startRead();
      stream.setHeader('Content-Encoding', 'gzip');
      try {
        for (let off = 0; off < gz.length; off += 16_384) await stream.write(gz.subarray(off, off + 16_384));
        await stream.closeWrite();
      } catch {
        // the client went away
      }
    });
    const client = await makeClient();
    const req = new Request('GET', '/', { host: `127.0.0.1:${port}` });
    req.url = `http://127.0.0.1:${port}/`;
    const res = await client.dispatch(req);
    const body = res.body as AbstractBody;
    const n = await body.read(new Uint8Array(4096));
    expect(n).toBeGreaterThan(0);
    body.close();
    expect(body.closed).toBe(true);
    expect(await body.read(new Uint8Array(10))).toBe(0);
    await waitConnections(srv, 0);
  });

  it('DecodingBody works on any AbstractBody and checks its arguments', async () => {
    const d = new DecodingBody(new BytesBody(zlib.gzipSync('abc')), 'gzip');
    const chunks: Uint8Array[] = [];
    for await (const c of d) chunks.push(c);
    expect(Buffer.concat(chunks).toString()).toBe('abc');
    const source = new BytesBody(zlib.gzipSync('abc'));
    const e = new DecodingBody(source, 'gzip');
    e.close();
    expect(source.closed).toBe(true);
    expect(() => new DecodingBody(new BytesBody(''), 'zstd' as never)).toThrow(ArgumentError);
    expect(() => new DecodingBody(new BytesBody(''), 'gzip', -1)).toThrow(ArgumentError);
  });
});

describe('decompression: limits and bombs', () => {
  /** One gzip member of 64 MiB of zeros (about 64 KiB); members concatenate into one gzip stream. */
  let member: Buffer;
  beforeAll(() => {
    member = zlib.gzipSync(Buffer.alloc(64 * 1024 * 1024), { level: 9 });
  });

  /** A server streaming a gzip bomb that claims `members` × 64 MiB; reports the bytes it got out. */
  async function bombServer(members: number): Promise<{ url: string; sent: () => number; total: number; server: Awaited<ReturnType<typeof startStreamServer>>['server'] }> {
    let sent = 0;
    const total = members * member.length;
    const { port, server: srv } = await startStreamServer(async (stream: Stream) => {
      await stream.startRead();
      stream.setHeader('Content-Encoding', 'gzip');
      stream.setHeader('Content-Length', String(total));
      try {
        for (let i = 0; i < members; i++) {
          await stream.write(member);
          sent += member.length;
        }
        await stream.closeWrite();
      } catch {
        // the client hung up, as it should
      }
    });
    return { url: `http://127.0.0.1:${port}/bomb`, sent: () => sent, total, server: srv };
  }

  it('a 10 GiB-claimed gzip bomb stops at maxDecompressedBytes with DecompressionLimitError, quickly and reading little', async () => {
    const bomb = await bombServer(160); // 160 × 64 MiB = 10 GiB decoded, ~10 MB on the wire
    const client = await makeClient();
    const started = performance.now();
    const before = process.memoryUsage().arrayBuffers;
    const err = await within(
      client.get(bomb.url, { maxDecompressedBytes: 1024 * 1024 }).catch((e: unknown) => e),
      10_000,
      'the bomb to be stopped',
    );
    const elapsed = performance.now() - started;
    expect(err).toBeInstanceOf(DecompressionLimitError);
    expect(err).toBeInstanceOf(HTTPError);
    const e = err as DecompressionLimitError;
    expect(e.limit).toBe(1024 * 1024);
    expect(e.code).toBe('SWY_ERR_DECOMPRESSION_LIMIT');
    expect(e.message).toContain('maxDecompressedBytes');
    expect(e.message).toContain(String(1024 * 1024));
    expect(elapsed).toBeLessThan(5000);
    // The client stopped reading (a few MB sit in socket buffers at most), and the connection is gone.
    await waitConnections(bomb.server, 0);
    expect(bomb.sent()).toBeLessThan(bomb.total);
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(64 * 1024 * 1024);
  });

  it('dispatch: the default bounds are 256 MiB and 200:1; a per-call size bound stops a streamed 100 GiB-claimed bomb mid-iteration', async () => {
    const bomb = await bombServer(1600); // 100 GiB claimed
    const client = await makeClient();
    const req = new Request('GET', '/bomb', { host: new URL(bomb.url).host });
    req.url = bomb.url;
    const res = await client.dispatch(req);
    const body = res.body as DecodingBody;
    expect(body.limit).toBe(256 * 1024 * 1024);
    expect(body.ratio).toBe(200);
    body.close();
    const res2 = await client.dispatch(Object.assign(new Request('GET', '/bomb', { host: new URL(bomb.url).host }), { url: bomb.url }), {
      maxDecompressedBytes: 3 * 1024 * 1024,
      maxDecompressionRatio: 0,
    });
    const b2 = res2.body as DecodingBody;
    let got = 0;
    const err = await (async () => {
      try {
        for await (const c of b2) got += c.length;
      } catch (e) {
        return e;
      }
      return null;
    })();
    expect(err).toBeInstanceOf(DecompressionLimitError);
    expect(got).toBeLessThanOrEqual(3 * 1024 * 1024);
    expect(got).toBeGreaterThan(2 * 1024 * 1024);
    expect(b2.closed).toBe(true);
    await waitConnections(bomb.server, 0);
    expect(bomb.sent()).toBeLessThan(bomb.total / 10);
  });

  it('a body of exactly the bound passes; one byte more fails; 0 means no bound', async () => {
    const plain = sample(100_000);
    const o = await server(() => encoded(zlib.gzipSync(plain), 'gzip'));
    const client = await makeClient();
    expect((await client.get(`${o.base}/`, { maxDecompressedBytes: 100_000 })).body).toHaveLength(100_000);
    await expect(client.get(`${o.base}/`, { maxDecompressedBytes: 99_999 })).rejects.toThrow(DecompressionLimitError);
    expect((await client.get(`${o.base}/`, { maxDecompressedBytes: 0 })).body).toHaveLength(100_000);
  });

  it('plugin options set the default bound; a bad bound is an ArgumentError', async () => {
    const plain = sample(50_000);
    const o = await server(() => encoded(zlib.deflateSync(plain), 'deflate'));
    const kernel = createKernel().register(decompression, { maxDecompressedBytes: 10_000 });
    await kernel.ready();
    onCleanup(() => kernel.close());
    const client = await makeClient({}, kernel);
    const err = (await client.get(`${o.base}/`).catch((e: unknown) => e)) as DecompressionLimitError;
    expect(err).toBeInstanceOf(DecompressionLimitError);
    expect(err.limit).toBe(10_000);
    expect((await client.get(`${o.base}/`, { maxDecompressedBytes: 1e6 })).body).toHaveLength(50_000);
    await expect(client.get(`${o.base}/`, { maxDecompressedBytes: -1 })).rejects.toThrow(ArgumentError);
    const bad = createKernel().register(decompression, { maxDecompressedBytes: 'big' as never });
    await expect(bad.ready()).rejects.toThrow(/maxDecompressedBytes/);
    await bad.close();
  });
});

describe('decompression: broken streams', () => {
  it("a truncated gzip body (complete HTTP message) surfaces zlib's error", async () => {
    const gz = zlib.gzipSync(sample(50_000));
    const o = await server(() => encoded(gz.subarray(0, gz.length - 100), 'gzip'));
    const client = await makeClient();
    const err = (await client.get(`${o.base}/`).catch((e: unknown) => e)) as NodeJS.ErrnoException;
    expect(err).toBeInstanceOf(Error);
    expect(err.code).toBe('Z_BUF_ERROR');
    expect(err.message).toMatch(/unexpected end of file/);
  });

  it("corrupt deflate data surfaces zlib's data error, and the client keeps working", async () => {
    const good = zlib.deflateSync(sample(50_000));
    const bad = Buffer.from(good);
    for (let i = 10; i < 60; i++) bad[i] = 0xff;
    const o = await server((req) => encoded(req.target === '/bad' ? bad : good, 'deflate'));
    const client = await makeClient();
    const err = (await client.get(`${o.base}/bad`).catch((e: unknown) => e)) as NodeJS.ErrnoException;
    expect(err.code).toBe('Z_DATA_ERROR');
    expect((await client.get(`${o.base}/good`)).body).toHaveLength(50_000);
  });

  it('a transfer cut short surfaces the transport ParseError through the decoder', async () => {
    const gz = zlib.gzipSync(sample(2 * 1024 * 1024));
    const { port } = await startStreamServer(async (stream: Stream) => {
      await stream.startRead();
      stream.setHeader('Content-Encoding', 'gzip');
      stream.setHeader('Content-Length', String(gz.length));
      await stream.write(gz.subarray(0, gz.length >> 1));
      throw new Error('handler dies mid-body');
    });
    const client = await makeClient();
    const err = await client.get(`http://127.0.0.1:${port}/`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ParseError);
  });
});
