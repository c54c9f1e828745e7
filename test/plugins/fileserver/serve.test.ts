/**
 * fileServer, serveFile and serveContent over real loopback connections (raw HTTP/1.1
 * requests, so every header is under the test's control): files, types, canonical
 * redirects, methods, HEAD, conditionals, ranges, options, stream handlers, and descriptors
 * closed on every path.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ArgumentError, Request, Response, streamHandler } from '../../../kernel/index.js';
import { FileBody, fileServer, serveContent, serveFile, type FileServerOptions } from '../../../plugins/fileserver/index.js';
import { exchange, rawClient, startServer, startStreamServer, waitFor, type ParsedResponse } from '../../helpers/server.js';
import { makeSite, openFds, type Site } from './fixture.js';

let site: Site;
beforeAll(() => {
  site = makeSite();
});
afterAll(() => site.remove());

function raw(method: string, target: string, headers: Record<string, string> = {}): string {
  let s = `${method} ${target} HTTP/1.1\r\nHost: x\r\n`;
  for (const [k, v] of Object.entries(headers)) s += `${k}: ${v}\r\n`;
  return s + '\r\n';
}

async function ask(port: number, method: string, target: string, headers: Record<string, string> = {}): Promise<ParsedResponse> {
  const { client, res } = await exchange(port, raw(method, target, headers), method);
  client.destroy();
  return res;
}

async function files(options: FileServerOptions = {}): Promise<number> {
  const { port } = await startServer(fileServer(site.root, options));
  return port;
}

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

describe('fileServer: files and types', () => {
  it.each([
    ['/', 'index.html', 'text/html; charset=utf-8'],
    ['/style.css', 'style.css', 'text/css; charset=utf-8'],
    ['/app.js', 'app.js', 'text/javascript; charset=utf-8'],
    ['/logo.png', 'logo.png', 'image/png'],
    ['/sub/', 'sub/index.html', 'text/html; charset=utf-8'],
    ['/sub/page.txt?v=3', 'sub/page.txt', 'text/plain; charset=utf-8'],
    ['/sniff-html', 'sniff-html', 'text/html; charset=utf-8'],
    ['/sniff-bin', 'sniff-bin', 'application/octet-stream'],
    ['/sniff-text', 'sniff-text', 'text/plain; charset=utf-8'],
    ['/with%20space.txt', 'with space.txt', 'text/plain; charset=utf-8'],
    ['/caf%C3%A9.txt', 'café.txt', 'text/plain; charset=utf-8'],
    ['/link-in.css', 'style.css', 'text/css; charset=utf-8'],
  ])('GET %s serves %s as %s', async (target, file, type) => {
    const port = await files();
    const res = await ask(port, 'GET', target);
    expect(res.status).toBe(200);
    expect(res.headers.get('Content-Type')).toBe(type);
    expect(res.body.equals(site.files[file]!)).toBe(true);
    expect(res.headers.get('Content-Length')).toBe(String(site.files[file]!.length));
    expect(res.headers.get('Accept-Ranges')).toBe('bytes');
    const mtime = fs.statSync(join(site.root, file)).mtimeMs;
    expect(res.headers.get('Last-Modified')).toBe(new Date(Math.floor(mtime / 1000) * 1000).toUTCString());
    expect(res.headers.has('ETag')).toBe(false); // no ETag unless asked for
  });

  it('a 3 MiB file is streamed whole and exact', async () => {
    const port = await files();
    const res = await ask(port, 'GET', '/big.bin');
    expect(res.status).toBe(200);
    expect(res.headers.get('Content-Length')).toBe(String(site.files['big.bin']!.length));
    expect(sha(res.body)).toBe(sha(site.files['big.bin']!));
  });

  it('the handler answers with a FileBody of exact length (streamed, not read whole)', async () => {
    const handler = fileServer(site.root);
    const res = await handler(new Request('GET', '/big.bin'));
    expect(res.body).toBeInstanceOf(FileBody);
    expect(res.contentLength).toBe(site.files['big.bin']!.length);
    const body = res.body as FileBody;
    const first = new Uint8Array(1000);
    expect(await body.read(first)).toBe(1000);
    expect(Buffer.from(first).equals(site.files['big.bin']!.subarray(0, 1000))).toBe(true);
    body.close();
    expect(body.closed).toBe(true);
  });

  it('an empty file is 200 with Content-Length 0', async () => {
    const port = await files();
    const res = await ask(port, 'GET', '/empty.txt');
    expect([res.status, res.headers.get('Content-Length'), res.body.length]).toEqual([200, '0', 0]);
  });

  it('missing files and directories without an index are 404', async () => {
    const port = await files();
    for (const t of ['/nope', '/nope/', '/noindex/', '/sub/nope.txt', '/style.css/x']) {
      expect((await ask(port, 'GET', t)).status, t).toBe(404);
    }
  });

  it('a FIFO, even through a symlink inside the root, is never opened for a blocking read', async () => {
    const port = await files();
    expect((await ask(port, 'GET', '/fifo-link')).status).toBe(404);
  });
});

describe('fileServer: canonical redirects', () => {
  it.each([
    ['/index.html', '/'],
    ['/sub', '/sub/'],
    ['/sub?x=1', '/sub/?x=1'],
    ['/sub/index.html', '/sub/'],
    ['/sub/index.html?q', '/sub/?q'],
    ['/style.css/', '/style.css'],
    ['/sub/page.txt/?a=b', '/sub/page.txt?a=b'],
  ])('%s → 301 %s', async (target, location) => {
    const port = await files();
    const res = await ask(port, 'GET', target);
    expect(res.status).toBe(301);
    expect(res.headers.get('Location')).toBe(location);
  });

  it('redirectCanonical: false serves them in place', async () => {
    const port = await files({ redirectCanonical: false });
    expect((await ask(port, 'GET', '/index.html')).body.equals(site.files['index.html']!)).toBe(true);
    expect((await ask(port, 'GET', '/sub')).body.equals(site.files['sub/index.html']!)).toBe(true);
    expect((await ask(port, 'GET', '/style.css/')).body.equals(site.files['style.css']!)).toBe(true);
  });

  it('indexFile picks another index', async () => {
    const port = await files({ indexFile: 'home.htm' });
    const res = await ask(port, 'GET', '/home/');
    expect(res.text).toBe('<p>home</p>');
    expect((await ask(port, 'GET', '/home/home.htm')).headers.get('Location')).toBe('/home/');
    expect((await ask(port, 'GET', '/')).status).toBe(404); // no home.htm at the root
  });
});

describe('fileServer: methods and HEAD', () => {
  it.each(['POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH'])('%s → 405 with Allow: GET, HEAD', async (method) => {
    const port = await files();
    const res = await ask(port, method, '/style.css');
    expect(res.status).toBe(405);
    expect(res.headers.get('Allow')).toBe('GET, HEAD');
  });

  it('HEAD gives the GET head without a body, for a big file too', async () => {
    const port = await files({ etag: 'weak_stat' });
    const get = await ask(port, 'GET', '/big.bin');
    const head = await ask(port, 'HEAD', '/big.bin');
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
    for (const h of ['Content-Length', 'Content-Type', 'ETag', 'Last-Modified', 'Accept-Ranges']) expect(head.headers.get(h), h).toBe(get.headers.get(h));
    expect((await ask(port, 'HEAD', '/nope')).status).toBe(404);
    expect((await ask(port, 'HEAD', '/sub')).status).toBe(301);
  });
});

describe('fileServer: ETag and Cache-Control options', () => {
  it('etag: \'weak_stat\' is W/"size-mtime" and changes when the file does', async () => {
    const p = join(site.root, 'changing.txt');
    fs.writeFileSync(p, 'one');
    fs.utimesSync(p, 1_700_000_000, 1_700_000_000);
    const port = await files({ etag: 'weak_stat' });
    const a = (await ask(port, 'GET', '/changing.txt')).headers.get('ETag')!;
    expect(a).toMatch(/^W\/"3-[0-9a-f]+"$/);
    fs.writeFileSync(p, 'three');
    fs.utimesSync(p, 1_700_000_100, 1_700_000_100);
    const b = (await ask(port, 'GET', '/changing.txt')).headers.get('ETag')!;
    expect(b).not.toBe(a);
    const r = await ask(port, 'GET', '/changing.txt', { 'If-None-Match': a });
    expect(r.status).toBe(200);
    expect(r.text).toBe('three');
    fs.rmSync(p);
  });

  it('etag: a function of (path, stat), and a fixed string', async () => {
    const seen: string[] = [];
    const port = await files({
      etag: (path, stat) => {
        seen.push(path);
        return `v-${stat.size}`;
      },
      cacheControl: 'public, max-age=60',
    });
    const res = await ask(port, 'GET', '/style.css');
    expect(res.headers.get('ETag')).toBe(`"v-${site.files['style.css']!.length}"`);
    expect(res.headers.get('Cache-Control')).toBe('public, max-age=60');
    expect(seen).toEqual([join(fs.realpathSync(site.root), 'style.css')]);
    const port2 = await files({ etag: 'W/"fixed"' });
    expect((await ask(port2, 'GET', '/app.js')).headers.get('ETag')).toBe('W/"fixed"');
  });

  it('wrong options and roots are ArgumentErrors', () => {
    expect(() => fileServer(join(site.base, 'nope'))).toThrow(ArgumentError);
    expect(() => fileServer(join(site.root, 'style.css'))).toThrow(/not an existing directory/);
    expect(() => fileServer('')).toThrow(ArgumentError);
    expect(() => fileServer(site.root, { indexFile: '../x' })).toThrow(ArgumentError);
    expect(() => fileServer(site.root, { etag: 42 as unknown as string })).toThrow(ArgumentError);
    expect(() => fileServer(site.root, { etag: 'has space' })).toThrow(ArgumentError);
    expect(() => fileServer(site.root, { cacheControl: 'a\r\nb' })).toThrow(ArgumentError);
    expect(() => fileServer(site.root, { cacheControl: 'no-cache\x01' })).toThrow(/U\+0001 in the value of header "Cache-Control"/);
    expect(() => fileServer(site.root, { cacheControl: 'no-cache\x7f' })).toThrow(ArgumentError);
    expect(() => fileServer(site.root, { spaFallback: '../index.html' })).toThrow(ArgumentError);
    expect(() => fileServer(site.root, { prefix: 'static' })).toThrow(ArgumentError);
  });
});

describe('fileServer: conditional requests', () => {
  const strong = { etag: (_p: string, st: fs.Stats): string => `s-${st.size}-${Math.floor(st.mtimeMs)}` };

  it('If-None-Match with the ETag → 304 without content headers; HEAD too', async () => {
    const port = await files({ etag: 'weak_stat', cacheControl: 'no-cache' });
    const first = await ask(port, 'GET', '/style.css');
    const tag = first.headers.get('ETag')!;
    for (const method of ['GET', 'HEAD']) {
      const res = await ask(port, method, '/style.css', { 'If-None-Match': tag });
      expect(res.status).toBe(304);
      expect(res.body.length).toBe(0);
      expect(res.headers.get('ETag')).toBe(tag);
      expect(res.headers.get('Cache-Control')).toBe('no-cache');
      expect(res.headers.has('Content-Type')).toBe(false);
      expect(res.headers.has('Content-Length')).toBe(false);
    }
    expect((await ask(port, 'GET', '/style.css', { 'If-None-Match': `"other", ${tag}` })).status).toBe(304);
    expect((await ask(port, 'GET', '/style.css', { 'If-None-Match': '"other"' })).status).toBe(200);
  });

  it('If-Modified-Since → 304 at or after Last-Modified, 200 before', async () => {
    const port = await files();
    const lm = (await ask(port, 'GET', '/app.js')).headers.get('Last-Modified')!;
    expect((await ask(port, 'GET', '/app.js', { 'If-Modified-Since': lm })).status).toBe(304);
    expect((await ask(port, 'GET', '/app.js', { 'If-Modified-Since': new Date(Date.parse(lm) + 3600_000).toUTCString() })).status).toBe(304);
    expect((await ask(port, 'GET', '/app.js', { 'If-Modified-Since': new Date(Date.parse(lm) - 1000).toUTCString() })).status).toBe(200);
    expect((await ask(port, 'GET', '/app.js', { 'If-Modified-Since': 'not a date' })).status).toBe(200);
  });

  it('If-Match and If-Unmodified-Since → 412 when they fail', async () => {
    const port = await files(strong);
    const ok = await ask(port, 'GET', '/app.js');
    const tag = ok.headers.get('ETag')!;
    const lm = ok.headers.get('Last-Modified')!;
    expect((await ask(port, 'GET', '/app.js', { 'If-Match': tag })).status).toBe(200);
    expect((await ask(port, 'GET', '/app.js', { 'If-Match': '"nope"' })).status).toBe(412);
    expect((await ask(port, 'GET', '/app.js', { 'If-Unmodified-Since': lm })).status).toBe(200);
    const old = new Date(Date.parse(lm) - 1000).toUTCString();
    const r = await ask(port, 'GET', '/app.js', { 'If-Unmodified-Since': old });
    expect(r.status).toBe(412);
    expect(r.body.length).toBe(0);
  });

  it('If-None-Match wins over If-Modified-Since', async () => {
    const port = await files(strong);
    const lm = (await ask(port, 'GET', '/app.js')).headers.get('Last-Modified')!;
    expect((await ask(port, 'GET', '/app.js', { 'If-None-Match': '"stale"', 'If-Modified-Since': lm })).status).toBe(200);
  });
});

describe('fileServer: ranges', () => {
  const digits = (): Buffer => site.files['digits.txt']!;
  it.each([
    ['bytes=0-9', 0, 9],
    ['bytes=10-', 10, 35],
    ['bytes=-5', 31, 35],
    ['bytes=30-1000', 30, 35],
    ['bytes=0-0', 0, 0],
  ])('%s → 206 %i-%i', async (range, start, end) => {
    const port = await files();
    const res = await ask(port, 'GET', '/digits.txt', { Range: range });
    expect(res.status).toBe(206);
    expect(res.headers.get('Content-Range')).toBe(`bytes ${start}-${end}/36`);
    expect(res.headers.get('Content-Length')).toBe(String(end - start + 1));
    expect(res.body.equals(digits().subarray(start, end + 1))).toBe(true);
  });

  it.each(['bytes=36-', 'bytes=100-200', 'bytes=-0'])('%s → 416 with Content-Range: bytes */36', async (range) => {
    const port = await files();
    const res = await ask(port, 'GET', '/digits.txt', { Range: range });
    expect(res.status).toBe(416);
    expect(res.headers.get('Content-Range')).toBe('bytes */36');
    expect(res.body.length).toBe(0);
  });

  it.each(['bytes=0-1,5-6', 'lines=1-2', 'bytes=5-2', 'bytes=x'])('%s is ignored: 200 with the whole content', async (range) => {
    const port = await files();
    const res = await ask(port, 'GET', '/digits.txt', { Range: range });
    expect(res.status).toBe(200);
    expect(res.body.equals(digits())).toBe(true);
    expect(res.headers.has('Content-Range')).toBe(false);
  });

  it('a range of the big file deep inside it', async () => {
    const port = await files();
    const big = site.files['big.bin']!;
    const res = await ask(port, 'GET', '/big.bin', { Range: 'bytes=2000000-2999999' });
    expect(res.status).toBe(206);
    expect(sha(res.body)).toBe(sha(big.subarray(2_000_000, 3_000_000)));
  });

  it('HEAD with a range gives the 206 head', async () => {
    const port = await files();
    const res = await ask(port, 'HEAD', '/digits.txt', { Range: 'bytes=1-3' });
    expect([res.status, res.headers.get('Content-Length'), res.headers.get('Content-Range'), res.body.length]).toEqual([206, '3', 'bytes 1-3/36', 0]);
  });

  it('If-Range: a current strong ETag or the exact date allows the range, anything else gets 200', async () => {
    const port = await files({ etag: () => 'strong1' });
    const ok = await ask(port, 'GET', '/digits.txt');
    const lm = ok.headers.get('Last-Modified')!;
    expect((await ask(port, 'GET', '/digits.txt', { Range: 'bytes=0-1', 'If-Range': '"strong1"' })).status).toBe(206);
    expect((await ask(port, 'GET', '/digits.txt', { Range: 'bytes=0-1', 'If-Range': '"old"' })).status).toBe(200);
    expect((await ask(port, 'GET', '/digits.txt', { Range: 'bytes=0-1', 'If-Range': lm })).status).toBe(206);
    expect((await ask(port, 'GET', '/digits.txt', { Range: 'bytes=0-1', 'If-Range': new Date(Date.parse(lm) - 1000).toUTCString() })).status).toBe(200);
    const weak = await files({ etag: 'weak_stat' });
    const tag = (await ask(weak, 'GET', '/digits.txt')).headers.get('ETag')!;
    expect((await ask(weak, 'GET', '/digits.txt', { Range: 'bytes=0-1', 'If-Range': tag })).status).toBe(200); // weak tags never validate a range
  });

  it('preconditions come before ranges: If-None-Match match with Range → 304', async () => {
    const port = await files({ etag: () => 't' });
    expect((await ask(port, 'GET', '/digits.txt', { Range: 'bytes=0-1', 'If-None-Match': '"t"' })).status).toBe(304);
  });
});

