/**
 * `switchyard serve`, run as the real binary, checked with curl (a client nobody here wrote):
 * files, index, ETag and 304, ranges, the access log, --spa, --cors, --tls-self-signed with
 * --cert-out, dotfiles (--dotfiles), and a graceful stop on SIGINT.
 */
import { execFile } from 'node:child_process';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { cleanEnv } from '../helpers/peers.js';
import { runMain, startCli, tempDir, type Running } from './helpers.js';

const run = promisify(execFile);

interface Curl {
  status: number;
  headers: Record<string, string>;
  body: string;
  version: string;
}

/** curl: the head (`-D -`, written before the body) split from the body and the HTTP version (`-w`). */
async function curl(args: string[]): Promise<Curl> {
  const { stdout } = await run('/usr/bin/curl', ['-s', '-S', '-D', '-', '-w', '\n%{http_version}', ...args], { env: cleanEnv(), encoding: 'utf8' });
  const split = stdout.indexOf('\r\n\r\n');
  const lines = stdout.slice(0, split).split('\r\n');
  const rest = stdout.slice(split + 4);
  const status = Number(/^HTTP\/[\d.]+ (\d{3})/.exec(lines[0]!)![1]);
  const headers: Record<string, string> = {};
  for (const l of lines.slice(1)) {
    const i = l.indexOf(':');
    headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
  }
  const nl = rest.lastIndexOf('\n');
  return { status, headers, body: rest.slice(0, nl), version: rest.slice(nl + 1) };
}

async function site(): Promise<string> {
  const dir = await tempDir();
  await writeFile(join(dir, 'index.html'), '<!doctype html><title>home</title>\n');
  await writeFile(join(dir, 'hello.txt'), 'hello, files\n');
  await mkdir(join(dir, 'docs'));
  await writeFile(join(dir, 'docs', 'index.html'), '<p>docs</p>\n');
  return dir;
}

async function started(c: Running): Promise<string> {
  const m = await c.waitLine(/^switchyard serve: .* at (https?:\/\/[^ ]+\/) \((.*)\)$/);
  return m[1]!;
}

describe('switchyard serve', () => {
  it('serves files with ETags, 304s and ranges, logs each request, and stops on SIGINT', async () => {
    const dir = await site();
    const c = startCli(['serve', dir, '--port', '0']);
    const url = await started(c);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    expect(c.stdout()).toContain(`switchyard serve: ${dir} at ${url} (HTTP/1.1, h2c)`);

    // h2c on the same port (prior knowledge), and HTTP/1.1.
    const h2 = await curl(['--http2-prior-knowledge', `${url}hello.txt`]);
    expect(h2.version).toBe('2');
    expect(h2.body).toBe('hello, files\n');

    const a = await curl([`${url}hello.txt`]);
    expect(a.version).toBe('1.1');
    expect(a.status).toBe(200);
    expect(a.body).toBe('hello, files\n');
    expect(a.headers['content-type']).toMatch(/^text\/plain/);
    expect(a.headers.etag).toMatch(/^W\/"/);
    expect(a.headers['accept-ranges']).toBe('bytes');

    const b = await curl([`${url}hello.txt`, '-H', `If-None-Match: ${a.headers.etag}`]);
    expect(b.status).toBe(304);
    const r = await curl([`${url}hello.txt`, '-H', 'Range: bytes=0-4']);
    expect(r.status).toBe(206);
    expect(r.body).toBe('hello');
    expect(r.headers['content-range']).toBe('bytes 0-4/13');
    const i = await curl([`${url}`]);
    expect(i.body).toBe('<!doctype html><title>home</title>\n');
    const d = await curl([`${url}docs`]);
    expect(d.status).toBe(301);
    expect(d.headers.location).toBe('/docs/');
    const n = await curl([`${url}missing.txt`]);
    expect(n.status).toBe(404);

    await c.waitLine(/ GET \/missing\.txt 404 /);
    expect(c.stdout()).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z GET \/hello\.txt 200 13 [\d.]+ms$/m);
    expect(c.stdout()).toMatch(/ GET \/hello\.txt 304 /);
    expect(c.stdout()).toMatch(/ GET \/hello\.txt 206 /);

    c.child.kill('SIGINT');
    expect(await c.exited).toBe(0);
    expect(c.stdout()).toMatch(/switchyard serve: closing\n$/);
  });

  it('--health-path answers 200, then 503 during --drain-delay after SIGTERM while files are still served; then it exits 0', async () => {
    const dir = await site();
    const c = startCli(['serve', dir, '--port', '0', '--health-path', '/healthz', '--drain-delay', '1500', '-q']);
    const url = await started(c);
    const ok = await curl([`${url}healthz`]);
    expect(ok.status).toBe(200);
    expect(ok.body).toBe('ok\n');
    c.child.kill('SIGTERM');
    await c.waitLine(/^switchyard serve: closing$/);
    const draining = await curl([`${url}healthz`]);
    expect(draining.status).toBe(503);
    const file = await curl([`${url}hello.txt`]);
    expect(file.body).toBe('hello, files\n');
    expect(await c.exited).toBe(0);
  });

  it('--spa answers client-side routes with the app page; --cors answers preflights; -q logs nothing', async () => {
    const dir = await site();
    const c = startCli(['serve', dir, '--port', '0', '--spa', 'index.html', '--cors', '-q']);
    const url = await started(c);
    const route = await curl([`${url}app/settings`]);
    expect(route.status).toBe(200);
    expect(route.body).toBe('<!doctype html><title>home</title>\n');
    expect(route.headers['access-control-allow-origin']).toBe('*');
    const asset = await curl([`${url}app.js`]);
    expect(asset.status).toBe(404);
    const pre = await curl(['-X', 'OPTIONS', `${url}hello.txt`, '-H', 'Origin: http://example.test', '-H', 'Access-Control-Request-Method: GET', '-H', 'Access-Control-Request-Headers: range']);
    expect(pre.status).toBe(204);
    expect(pre.headers['access-control-allow-origin']).toBe('*');
    expect(pre.headers['access-control-allow-headers']).toBe('range');
    expect(pre.headers['access-control-allow-methods']).toBe('GET, HEAD, OPTIONS');
    c.child.kill('SIGINT');
    expect(await c.exited).toBe(0);
    expect(c.stdout()).not.toMatch(/ GET /);
  });

  it('--tls-self-signed serves HTTPS with a fresh certificate that --cert-out saves for clients', async () => {
    const dir = await site();
    const cert = join(dir, '..', `${Date.now()}-cert.pem`);
    const c = startCli(['serve', dir, '--port', '0', '--tls-self-signed', '--cert-out', cert]);
    const m = await c.waitLine(/^switchyard serve: .* at (https:\/\/127\.0\.0\.1:(\d+)\/) \((.*)\)$/);
    await c.waitLine(/^certificate SHA-256 ([0-9A-F]{2}:){31}[0-9A-F]{2}, saved to /);
    const a = await curl(['--cacert', cert, `https://localhost:${m[2]}/hello.txt`]);
    expect(a.status).toBe(200);
    expect(a.body).toBe('hello, files\n');
    // curl offers h2 by ALPN and gets it, as the banner says.
    expect(m[3]).toBe('HTTP/1.1, HTTP/2');
    expect(a.version).toBe('2');
    c.child.kill('SIGINT');
    expect(await c.exited).toBe(0);
    await run('/bin/rm', ['-f', cert]);
  });
});

