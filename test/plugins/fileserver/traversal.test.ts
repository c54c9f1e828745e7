/**
 * Path traversal: a table of attempts (plain, encoded, double- and triple-encoded, overlong
 * UTF-8, backslashes, NUL, symlinks leaving the root, absolute-form targets) sent as raw
 * request lines. Every one gets 400 or 404, and neither the secret next to the root nor
 * /etc/passwd ever comes back — through fileServer, under a prefix, through the plugin, and
 * under a stream handler; and after all of them the server still serves.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKernel, streamHandler, Response, type RequestHandler } from '../../../kernel/index.js';
import { fileServer, fileserver } from '../../../plugins/fileserver/index.js';
import { exchange, onCleanup, startServer, startStreamServer, type ParsedResponse } from '../../helpers/server.js';
import { makeSite, type Site } from './fixture.js';

let site: Site;
beforeAll(() => {
  site = makeSite();
});
afterAll(() => site.remove());

/** Attempts as written on the request line (after the method). */
const ATTEMPTS: readonly string[] = [
  '/../secret.txt',
  '/../../../../../../etc/passwd',
  '/..%2fsecret.txt',
  '/..%2Fsecret.txt',
  '/%2e%2e/secret.txt',
  '/%2E%2E/secret.txt',
  '/%2e%2e%2fsecret.txt',
  '/.%2e/secret.txt',
  '/%2e./secret.txt',
  '/sub/../../secret.txt',
  '/sub/%2e%2e/%2e%2e/secret.txt',
  '/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd',
  '/..%2f..%2f..%2f..%2fetc%2fpasswd',
  '/%252e%252e/secret.txt',
  '/%252e%252e%252fsecret.txt',
  '/..%252fsecret.txt',
  '/%25252e%25252e/secret.txt',
  '/%252e%252e/%252e%252e/%252e%252e/etc/passwd',
  '/..\\secret.txt',
  '/\\..\\secret.txt',
  '/..%5csecret.txt',
  '/..%5Csecret.txt',
  '/%2e%2e%5csecret.txt',
  '/%252e%252e%255csecret.txt',
  '/secret.txt%00.html',
  '/%00../secret.txt',
  '/..%00/secret.txt',
  '/style.css%00',
  '/style.css%00/../../secret.txt',
  '/%c0%ae%c0%ae/secret.txt',
  '/%e0%80%ae%e0%80%ae/secret.txt',
  '/..%c0%afsecret.txt',
  '/%uff0e%uff0e/secret.txt',
  '/%EF%BC%8E%EF%BC%8E/secret.txt',
  '/./../secret.txt',
  '//secret.txt',
  '//..//secret.txt',
  '/....//secret.txt',
  '/.../secret.txt',
  '/sub/..;/secret.txt',
  '/%2e%2e;/secret.txt',
  '/link-out.txt',
  '/abs-link-out.txt',
  '/dir-link-out/inner.txt',
  '/dir-link-out/',
  '/dir-link-out',
  '/prefix-trick.txt',
  '/fifo-link',
  '/sub/%2e%2e%2f%2e%2e%2fsecret.txt',
  '/%2e%2e',
  '/..',
  'http://x/../secret.txt',
  'http://x/%2e%2e/secret.txt',
  '../secret.txt',
  '%2e%2e/secret.txt',
];

function check(res: ParsedResponse, target: string): void {
  expect([400, 404], `${target} → ${res.status}`).toContain(res.status);
  expect(res.body.includes(site.secret), `${target} leaked the secret`).toBe(false);
  expect(res.text.includes('root:x:0:0'), `${target} leaked /etc/passwd`).toBe(false);
}

async function attempt(port: number, target: string, method = 'GET'): Promise<ParsedResponse> {
  const { client, res } = await exchange(port, `${method} ${target} HTTP/1.1\r\nHost: x\r\n\r\n`, method);
  client.destroy();
  return res;
}

async function expectStillServing(port: number, target: string): Promise<void> {
  const res = await attempt(port, target);
  expect(res.status).toBe(200);
  expect(res.body.equals(site.files['style.css']!)).toBe(true);
}

describe('path traversal table', () => {
  it('has at least 30 attempts', () => {
    expect(ATTEMPTS.length).toBeGreaterThanOrEqual(30);
  });

  it.each(ATTEMPTS)('fileServer: GET %s → 400 or 404, no secret', async (target) => {
    const { port } = await startServer(fileServer(site.root, { etag: 'weak_stat' }));
    check(await attempt(port, target), target);
    check(await attempt(port, target, 'HEAD'), `HEAD ${target}`);
  });

  it('under a prefix', async () => {
    const { port } = await startServer(fileServer(site.root, { prefix: '/static' }));
    for (const t of ATTEMPTS) {
      const target = t.startsWith('/') ? `/static${t}` : t;
      check(await attempt(port, target), target);
    }
    await expectStillServing(port, '/static/style.css');
  });

  it('through the plugin (fallthrough: false) in front of a handler', async () => {
    const kernel = createKernel().register(fileserver, { root: site.root, fallthrough: false });
    await kernel.ready();
    onCleanup(() => kernel.close());
    const handler: RequestHandler = () => new Response(200, 'handler');
    const { port } = await startServer(handler, { kernel });
    for (const t of ATTEMPTS) check(await attempt(port, t), t);
    await expectStillServing(port, '/style.css');
  });

  it('under a stream handler', async () => {
    const { port } = await startStreamServer(streamHandler(fileServer(site.root)));
    for (const t of ATTEMPTS) check(await attempt(port, t), t);
    await expectStillServing(port, '/style.css');
  });

  it('with spaFallback, attempts get 400, 404 or the app page — never the secret', async () => {
    const { port } = await startServer(fileServer(site.root, { spaFallback: 'index.html' }));
    for (const t of ATTEMPTS) {
      const res = await attempt(port, t);
      expect(res.body.includes(site.secret), t).toBe(false);
      if (res.status === 200) expect(res.body.equals(site.files['index.html']!), t).toBe(true);
      else expect([400, 404], `${t} → ${res.status}`).toContain(res.status);
    }
  });
});