describe('fileServer: spaFallback and prefix', () => {
  it('a missing route-like path gets the fallback; a missing asset still 404', async () => {
    const port = await files({ spaFallback: 'index.html', etag: 'weak_stat' });
    for (const t of ['/app/users/42', '/settings', '/deep/path/', '/x?y=1']) {
      const res = await ask(port, 'GET', t);
      expect(res.status, t).toBe(200);
      expect(res.body.equals(site.files['index.html']!), t).toBe(true);
      expect(res.headers.get('Content-Type')).toBe('text/html; charset=utf-8');
    }
    for (const t of ['/app/main.js', '/missing.css', '/img/logo.svg']) expect((await ask(port, 'GET', t)).status, t).toBe(404);
    expect((await ask(port, 'GET', '/style.css')).body.equals(site.files['style.css']!)).toBe(true);
    expect((await ask(port, 'GET', '/sub')).status).toBe(301);
    const tag = (await ask(port, 'GET', '/route')).headers.get('ETag')!;
    expect((await ask(port, 'GET', '/another/route', { 'If-None-Match': tag })).status).toBe(304);
    expect((await ask(port, 'GET', '/%2e%2e/secret')).status).toBe(400); // unsafe paths are not "missing"
  });

  it('prefix maps /static/* under root and nothing else', async () => {
    const port = await files({ prefix: '/static/' });
    expect((await ask(port, 'GET', '/static/style.css')).body.equals(site.files['style.css']!)).toBe(true);
    expect((await ask(port, 'GET', '/static/sub/page.txt')).status).toBe(200);
    expect((await ask(port, 'GET', '/static/')).body.equals(site.files['index.html']!)).toBe(true);
    expect((await ask(port, 'GET', '/static')).headers.get('Location')).toBe('/static/');
    expect((await ask(port, 'GET', '/static/index.html')).headers.get('Location')).toBe('/static/');
    expect((await ask(port, 'GET', '/style.css')).status).toBe(404);
    expect((await ask(port, 'GET', '/staticstyle.css')).status).toBe(404);
  });
});