describe('switchyard serve: directory listings', () => {
  it('lists a directory without index.html: names escaped, links percent-encoded and working, no dotfiles, nothing outside the root', async () => {
    const dir = await site();
    const outside = await tempDir();
    await writeFile(join(outside, 'private.txt'), 'not yours\n');
    const files = join(dir, 'files');
    await mkdir(join(files, 'sub dir'), { recursive: true });
    await mkdir(join(files, '.hidden'));
    await writeFile(join(files, '.hidden', 'in.txt'), 'x');
    await writeFile(join(files, '.secret'), 'x');
    await writeFile(join(files, 'a&b <x>.txt'), 'amp\n');
    await writeFile(join(files, 'q?#%.txt'), 'query-like\n');
    await writeFile(join(files, `"quote'.txt`), 'quotes\n');
    await writeFile(join(files, 'sub dir', 'deep.txt'), 'deep\n');
    await symlink(outside, join(files, 'escape'));
    const c = startCli(['serve', dir, '--port', '0']);
    const url = await started(c);

    const l = await curl([`${url}files/`]);
    expect(l.status).toBe(200);
    expect(l.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(l.headers['content-security-policy']).toBe("default-src 'none'");
    expect(l.body).toContain('<title>Index of /files/</title>');
    const links = [...l.body.matchAll(/<li><a href="([^"]*)">([^<]*)<\/a><\/li>/g)].map((m) => [m[1], m[2]]);
    expect(links).toEqual([
      ['../', '../'],
      ['escape/', 'escape/'],
      ['sub%20dir/', 'sub dir/'],
      ["%22quote'.txt", '&#34;quote&#39;.txt'],
      ['a%26b%20%3Cx%3E.txt', 'a&#38;b &#60;x&#62;.txt'],
      ['q%3F%23%25.txt', 'q?#%.txt'],
    ]);
    expect(l.body).not.toMatch(/secret|hidden/);
    // The links lead to the files.
    for (const [href, body] of [
      ['a%26b%20%3Cx%3E.txt', 'amp'],
      ['q%3F%23%25.txt', 'query-like'],
      ["%22quote'.txt", 'quotes'],
      ['sub%20dir/', '<title>Index of /files/sub dir/</title>'],
    ] as const) {
      const r = await curl([`${url}files/${href}`]);
      expect([href, r.status, r.body]).toEqual([href, 200, expect.stringContaining(body)]);
    }
    // Not listed: dot-directories (also encoded), a link out of the root, a directory without its slash (redirected).
    for (const [path, status] of [
      ['files/.hidden/', 404],
      ['files/%2ehidden/', 404],
      ['files/escape/', 404],
      ['files', 301],
    ] as const) {
      const r = await curl([`${url}${path}`]);
      expect([path, r.status, r.body]).toEqual([path, status, expect.not.stringContaining('Index of')]);
    }
    // The root has an index.html: that, not a listing.
    expect((await curl([url])).body).toBe('<!doctype html><title>home</title>\n');
    const h = await curl(['-I', `${url}files/sub%20dir/`]);
    expect(h.status).toBe(200);
    expect(h.headers['content-type']).toBe('text/html; charset=utf-8');
    c.child.kill('SIGINT');
    expect(await c.exited).toBe(0);
  });

  it('refuses dotfiles and dot-directories by default (404, also encoded), serves .well-known; --dotfiles deny gives 403, allow serves and lists them', async () => {
    const dir = await site();
    await writeFile(join(dir, '.env'), 'API_KEY=secret\n');
    await mkdir(join(dir, '.git'));
    await writeFile(join(dir, '.git', 'config'), '[core]\n');
    await mkdir(join(dir, 'files'));
    await writeFile(join(dir, 'files', '.htpasswd'), 'admin:x\n');
    await writeFile(join(dir, 'files', 'a.txt'), 'a\n');
    await mkdir(join(dir, '.well-known'));
    await writeFile(join(dir, '.well-known', 'security.txt'), 'Contact: mailto:s@example.com\n');
    const dotPaths = ['.env', '%2eenv', '%2Eenv', '.git/config', '%2egit/config', '.git/', 'files/.htpasswd', 'files/%2ehtpasswd'];
    for (const [policy, status] of [
      [null, 404],
      ['ignore', 404],
      ['deny', 403],
      ['allow', 200],
    ] as const) {
      const c = startCli(['serve', dir, '--port', '0', '-q', ...(policy !== null ? ['--dotfiles', policy] : [])]);
      const url = await started(c);
      for (const p of dotPaths) {
        const r = await curl(['--path-as-is', `${url}${p}`]);
        expect([policy, p, r.status]).toEqual([policy, p, status]);
        if (status !== 200) expect(r.body).not.toMatch(/secret|core|admin/);
      }
      expect((await curl([`${url}.well-known/security.txt`])).body).toBe('Contact: mailto:s@example.com\n');
      const listing = (await curl([`${url}files/`])).body;
      expect(listing).toContain('a.txt');
      if (policy === 'allow') {
        expect(listing).toContain('.htpasswd');
        expect((await curl([`${url}.git/`])).body).toContain('<title>Index of /.git/</title>');
      } else expect(listing).not.toContain('.htpasswd');
      c.child.kill('SIGINT');
      expect(await c.exited).toBe(0);
    }
    const bad = await runMain(['serve', dir, '--dotfiles', 'hide']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--dotfiles takes ignore, deny or allow, got "hide"/);
  });

  it('--no-list answers a directory without index.html with 404', async () => {
    const dir = await site();
    await mkdir(join(dir, 'files'));
    await writeFile(join(dir, 'files', 'a.txt'), 'a\n');
    const c = startCli(['serve', dir, '--port', '0', '--no-list', '-q']);
    const url = await started(c);
    expect((await curl([`${url}files/`])).status).toBe(404);
    expect((await curl([`${url}files/a.txt`])).body).toBe('a\n');
    c.child.kill('SIGINT');
    expect(await c.exited).toBe(0);
  });
  it('--workers 2 serves from two processes, replaces them on SIGHUP, drains them on SIGTERM; a bad count is a usage error', async () => {
    const dir = await site();
    const c = startCli(['serve', dir, '--port', '0', '--workers', '2', '-q']);
    const url = await started(c);
    const pids = (await c.waitLine(/^2 workers \(pids (\d+), (\d+)\); kill -HUP (\d+) replaces them one at a time$/)).slice(1).map(Number);
    expect(pids[2]).toBe(c.child.pid);
    expect((await curl([`${url}hello.txt`])).body).toBe('hello, files\n');
    c.child.kill('SIGHUP');
    await new Promise<void>((resolve) => {
      const check = (): void => {
        if (!/reload done: 2 workers replaced/.test(c.stderr())) return;
        c.child.stderr!.off('data', check);
        resolve();
      };
      c.child.stderr!.on('data', check);
      check();
    });
    for (const pid of pids.slice(0, 2)) expect(() => process.kill(pid, 0)).toThrow();
    expect((await curl([`${url}hello.txt`])).body).toBe('hello, files\n');
    c.child.kill('SIGTERM');
    await c.waitLine(/^switchyard serve: closed$/);
    expect(await c.exited).toBe(0);
    const bad = await runMain(['serve', dir, '--workers', '0']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/option --workers must be from 1 to 1024, got 0/);
  }, 60_000);
});
