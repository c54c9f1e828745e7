/**
 * The compression plugin on real loopback servers: what it compresses and how (checked by
 * decoding the bytes as sent with node:zlib), what it leaves alone, the head it sends (Vary,
 * ETag, Content-Length, HEAD), and streamed bodies (SSE, stream handlers) flushed per write.
 */
import http from 'node:http';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { CallbackBody, ChunkBody, Response, encodeResponseBody, type BodyEncoder } from '../../../kernel/index.js';
import { SSEEvent, WHOLE_MAX, fileServer, sseStream } from '../../../plugins/index.js';
import { destroyAfter } from '../../helpers/cleanup.js';
import { siteDir } from './helpers.js';
import { deferred, within } from '../../helpers/server.js';
import { compressedServer, compressedStreamServer, jsonOf, raw } from './helpers.js';

const JSON_64K = jsonOf(64 * 1024);
const json = (body: string | Uint8Array, extra: Record<string, string> = {}): Response => new Response(200, body, { headers: { 'Content-Type': 'application/json', ...extra } });

function decode(coding: string | undefined, body: Buffer): string {
  if (coding === 'gzip') return zlib.gunzipSync(body).toString('utf8');
  if (coding === 'br') return zlib.brotliDecompressSync(body).toString('utf8');
  return body.toString('utf8');
}