describe('fileServer under a stream handler', () => {
  it('streamHandler(fileServer(root)): files, HEAD, 304, ranges', async () => {
    const { port } = await startStreamServer(streamHandler(fileServer(site.root, { etag: 'weak_stat' })));
    const big = await ask(port, 'GET', '/big.bin');
    expect(sha(big.body)).toBe(sha(site.files['big.bin']!));
    const head = await ask(port, 'HEAD', '/big.bin');
    expect([head.status, head.headers.get('Content-Length'), head.body.length]).toEqual([200, String(site.files['big.bin']!.length), 0]);
    const tag = big.headers.get('ETag')!;
    expect((await ask(port, 'GET', '/big.bin', { 'If-None-Match': tag })).status).toBe(304);
    const part = await ask(port, 'GET', '/digits.txt', { Range: 'bytes=-3' });
    expect([part.status, part.text]).toEqual([206, 'xyz']);
  });
});

describe('serveFile', () => {
  it('serves a file chosen by the handler, whatever the URL', async () => {
    const file = join(site.root, 'sub', 'page.txt');
    const { port } = await startServer((req) => (req.target.startsWith('/download') ? serveFile(req, file, { cacheControl: 'no-store' }) : new Response(404)));
    const res = await ask(port, 'GET', '/download');
    expect([res.status, res.text, res.headers.get('Cache-Control')]).toEqual([200, 'sub page\n', 'no-store']);
    expect((await ask(port, 'GET', '/download/')).headers.get('Location')).toBe('/download');
    expect((await ask(port, 'POST', '/download')).status).toBe(405);
  });

  it('400 for an unsafe path, 404 for a missing one, index and redirect for a directory', async () => {
    const { port } = await startServer((req) => {
      const u = new URL(req.target, 'http://x');
      return serveFile(req, u.searchParams.get('p')!);
    });
    const q = (p: string): string => `/d?p=${encodeURIComponent(p)}`;
    expect((await ask(port, 'GET', q(`${site.root}/../secret.txt`))).status).toBe(400);
    expect((await ask(port, 'GET', q(`${site.root}/sub\0`))).status).toBe(400);
    expect((await ask(port, 'GET', q(`${site.root}/nope`))).status).toBe(404);
    expect((await ask(port, 'GET', q(`${site.root}/sub`))).headers.get('Location')).toBe('/d/?p=' + encodeURIComponent(`${site.root}/sub`));
    const dir = await startServer((req) => serveFile(req, join(site.root, 'sub')));
    expect((await ask(dir.port, 'GET', '/anything/')).text).toBe('<html><body>sub</body></html>');
  });

  it('a Location never becomes protocol-relative', async () => {
    const { port } = await startServer((req) => serveFile(req, join(site.root, 'sub')));
    expect((await ask(port, 'GET', '//evil.example/sub')).headers.get('Location')).toBe('/evil.example/sub/');
  });
});

