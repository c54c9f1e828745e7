/**
 * The file server over HTTP/2, unchanged: the same `fileServer` handler on a kernel with the
 * h2 and h2c plugins, fetched by curl over TLS with ALPN `h2` and in cleartext with
 * `--http2-prior-knowledge`. Streamed big file, ranges, HEAD, 304, redirects and traversal
 * all behave as over HTTP/1.1.
 */
import fs from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKernel } from '../../../kernel/index.js';
import { selfSignedCertificate } from '../../../tls/self-signed.js';
import { fileServer } from '../../../plugins/fileserver/index.js';
import { h2 } from '../../../plugins/h2/index.js';
import { h2c } from '../../../plugins/h2c/index.js';
import { curlEnv, onCleanup, runCurl, sha256, startServer } from '../../helpers/server.js';
import { makeSite, type Site } from './fixture.js';

let site: Site;
const env = curlEnv();
beforeAll(() => {
  site = makeSite();
});
afterAll(() => site.remove());

interface Got {
  status: number;
  version: string;
  headers: string;
  body: Buffer;
}

async function curl(args: string[]): Promise<Got> {
  const out = join(site.base, `h2-${Math.random().toString(36).slice(2)}`);
  const r = await runCurl(['-o', out, '-D', `${out}.h`, '-w', '%{http_code} %{http_version}', ...args], env);
  expect(r.code, r.stderr).toBe(0);
  const [status, version] = r.stdout.toString().split(' ');
  const got = { status: Number(status), version: version!, headers: fs.readFileSync(`${out}.h`, 'latin1'), body: fs.existsSync(out) ? fs.readFileSync(out) : Buffer.alloc(0) };
  fs.rmSync(out, { force: true });
  fs.rmSync(`${out}.h`, { force: true });
  return got;
}

function header(block: string, name: string): string | undefined {
  return new RegExp(`^${name}: (.*)$`, 'im').exec(block)?.[1]?.trim();
}

async function start(tls: boolean): Promise<{ base: string; flags: string[] }> {
  const kernel = createKernel().register([h2, h2c]);
  await kernel.ready();
  onCleanup(() => kernel.close());
  const options = tls ? { kernel, tls: selfSignedCertificate() } : { kernel };
  const { port } = await startServer(fileServer(site.root, { etag: 'weak_stat' }), options);
  return tls ? { base: `https://127.0.0.1:${port}`, flags: ['-k', '--http2'] } : { base: `http://127.0.0.1:${port}`, flags: ['--http2-prior-knowledge'] };
}

describe.each([
  ['h2 over TLS (ALPN)', true],
  ['h2c (prior knowledge)', false],
])('fileServer over %s', (_name, tls) => {
  it('a 3 MiB file streamed whole; a range; HEAD; 304; traversal refused', async () => {
    const { base, flags } = await start(tls);
    const big = await curl([...flags, `${base}/big.bin`]);
    expect([big.status, big.version]).toEqual([200, '2']);
    expect(header(big.headers, 'content-length')).toBe(String(site.files['big.bin']!.length));
    expect(sha256(big.body)).toBe(sha256(site.files['big.bin']!));

    const part = await curl([...flags, '-r', '1000000-1000099', `${base}/big.bin`]);
    expect([part.status, header(part.headers, 'content-range')]).toEqual([206, `bytes 1000000-1000099/${site.files['big.bin']!.length}`]);
    expect(part.body.equals(site.files['big.bin']!.subarray(1_000_000, 1_000_100))).toBe(true);

    const head = await curl([...flags, '-I', `${base}/style.css`]);
    expect([head.status, header(head.headers, 'content-length'), header(head.headers, 'content-type')]).toEqual([200, String(site.files['style.css']!.length), 'text/css; charset=utf-8']);

    const tag = header(big.headers, 'etag')!;
    const cond = await curl([...flags, '-H', `If-None-Match: ${tag}`, `${base}/big.bin`]);
    expect([cond.status, cond.body.length]).toEqual([304, 0]);

    const redirect = await curl([...flags, `${base}/sub`]);
    expect([redirect.status, header(redirect.headers, 'location')]).toEqual([301, '/sub/']);

    for (const p of ['/%2e%2e/secret.txt', '/link-out.txt', '/..%5csecret.txt']) {
      const r = await curl([...flags, '--path-as-is', `${base}${p}`]);
      expect([400, 404], p).toContain(r.status);
      expect(r.body.includes(site.secret)).toBe(false);
    }
  });
});