describe('compression: in-memory bodies', () => {
  it.each([
    ['gzip', 'gzip'],
    ['br', 'br'],
    ['gzip, deflate, br', 'br'],
    ['gzip;q=1, br;q=0.5', 'gzip'],
    ['x-gzip', 'gzip'],
    ['*', 'br'],
  ])('Accept-Encoding %j gets %s, with its length, Vary and the same JSON', async (ae, coding) => {
    const { port } = await compressedServer(() => json(JSON_64K));
    const r = await raw(port, '/', { 'Accept-Encoding': ae });
    expect(r.status).toBe(200);
    expect(r.headers['content-encoding']).toBe(coding);
    expect(r.headers.vary).toBe('Accept-Encoding');
    expect(Number(r.headers['content-length'])).toBe(r.body.length);
    expect(r.body.length).toBeLessThan(JSON_64K.length / 4);
    expect(decode(coding, r.body)).toBe(JSON_64K);
  });

  it.each([
    ['no Accept-Encoding', undefined],
    ['an empty Accept-Encoding', ''],
    ['identity', 'identity'],
    ['only codings it does not make', 'deflate, compress'],
    ['every coding weighed 0', 'gzip;q=0, br;q=0'],
    ['identity preferred', 'identity;q=1, gzip;q=0.5'],
    ['*;q=0 and identity;q=0 (nothing acceptable: identity anyway)', 'deflate, *;q=0, identity;q=0'],
  ])('%s: the body as it is (with Vary, since another client would get it compressed)', async (_name, ae) => {
    const { port } = await compressedServer(() => json(JSON_64K));
    const r = await raw(port, '/', ae === undefined ? {} : { 'Accept-Encoding': ae });
    expect(r.headers['content-encoding']).toBeUndefined();
    expect(r.headers.vary).toBe('Accept-Encoding');
    expect(r.body.toString('utf8')).toBe(JSON_64K);
  });

  it('merges Accept-Encoding into an existing Vary, and leaves Vary: * and a Vary that has it alone', async () => {
    const vary = ['Origin', '*', 'origin, accept-encoding'];
    let i = 0;
    const { port } = await compressedServer(() => json(JSON_64K, { Vary: vary[i++]! }));
    const got: (string | undefined)[] = [];
    for (let k = 0; k < vary.length; k++) got.push((await raw(port, '/', { 'Accept-Encoding': 'gzip' })).headers.vary);
    expect(got).toEqual(['Origin, Accept-Encoding', '*', 'origin, accept-encoding']);
  });

  it('leaves bodies below the threshold, compressed types, no-transform and encoded responses alone (no Vary either)', async () => {
    const cases: Response[] = [
      json('{"small":true}'),
      new Response(200, Buffer.alloc(4096, 1), { headers: { 'Content-Type': 'image/png' } }),
      new Response(200, Buffer.alloc(4096, 1), { headers: { 'Content-Type': 'application/zip' } }),
      new Response(200, Buffer.alloc(4096, 1), { headers: { 'Content-Type': 'video/mp4' } }),
      new Response(200, Buffer.alloc(4096, 1), { headers: { 'Content-Type': 'application/octet-stream' } }),
      new Response(200, Buffer.alloc(4096, 1)),
      json(JSON_64K, { 'Cache-Control': 'public, no-transform' }),
      json(zlib.gzipSync(JSON_64K), { 'Content-Encoding': 'gzip' }),
    ];
    let i = 0;
    const { port } = await compressedServer(() => cases[i++]!);
    for (let k = 0; k < cases.length; k++) {
      const r = await raw(port, '/', { 'Accept-Encoding': 'gzip, br' });
      expect(r.headers['content-encoding'], `case ${k}`).toBe(k === cases.length - 1 ? 'gzip' : undefined);
      expect(r.headers.vary, `case ${k}`).toBeUndefined();
    }
  });

  it('compresses text, SVG and JSON-ish types, a body at the threshold, and honours a threshold of its own', async () => {
    const types = ['text/html; charset=utf-8', 'image/svg+xml', 'application/problem+json', 'text/event-stream', 'application/javascript'];
    let i = 0;
    const { port } = await compressedServer(() => new Response(200, 'x'.repeat(2000), { headers: { 'Content-Type': types[i++]! } }), { threshold: 2000 });
    for (const t of types) expect((await raw(port, '/', { 'Accept-Encoding': 'gzip' })).headers['content-encoding'], t).toBe('gzip');
    const small = await compressedServer(() => json('y'.repeat(1999)), { threshold: 2000 });
    expect((await raw(small.port, '/', { 'Accept-Encoding': 'gzip' })).headers['content-encoding']).toBeUndefined();
  });

  it('makes a strong ETag weak, keeps a weak one, and If-None-Match with either form still gets 304 with the same head', async () => {
    const files = fileServer(siteDir(), { etag: (_p, st) => `"${st.size}"` });
    const { port } = await compressedServer(files);
    const first = await raw(port, '/data.json', { 'Accept-Encoding': 'gzip' });
    expect(first.headers['content-encoding']).toBe('gzip');
    const tag = first.headers.etag!;
    expect(tag).toMatch(/^W\/"\d+"$/);
    for (const inm of [tag, tag.slice(2)]) {
      const again = await raw(port, '/data.json', { 'Accept-Encoding': 'gzip', 'If-None-Match': inm });
      expect(again.status).toBe(304);
      // The tag as the client stored it.
      expect(again.headers.etag).toBe(inm);
      expect(again.headers.vary).toBe('Accept-Encoding');
      expect(again.headers['content-encoding']).toBeUndefined();
    }
    // A client that takes no coding gets the strong tag, as the file server made it.
    expect((await raw(port, '/data.json')).headers.etag).toBe(tag.slice(2));
    const weak = await compressedServer(() => json(JSON_64K, { ETag: 'W/"v1"' }));
    expect((await raw(weak.port, '/', { 'Accept-Encoding': 'gzip' })).headers.etag).toBe('W/"v1"');
  });

  it('answers Range requests and 206 unencoded', async () => {
    const { port } = await compressedServer(fileServer(siteDir()));
    const r = await raw(port, '/data.json', { 'Accept-Encoding': 'gzip, br', Range: 'bytes=0-99' });
    expect(r.status).toBe(206);
    expect(r.headers['content-encoding']).toBeUndefined();
    expect(r.body.toString('utf8')).toBe(JSON_64K.slice(0, 100));
    // A Range the server ignores (a handler that answers 200 whole) is still sent unencoded.
    const whole = await compressedServer(() => json(JSON_64K));
    const w = await raw(whole.port, '/', { 'Accept-Encoding': 'gzip', Range: 'bytes=0-9' });
    expect(w.headers['content-encoding']).toBeUndefined();
    expect(w.body.toString('utf8')).toBe(JSON_64K);
  });

  it('HEAD gets the head GET gets (coding, length, ETag, Vary) and no body', async () => {
    const { port } = await compressedServer(() => json(JSON_64K, { ETag: '"j"' }));
    const get = await raw(port, '/', { 'Accept-Encoding': 'br' });
    const head = await raw(port, '/', { 'Accept-Encoding': 'br' }, 'HEAD');
    expect(head.body.length).toBe(0);
    for (const f of ['content-encoding', 'content-length', 'etag', 'vary', 'content-type']) expect(head.headers[f], f).toBe(get.headers[f]);
  });

  it('leaves 204 and 304 bodies and heads alone but for Vary and the ETag the client stored on 304', async () => {
    const answers = [new Response(204, null, { headers: { 'Content-Type': 'application/json' } }), new Response(304, null, { headers: { 'Content-Type': 'application/json', ETag: '"e"' } })];
    let i = 0;
    const { port } = await compressedServer(() => answers[i++]!);
    const r204 = await raw(port, '/', { 'Accept-Encoding': 'gzip' });
    expect(r204.status).toBe(204);
    expect(r204.headers['content-encoding']).toBeUndefined();
    expect(r204.headers.vary).toBeUndefined();
    const r304 = await raw(port, '/', { 'Accept-Encoding': 'gzip', 'If-None-Match': 'W/"e"' });
    expect(r304.status).toBe(304);
    expect(r304.headers['content-encoding']).toBeUndefined();
    expect(r304.headers['content-length']).toBeUndefined();
    expect(r304.headers.etag).toBe('W/"e"');
    expect(r304.headers.vary).toBe('Accept-Encoding');
  });

  it('compresses a server-made answer whose body a tap left above the threshold, as sent', async () => {
    // A 500 text is short: below the threshold of 0 it is compressed, and arrives decodable.
    const { port } = await compressedServer(
      () => {
        throw new Error('boom');
      },
      { threshold: 0, types: () => true },
    );
    const r = await raw(port, '/', { 'Accept-Encoding': 'gzip' });
    expect(r.status).toBe(500);
    expect(r.headers['content-encoding']).toBe('gzip');
    expect(Number(r.headers['content-length'])).toBe(r.body.length);
    zlib.gunzipSync(r.body);
  });
});

