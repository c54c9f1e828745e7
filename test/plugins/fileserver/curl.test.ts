/**
 * curl (a real client nobody here wrote) against fileServer: conditional GETs with the ETag
 * and Last-Modified it saw (`--etag-save`/`--etag-compare`, `-z`), byte ranges with `-r`,
 * resuming a download with `-C -`, HEAD with `-I`, canonical redirects followed with `-L`,
 * and traversal with `--path-as-is`.
 */
import fs from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileServer } from '../../../plugins/fileserver/index.js';
import { curlEnv, runCurl, sha256, startServer } from '../../helpers/server.js';
import { makeSite, type Site } from './fixture.js';

let site: Site;
const env = curlEnv();
beforeAll(() => {
  site = makeSite();
});
afterAll(() => site.remove());

/** Runs curl and returns status (from -w), headers (from -D -) and body (-o file). */
async function curl(args: string[]): Promise<{ status: number; headers: string; body: Buffer; code: number | null; stderr: string }> {
  const out = join(site.base, `out-${Math.random().toString(36).slice(2)}`);
  const hdr = `${out}.h`;
  const r = await runCurl(['-o', out, '-D', hdr, '-w', '%{http_code}', ...args], env);
  const body = fs.existsSync(out) ? fs.readFileSync(out) : Buffer.alloc(0);
  const headers = fs.existsSync(hdr) ? fs.readFileSync(hdr, 'latin1') : '';
  fs.rmSync(out, { force: true });
  fs.rmSync(hdr, { force: true });
  return { status: Number(r.stdout.toString()), headers, body, code: r.code, stderr: r.stderr };
}

function header(block: string, name: string): string | undefined {
  // The last response's header block (after redirects).
  const blocks = block.trim().split(/\r\n\r\n/);
  const last = blocks[blocks.length - 1]!;
  const m = new RegExp(`^${name}: (.*)$`, 'im').exec(last);
  return m?.[1]?.trim();
}

async function server(): Promise<string> {
  const { port } = await startServer(fileServer(site.root, { etag: 'weak_stat', cacheControl: 'no-cache' }));
  return `http://127.0.0.1:${port}`;
}

describe('curl', () => {
  it('conditional GET with the ETag curl saved (--etag-save / --etag-compare) → 304', async () => {
    const base = await server();
    const tagFile = join(site.base, 'etag.txt');
    const first = await curl(['--etag-save', tagFile, `${base}/style.css`]);
    expect(first.status).toBe(200);
    expect(first.body.equals(site.files['style.css']!)).toBe(true);
    const tag = header(first.headers, 'ETag');
    expect(tag).toMatch(/^W\/"/);
    expect(fs.readFileSync(tagFile, 'latin1').trim()).toBe(tag);
    const second = await curl(['--etag-compare', tagFile, `${base}/style.css`]);
    expect(second.status).toBe(304);
    expect(second.body.length).toBe(0);
    expect(header(second.headers, 'ETag')).toBe(tag);
    const other = await curl(['-H', 'If-None-Match: "something-else"', `${base}/style.css`]);
    expect(other.status).toBe(200);
  });

  it('conditional GET with the Last-Modified curl saw (-z) → 304; an older date → 200', async () => {
    const base = await server();
    const first = await curl([`${base}/app.js`]);
    const lm = header(first.headers, 'Last-Modified')!;
    expect(lm).toMatch(/GMT$/);
    expect((await curl(['-z', lm, `${base}/app.js`])).status).toBe(304);
    const older = new Date(Date.parse(lm) - 60_000).toUTCString();
    const res = await curl(['-z', older, `${base}/app.js`]);
    expect(res.status).toBe(200);
    expect(res.body.equals(site.files['app.js']!)).toBe(true);
  });

  it('-r byte ranges: one range is 206, several are the whole file, past the end is 416', async () => {
    const base = await server();
    const one = await curl(['-r', '10-19', `${base}/digits.txt`]);
    expect([one.status, one.body.toString()]).toEqual([206, 'abcdefghij']);
    expect(header(one.headers, 'Content-Range')).toBe('bytes 10-19/36');
    const suffix = await curl(['-r', '-4', `${base}/digits.txt`]);
    expect([suffix.status, suffix.body.toString()]).toEqual([206, 'wxyz']);
    const several = await curl(['-r', '0-1,4-5', `${base}/digits.txt`]);
    expect([several.status, several.body.toString()]).toEqual([200, site.files['digits.txt']!.toString()]);
    const past = await curl(['-r', '100-', `${base}/digits.txt`]);
    expect(past.status).toBe(416);
    expect(header(past.headers, 'Content-Range')).toBe('bytes */36');
    const big = await curl(['-r', '1048576-2097151', `${base}/big.bin`]);
    expect(big.status).toBe(206);
    expect(sha256(big.body)).toBe(sha256(site.files['big.bin']!.subarray(1048576, 2097152)));
  });

  it('-C - resumes a partial download with a Range request', async () => {
    const base = await server();
    const target = join(site.base, 'resume.bin');
    const big = site.files['big.bin']!;
    fs.writeFileSync(target, big.subarray(0, 1_000_000));
    const r = await runCurl(['-C', '-', '-o', target, '-w', '%{http_code}', `${base}/big.bin`], env);
    expect(r.stdout.toString()).toBe('206');
    expect(sha256(fs.readFileSync(target))).toBe(sha256(big));
    fs.rmSync(target);
  });

  it('-I sends HEAD: the GET head, no body', async () => {
    const base = await server();
    const r = await runCurl(['-I', `${base}/big.bin`], env);
    const text = r.stdout.toString('latin1');
    expect(text).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(header(text, 'Content-Length')).toBe(String(site.files['big.bin']!.length));
    expect(header(text, 'Content-Type')).toBe('application/octet-stream');
    expect(header(text, 'Accept-Ranges')).toBe('bytes');
    expect(r.code).toBe(0);
  });

  it('-L follows the canonical redirects', async () => {
    const base = await server();
    const sub = await curl(['-L', `${base}/sub`]);
    expect([sub.status, sub.body.toString()]).toEqual([200, site.files['sub/index.html']!.toString()]);
    expect(sub.headers).toMatch(/^HTTP\/1\.1 301 .*\r\nLocation: \/sub\/\r\n/m);
    const idx = await curl(['-L', `${base}/index.html?x=1`]);
    expect(idx.status).toBe(200);
    expect(idx.body.equals(site.files['index.html']!)).toBe(true);
    expect(idx.headers).toMatch(/Location: \/\?x=1\r\n/);
    const slash = await curl(['-L', `${base}/sub/page.txt/`]);
    expect([slash.status, slash.body.toString()]).toEqual([200, 'sub page\n']);
  });

  it('--path-as-is traversal gets 400/404 and never the secret', async () => {
    const base = await server();
    for (const p of ['/../secret.txt', '/%2e%2e/secret.txt', '/sub/../../secret.txt', '/link-out.txt', '/..%5csecret.txt', '/%252e%252e/secret.txt']) {
      const res = await curl(['--path-as-is', `${base}${p}`]);
      expect([400, 404], `${p} → ${res.status}`).toContain(res.status);
      expect(res.body.includes(site.secret)).toBe(false);
    }
  });
});
