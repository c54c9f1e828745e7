/**
 * Compression bombs from raw `node:net` servers on loopback, made with node:zlib here (gzip,
 * deflate, brotli of zeros): the default bounds stop each after about a MiB of decoding with a
 * `DecompressionLimitError` that says which bound tripped; ordinary compressible text passes.
 */
import { randomBytes } from 'node:crypto';
import zlib from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import { ResponseTooLargeError } from '../../../kernel/index.js';
import { DecompressionLimitError, DEFAULT_MAX_DECOMPRESSED_BYTES, DEFAULT_MAX_DECOMPRESSION_RATIO, RATIO_GRACE_BYTES } from '../../../plugins/index.js';
import { rawServer, readRequests } from '../../helpers/client.js';
import { makeClient, within } from '../../helpers/redirects.js';

const MiB = 1024 * 1024;
const zeros = Buffer.alloc(64 * MiB);
const bombs: Record<'gzip' | 'deflate' | 'br', Buffer> = { gzip: Buffer.alloc(0), deflate: Buffer.alloc(0), br: Buffer.alloc(0) };

beforeAll(() => {
  bombs.gzip = zlib.gzipSync(zeros, { level: 9 });
  bombs.deflate = zlib.deflateSync(zeros, { level: 9 });
  bombs.br = zlib.brotliCompressSync(zeros, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 5 } });
});

/** Answers every request with `body` under `Content-Encoding: coding`; `closed(n)` resolves when connection n closes. */
async function encodedServer(coding: string, body: Buffer): Promise<Awaited<ReturnType<typeof rawServer>>> {
  return rawServer((s) => readRequests(s, () => s.write(Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\nContent-Encoding: ${coding}\r\nContent-Length: ${body.length}\r\n\r\n`), body]))));
}

describe('decompression: bombs against the default bounds', () => {
  it('the defaults: 256 MiB decoded, 200 decoded bytes per compressed byte after the first MiB', () => {
    expect(DEFAULT_MAX_DECOMPRESSED_BYTES).toBe(256 * MiB);
    expect(DEFAULT_MAX_DECOMPRESSION_RATIO).toBe(200);
    expect(RATIO_GRACE_BYTES).toBe(MiB);
  });

  for (const coding of ['gzip', 'deflate', 'br'] as const) {
    it(`a ${coding} bomb (64 MiB of zeros) stops on the ratio after about a MiB`, async () => {
      const srv = await encodedServer(coding, bombs[coding]);
      const client = await makeClient();
      const started = performance.now();
      const err = await within(
        client.get(`${srv.origin}/`).then(
          () => null,
          (e: unknown) => e,
        ),
        10_000,
        'the bomb to be stopped',
      );
      const elapsed = performance.now() - started;
      expect(err).toBeInstanceOf(DecompressionLimitError);
      const e = err as DecompressionLimitError;
      expect(e.bound).toBe('ratio');
      expect(e.limit).toBe(200);
      expect(e.decoded).toBeGreaterThan(RATIO_GRACE_BYTES);
      expect(e.decoded).toBeLessThan(2 * MiB);
      expect(e.decoded).toBeGreaterThan(200 * e.compressed);
      expect(e.message).toContain('maxDecompressionRatio');
      // Not the 64 MiB behind it: decoding stopped at the bound.
      expect(elapsed).toBeLessThan(2000);
    });
  }

  it('ordinary text that compresses about 20:1 passes the ratio, well past the first MiB', async () => {
    const lines: string[] = [];
    let n = 0;
    for (let i = 0; n < 4 * MiB; i++) {
      const l = `{"id":${i},"name":"item ${i}","tag":"${randomBytes(2).toString('hex')}","status":"active","tags":["a","b","c"]}\n`;
      lines.push(l);
      n += l.length;
    }
    const text = Buffer.from(lines.join(''));
    const gz = zlib.gzipSync(text);
    expect(text.length / gz.length).toBeGreaterThan(5);
    const srv = await encodedServer('gzip', gz);
    const client = await makeClient();
    const res = await client.get(`${srv.origin}/`);
    expect(Buffer.from(res.body as Uint8Array).equals(text)).toBe(true);
  });

  it('maxDecompressionRatio: 0 lifts the ratio: the size bound trips, saying so; a buffered call meets maxResponseBytes first', async () => {
    const srv = await encodedServer('gzip', bombs.gzip);
    const client = await makeClient();
    const size = (await client.get(`${srv.origin}/`, { maxDecompressionRatio: 0, maxDecompressedBytes: 4 * MiB }).catch((e: unknown) => e)) as DecompressionLimitError;
    expect(size).toBeInstanceOf(DecompressionLimitError);
    expect(size.bound).toBe('size');
    expect(size.limit).toBe(4 * MiB);
    expect(size.message).toContain('maxDecompressedBytes');
    const big = (await client.get(`${srv.origin}/`, { maxDecompressionRatio: 0, maxResponseBytes: 8 * MiB }).catch((e: unknown) => e)) as ResponseTooLargeError;
    expect(big).toBeInstanceOf(ResponseTooLargeError);
    expect(big.limit).toBe(8 * MiB);
    expect(big.message).toContain('responseStream');
    // Both bounds lifted: the whole 64 MiB.
    const all = await client.get(`${srv.origin}/`, { maxDecompressionRatio: 0, maxResponseBytes: 0 });
    expect((all.body as Uint8Array).length).toBe(64 * MiB);
  });

  it('a bad maxDecompressionRatio is an ArgumentError', async () => {
    const client = await makeClient();
    await expect(client.get('http://127.0.0.1:1/', { maxDecompressionRatio: -1 })).rejects.toThrow(/maxDecompressionRatio must be a number >= 0/);
    await expect(client.get('http://127.0.0.1:1/', { maxDecompressionRatio: Number.NaN })).rejects.toThrow(/maxDecompressionRatio/);
  });
});