describe('compression: streamed bodies', () => {
  it(`a body in memory above ${WHOLE_MAX} bytes goes through a zlib stream (chunked) and decodes whole`, async () => {
    const big = jsonOf(WHOLE_MAX + 4096);
    const { port } = await compressedServer(() => json(big));
    const r = await raw(port, '/', { 'Accept-Encoding': 'gzip' });
    expect(r.headers['content-encoding']).toBe('gzip');
    expect(r.headers['content-length']).toBeUndefined();
    expect(decode('gzip', r.body)).toBe(big);
  });

  it('a body of unknown length is compressed chunked and decodes whole', async () => {
    const parts = Array.from({ length: 50 }, (_, i) => `line ${i} ${'abc'.repeat(100)}\n`);
    const { port } = await compressedServer(() => {
      let i = 0;
      const body = new CallbackBody((dst) => {
        if (i >= parts.length) return 0;
        const b = Buffer.from(parts[i++]!);
        b.copy(dst);
        return Math.min(b.length, dst.length);
      });
      return new Response(200, body, { headers: { 'Content-Type': 'text/plain' } });
    });
    for (const coding of ['gzip', 'br']) {
      const r = await raw(port, '/', { 'Accept-Encoding': coding });
      expect(r.headers['content-encoding']).toBe(coding);
      expect(r.headers['content-length']).toBeUndefined();
      expect(r.headers['transfer-encoding']).toBe('chunked');
      expect(decode(coding, r.body)).toBe(parts.join(''));
    }
  });

  it('a streamed body of known length below the threshold is left alone; above it, loses its length', async () => {
    const { port } = await compressedServer(fileServer(siteDir()));
    const r = await raw(port, '/data.json', { 'Accept-Encoding': 'gzip' });
    expect(r.headers['content-encoding']).toBe('gzip');
    expect(r.headers['content-length']).toBeUndefined();
    expect(decode('gzip', r.body)).toBe(JSON_64K);
    const small = await raw(port, '/small.json', { 'Accept-Encoding': 'gzip' });
    expect(small.headers['content-encoding']).toBeUndefined();
    expect(small.headers['content-length']).toBe('2');
  });

  for (const coding of ['gzip', 'br'] as const) {
    it(`SSE events arrive one by one through ${coding}: each is decodable before the next is written`, async () => {
      const n = 5;
      const seen = Array.from({ length: n }, () => deferred());
      const { port } = await compressedServer((req) =>
        sseStream(
          async (stream) => {
            for (let i = 0; i < n; i++) {
              await stream.write(new SSEEvent(`event ${i}`));
              // The next event is written only once the client decoded this one.
              await seen[i]!.promise;
            }
          },
          { request: req },
        ),
      );
      const got: string[] = [];
      await within(
        new Promise<void>((resolve, reject) => {
          const req = http.get({ host: '127.0.0.1', port, path: '/', headers: { 'Accept-Encoding': coding }, agent: false }, (res) => {
            expect(res.headers['content-encoding']).toBe(coding);
            const dec = coding === 'gzip' ? zlib.createGunzip() : zlib.createBrotliDecompress();
            res.pipe(dec);
            let text = '';
            dec.on('data', (c: Buffer) => {
              text += c.toString('utf8');
              for (let i = got.length; i < n && text.includes(`data: event ${i}\n\n`); i = got.length) {
                got.push(`event ${i}`);
                seen[i]!.resolve();
              }
            });
            dec.on('end', resolve);
            dec.on('error', reject);
          });
          req.on('socket', (s) => destroyAfter(s));
          req.on('error', reject);
        }),
        5000,
        'every event, one by one',
      );
      expect(got).toEqual(Array.from({ length: n }, (_, i) => `event ${i}`));
    });
  }

  it("a stream handler's writes are compressed and flushed one by one", async () => {
    const n = 4;
    const seen = Array.from({ length: n }, () => deferred());
    const { port, errors } = await compressedStreamServer(async (stream) => {
      stream.setHeader('Content-Type', 'text/plain');
      for (let i = 0; i < n; i++) {
        await stream.write(`chunk ${i};`);
        await seen[i]!.promise;
      }
      await stream.closeWrite();
    });
    let text = '';
    await within(
      new Promise<void>((resolve, reject) => {
        const req = http.get({ host: '127.0.0.1', port, path: '/', headers: { 'Accept-Encoding': 'gzip' }, agent: false }, (res) => {
          expect(res.headers['content-encoding']).toBe('gzip');
          expect(res.headers.vary).toBe('Accept-Encoding');
          const dec = zlib.createGunzip();
          res.pipe(dec);
          let next = 0;
          dec.on('data', (c: Buffer) => {
            text += c.toString('utf8');
            while (next < n && text.includes(`chunk ${next};`)) seen[next++]!.resolve();
          });
          dec.on('end', resolve);
          dec.on('error', reject);
        });
        req.on('socket', (s) => destroyAfter(s));
        req.on('error', reject);
      }),
      5000,
      'every write, one by one',
    );
    expect(text).toBe('chunk 0;chunk 1;chunk 2;chunk 3;');
    expect(errors).toEqual([]);
  });

  it("a stream handler's whole body (closeWrite(body)) is compressed; below the threshold, or HEAD, it is not", async () => {
    const { port } = await compressedStreamServer(async (stream) => {
      stream.setHeader('Content-Type', 'application/json');
      await stream.closeWrite(stream.request.target === '/small' ? '{}' : JSON_64K);
    });
    const big = await raw(port, '/', { 'Accept-Encoding': 'br' });
    expect(big.headers['content-encoding']).toBe('br');
    expect(decode('br', big.body)).toBe(JSON_64K);
    const small = await raw(port, '/small', { 'Accept-Encoding': 'br' });
    expect(small.headers['content-encoding']).toBeUndefined();
    expect(small.body.toString()).toBe('{}');
    const head = await raw(port, '/', { 'Accept-Encoding': 'br' }, 'HEAD');
    expect(head.headers['content-encoding']).toBe('br');
    expect(head.headers['content-length']).toBeUndefined();
    expect(head.body.length).toBe(0);
  });
});