describe('serveContent', () => {
  it('bytes and strings: type by name, sniffed without one, the type option wins', async () => {
    const { port } = await startServer((req) => {
      switch (req.target) {
        case '/named':
          return serveContent(req, Buffer.from('{"a":1}'), { name: 'data.json' });
        case '/sniffed':
          return serveContent(req, '<!DOCTYPE html><p>hi');
        case '/typed':
          return serveContent(req, 'x', { name: 'a.html', contentType: 'text/x-custom' });
        case '/header':
          return serveContent(req, 'x', { name: 'a.html', headers: { 'Content-Type': 'text/x-header', 'X-Extra': '1' } });
        default:
          return new Response(404);
      }
    });
    expect((await ask(port, 'GET', '/named')).headers.get('Content-Type')).toBe('application/json; charset=utf-8');
    const s = await ask(port, 'GET', '/sniffed');
    expect([s.headers.get('Content-Type'), s.text]).toEqual(['text/html; charset=utf-8', '<!DOCTYPE html><p>hi']);
    expect((await ask(port, 'GET', '/typed')).headers.get('Content-Type')).toBe('text/x-custom');
    const h = await ask(port, 'GET', '/header');
    expect([h.headers.get('Content-Type'), h.headers.get('X-Extra')]).toEqual(['text/x-header', '1']);
  });

  it('modtime and etag drive 304/412; allowRanges: false ignores Range', async () => {
    const modtime = new Date(Date.UTC(2020, 0, 1, 12, 0, 0, 500));
    const { port } = await startServer((req) => serveContent(req, 'abcdefghij', { name: 'x.txt', modtime, etag: 'v9', allowRanges: !req.target.includes('norange') }));
    const r = await ask(port, 'GET', '/');
    expect([r.headers.get('Last-Modified'), r.headers.get('ETag')]).toEqual(['Wed, 01 Jan 2020 12:00:00 GMT', '"v9"']);
    expect((await ask(port, 'GET', '/', { 'If-None-Match': '"v9"' })).status).toBe(304);
    expect((await ask(port, 'GET', '/', { 'If-Modified-Since': 'Wed, 01 Jan 2020 12:00:00 GMT' })).status).toBe(304);
    expect((await ask(port, 'PUT', '/', { 'If-Match': '"v8"' })).status).toBe(412);
    expect((await ask(port, 'PUT', '/', { 'If-None-Match': '*' })).status).toBe(412);
    expect((await ask(port, 'GET', '/', { Range: 'bytes=2-3' })).text).toBe('cd');
    const nr = await ask(port, 'GET', '/norange', { Range: 'bytes=2-3' });
    expect([nr.status, nr.text, nr.headers.has('Accept-Ranges')]).toEqual([200, 'abcdefghij', false]);
  });

  it.each([
    ['CR LF', 'text/html\r\nX-Injected: 1', /U\+000D in the value of header "Content-Type"/],
    ['NUL', 'text/plain\0', /U\+0000/],
    ['a CTL', 'text/plain\x0b', /U\+000B/],
  ])('a contentType with %s is an ArgumentError when called, not a broken response later', async (_what, contentType, message) => {
    const req = new Request('GET', '/');
    await expect(serveContent(req, 'x', { contentType })).rejects.toThrow(ArgumentError);
    await expect(serveContent(req, 'x', { contentType })).rejects.toThrow(message);
  });

  it('an ETag given in headers is the validator', async () => {
    const { port } = await startServer((req) => serveContent(req, 'x', { headers: { ETag: '"h1"' } }));
    expect((await ask(port, 'GET', '/', { 'If-None-Match': '"h1"' })).status).toBe(304);
  });

  it('a FileHandle is streamed (ranges too) and closed afterwards', async () => {
    const before = openFds();
    const { port } = await startServer(async (req) => serveContent(req, await open(join(site.root, 'big.bin')), { name: 'big.bin' }));
    const res = await ask(port, 'GET', '/');
    expect(res.headers.get('Content-Type')).toBe('application/octet-stream');
    expect(sha(res.body)).toBe(sha(site.files['big.bin']!));
    const part = await ask(port, 'GET', '/', { Range: 'bytes=100-199' });
    expect(part.body.equals(site.files['big.bin']!.subarray(100, 200))).toBe(true);
    await ask(port, 'HEAD', '/');
    await ask(port, 'GET', '/', { Range: 'bytes=99999999-' });
    await waitFor(() => openFds() <= before + 1, 3000, 'file handles closed');
  });

  it('wrong arguments are ArgumentErrors', async () => {
    const req = new Request('GET', '/');
    await expect(serveContent(req, 42 as unknown as string)).rejects.toThrow(ArgumentError);
    await expect(serveContent(req, 'x', { modtime: 'yesterday' as unknown as Date })).rejects.toThrow(ArgumentError);
    await expect(serveContent(req, 'x', { size: -1 })).rejects.toThrow(ArgumentError);
    await expect(serveContent(req, 'x', { etag: 'a"b' })).rejects.toThrow(ArgumentError);
    await expect(serveContent({} as Request, 'x')).rejects.toThrow(ArgumentError);
    await expect(serveFile(req, 5 as unknown as string)).rejects.toThrow(ArgumentError);
  });
});

