/**
 * The fileserver's precompressed files: `file.br` / `file.zst` / `file.gz` served when they
 * exist and the client takes the coding, with the original's type, Vary, and the variant's
 * own ETag; curl decodes them.
 */
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { createKernel } from '../../../kernel/index.js';
import { compression, fileServer, fileserver } from '../../../plugins/index.js';
import { closeKernelAfter } from '../../helpers/cleanup.js';
import { curlEnv, runCurl, startServer } from '../../helpers/server.js';
import { compressedServer, jsonOf, raw, siteDir } from './helpers.js';

const DATA = jsonOf(64 * 1024);

/** A site whose data.json has .br and .gz variants (marked, so the test can tell which was served). */
function site(): string {
  const dir = siteDir();
  fs.writeFileSync(path.join(dir, 'data.json.br'), zlib.brotliCompressSync(DATA));
  fs.writeFileSync(path.join(dir, 'data.json.gz'), zlib.gzipSync(DATA));
  return dir;
}

describe('fileserver precompressed', () => {
  it.each([
    ['gzip, deflate, br', 'br'],
    ['gzip', 'gzip'],
    ['br;q=0.5, gzip', 'gzip'],
    ['zstd, gzip;q=0.1', 'gzip'],
  ])('Accept-Encoding %j is served the %s file, typed as the original, with Vary and its own ETag', async (ae, coding) => {
    const dir = site();
    const { port } = await startServer(fileServer(dir, { precompressed: true, etag: 'weak_stat' }));
    const r = await raw(port, '/data.json', { 'Accept-Encoding': ae });
    expect(r.status).toBe(200);
    expect(r.headers['content-encoding']).toBe(coding);
    expect(r.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(r.headers.vary).toBe('Accept-Encoding');
    const file = path.join(dir, `data.json.${coding === 'br' ? 'br' : 'gz'}`);
    expect(Number(r.headers['content-length'])).toBe(fs.statSync(file).size);
    expect(r.body.equals(fs.readFileSync(file))).toBe(true);
    const plain = await raw(port, '/data.json');
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers.vary).toBe('Accept-Encoding');
    expect(plain.body.toString()).toBe(DATA);
    expect(r.headers.etag).not.toBe(plain.headers.etag);
    // The variant's tag validates the variant: 304 with it, 200 with the original's.
    const again = await raw(port, '/data.json', { 'Accept-Encoding': ae, 'If-None-Match': r.headers.etag! });
    expect(again.status).toBe(304);
    expect(again.headers.etag).toBe(r.headers.etag);
    expect(again.headers.vary).toBe('Accept-Encoding');
    expect((await raw(port, '/data.json', { 'Accept-Encoding': ae, 'If-None-Match': plain.headers.etag! })).status).toBe(200);
  });

  it('falls back to the next coding the client takes when a variant is missing, and to the original', async () => {
    const dir = siteDir();
    fs.writeFileSync(path.join(dir, 'data.json.gz'), zlib.gzipSync(DATA));
    const { port } = await startServer(fileServer(dir, { precompressed: ['br', 'gzip'] }));
    expect((await raw(port, '/data.json', { 'Accept-Encoding': 'br, gzip' })).headers['content-encoding']).toBe('gzip');
    expect((await raw(port, '/data.json', { 'Accept-Encoding': 'br' })).headers['content-encoding']).toBeUndefined();
    expect((await raw(port, '/small.json', { 'Accept-Encoding': 'br, gzip' })).headers['content-encoding']).toBeUndefined();
  });

  it('a Range request gets the original; a variant that is a directory is not served; off by default', async () => {
    const dir = site();
    fs.mkdirSync(path.join(dir, 'page.html.gz'));
    const { port } = await startServer(fileServer(dir, { precompressed: true }));
    const r = await raw(port, '/data.json', { 'Accept-Encoding': 'gzip', Range: 'bytes=0-9' });
    expect(r.status).toBe(206);
    expect(r.headers['content-encoding']).toBeUndefined();
    expect(r.body.toString()).toBe(DATA.slice(0, 10));
    expect((await raw(port, '/page.html', { 'Accept-Encoding': 'gzip' })).headers['content-encoding']).toBeUndefined();
    const off = await startServer(fileServer(dir));
    const o = await raw(off.port, '/data.json', { 'Accept-Encoding': 'gzip' });
    expect(o.headers['content-encoding']).toBeUndefined();
    expect(o.headers.vary).toBeUndefined();
  });

  it('HEAD gets the variant head without a body; the compression plugin leaves a variant alone and compresses the rest', async () => {
    const dir = site();
    const both = closeKernelAfter(
      await createKernel()
        .register(fileserver, { root: dir, precompressed: ['gzip'] })
        .register(compression)
        .ready(),
    );
    const { port } = await startServer(
      () => {
        throw new Error('not a file');
      },
      { kernel: both },
    );
    const head = await raw(port, '/data.json', { 'Accept-Encoding': 'gzip' }, 'HEAD');
    expect(head.headers['content-encoding']).toBe('gzip');
    expect(Number(head.headers['content-length'])).toBe(fs.statSync(path.join(dir, 'data.json.gz')).size);
    expect(head.body.length).toBe(0);
    const get = await raw(port, '/data.json', { 'Accept-Encoding': 'gzip' });
    expect(get.body.equals(fs.readFileSync(path.join(dir, 'data.json.gz')))).toBe(true);
    expect(get.headers.vary).toBe('Accept-Encoding');
    // page.html has no variant: the plugin compresses it on the fly.
    const page = await raw(port, '/page.html', { 'Accept-Encoding': 'br' });
    expect(page.headers['content-encoding']).toBe('br');
    expect(zlib.brotliDecompressSync(page.body).toString()).toBe(fs.readFileSync(path.join(dir, 'page.html'), 'utf8'));
  });

  it('curl --compressed decodes the precompressed files and the on-the-fly ones alike', async () => {
    const dir = site();
    const { port } = await compressedServer(fileServer(dir, { precompressed: true }));
    for (const [p, body] of [
      ['/data.json', DATA],
      ['/page.html', fs.readFileSync(path.join(dir, 'page.html'), 'utf8')],
    ] as const) {
      const headers = path.join(dir, 'headers.txt');
      const r = await runCurl(['--compressed', '-D', headers, `http://127.0.0.1:${port}${p}`], curlEnv());
      expect(r.code, r.stderr).toBe(0);
      expect(fs.readFileSync(headers, 'latin1')).toMatch(/content-encoding: br/i);
      expect(r.stdout.toString()).toBe(body);
    }
  });
});