describe('compression: fetch handlers', () => {
  it('a web Response (whole, and a ReadableStream written chunk by chunk) is compressed', async () => {
    const { compressionKernel } = await import('./helpers.js');
    const kernel = await compressionKernel();
    const enc = new TextEncoder();
    const server = await kernel.serveFetch(
      (request) => {
        if (new URL(request.url).pathname === '/whole') return new globalThis.Response(JSON_64K, { headers: { 'Content-Type': 'application/json' } });
        const parts = [JSON_64K.slice(0, 30000), JSON_64K.slice(30000)];
        const stream = new ReadableStream<Uint8Array>({
          pull(c) {
            const p = parts.shift();
            if (p === undefined) c.close();
            else c.enqueue(enc.encode(p));
          },
        });
        return new globalThis.Response(stream, { headers: { 'Content-Type': 'application/json' } });
      },
      { host: '127.0.0.1', port: 0 },
    );
    try {
      for (const p of ['/whole', '/stream']) {
        const r = await raw(server.port, p, { 'Accept-Encoding': 'gzip' });
        expect(r.headers['content-encoding'], p).toBe('gzip');
        expect(decode('gzip', r.body), p).toBe(JSON_64K);
      }
    } finally {
      await server.forceClose();
    }
  });
});

describe('compression: kernel.inject', () => {
  it('an injected request gets the compressed bytes and head, in memory and streamed', async () => {
    const { compressionKernel } = await import('./helpers.js');
    const kernel = await compressionKernel();
    const handler = (req: import('../../../kernel/index.js').Request): Response =>
      req.target === '/stream' ? new Response(200, new CallbackBody(onceBody(JSON_64K)), { headers: { 'Content-Type': 'application/json' } }) : json(JSON_64K);
    for (const [url, coding] of [
      ['/', 'gzip'],
      ['/stream', 'br'],
    ] as const) {
      const res = await kernel.inject(handler, { url, headers: { 'Accept-Encoding': coding } });
      expect(res.headers.get('Content-Encoding'), url).toBe(coding);
      expect(res.headers.get('Vary'), url).toBe('Accept-Encoding');
      expect(decode(coding, Buffer.from(res.body as Uint8Array)), url).toBe(JSON_64K);
    }
  });
});