describe('file descriptors', () => {
  it('every answer path closes what it opened', async () => {
    const port = await files({ etag: 'weak_stat', spaFallback: 'index.html' });
    const tag = (await ask(port, 'GET', '/style.css')).headers.get('ETag')!;
    const before = openFds();
    const cases: [string, string, Record<string, string>][] = [
      ['GET', '/big.bin', {}],
      ['HEAD', '/big.bin', {}],
      ['GET', '/style.css', { 'If-None-Match': tag }],
      ['GET', '/style.css', { 'If-Match': '"x"' }],
      ['GET', '/digits.txt', { Range: 'bytes=99-' }],
      ['GET', '/digits.txt', { Range: 'bytes=1-2' }],
      ['GET', '/sub', {}],
      ['GET', '/index.html', {}],
      ['GET', '/noindex/', {}],
      ['GET', '/link-out.txt', {}],
      ['GET', '/fifo-link', {}],
      ['GET', '/spa/route', {}],
      ['GET', '/empty.txt', {}],
    ];
    for (let round = 0; round < 3; round++) for (const [m, t, h] of cases) await ask(port, m, t, h);
    await waitFor(() => openFds() <= before + 2, 3000, `descriptors back to ${before} (now ${openFds()})`);
  });

  it('a client that disconnects mid-file does not leak the descriptor', async () => {
    const port = await files();
    const before = openFds();
    for (let i = 0; i < 5; i++) {
      const { client } = await exchange(port, raw('GET', '/digits.txt'));
      client.destroy();
      const c2 = await rawClient(port);
      await c2.write(raw('GET', '/big.bin'));
      await waitFor(() => c2.received.length > 0, 3000, 'first bytes');
      c2.destroy();
    }
    await waitFor(() => openFds() <= before + 2, 5000, `descriptors back to ${before} (now ${openFds()})`);
  });
});