/** A read callback that hands out `text` once, in pieces as large as the reader asks. */
function onceBody(text: string): (dst: Uint8Array) => number {
  const bytes = Buffer.from(text);
  let at = 0;
  return (dst) => {
    const n = Math.min(dst.length, bytes.length - at);
    bytes.copy(dst, 0, at, at + n);
    at += n;
    return n;
  };
}

describe('encodeResponseBody', () => {
  /** Upper-cases each chunk; records how it was called. */
  class Upper implements BodyEncoder {
    calls: string[] = [];
    closed = 0;
    write(chunk: Uint8Array, flush: boolean): Promise<Uint8Array> {
      this.calls.push(`${Buffer.from(chunk).toString()}${flush ? '!' : ''}`);
      return Promise.resolve(Buffer.from(Buffer.from(chunk).toString().toUpperCase()));
    }
    end(): Promise<Uint8Array> {
      this.calls.push('end');
      return Promise.resolve(Buffer.from('.'));
    }
    close(): void {
      this.closed++;
    }
  }

  it('runs a request handler body of unknown length through the encoder, flushing each read', async () => {
    const { createKernel, serve } = await import('../../../kernel/index.js');
    const kernel = createKernel();
    const enc = new Upper();
    kernel.hooks.server.onResponseHead.tap('upper', (res) => {
      encodeResponseBody(res, enc);
    });
    await kernel.ready();
    class Two extends ChunkBody {
      private i = 0;
      private done = false;
      protected nextChunk(): Promise<Uint8Array | null> {
        return Promise.resolve(this.done || this.i >= 2 ? null : Buffer.from(`part${this.i++}`));
      }
      close(): void {
        this.done = true;
      }
      get closed(): boolean {
        return this.done;
      }
    }
    const server = await serve(() => new Response(200, new Two()), { kernel, host: '127.0.0.1', port: 0 });
    try {
      const r = await raw(server.port, '/');
      expect(r.body.toString()).toBe('PART0PART1.');
      expect(enc.calls).toEqual(['part0!', 'part1!', 'end']);
      expect(enc.closed).toBe(1);
    } finally {
      await server.forceClose();
      await kernel.close();
    }
  });
});
