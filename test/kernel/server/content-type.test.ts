/**
 * The default Content-Type of a server response, as curl sees it over HTTP/1.1, h2c and TLS
 * HTTP/2: a text body without a type of its own says `text/plain; charset=utf-8`, bytes say
 * nothing (as node:http), a handler's own type is kept, and 204/304 and empty bodies carry none.
 */
import { describe, expect, it } from 'vitest';
import { Response, type Request } from '../../../kernel/index.js';
import { selfSignedCertificate } from '../../../tls/self-signed.js';
import { h2 } from '../../../plugins/h2/index.js';
import { h2c } from '../../../plugins/h2c/index.js';
import { createKernel } from '../../../kernel/index.js';
import { closeKernelAfter } from '../../helpers/cleanup.js';
import { curlEnv, runCurl, startServer } from '../../helpers/server.js';

const cert = selfSignedCertificate();

function handler(req: Request): Response {
  switch (req.target) {
    case '/text':
      return new Response(200, 'hello');
    case '/bytes':
      return new Response(200, new Uint8Array([1, 2, 3]));
    case '/html':
      return new Response(200, { 'Content-Type': 'text/html; charset=utf-8' }, '<p>hi</p>');
    case '/empty':
      return new Response(200, '');
    case '/304':
      return new Response(304, 'not sent', { headers: { ETag: '"x"' } });
    default:
      return new Response(404, 'no such page');
  }
}

/** The Content-Type curl received for `path` (null: none), with `flags` choosing the protocol. */
async function typeOf(origin: string, path: string, flags: string[]): Promise<string | null> {
  const r = await runCurl([...flags, '-o', '/dev/null', '-D', '-', `${origin}${path}`], curlEnv());
  expect(r.stderr).toBe('');
  const head = r.stdout.toString('latin1');
  const m = /^content-type: *(.*?)\r?$/im.exec(head);
  return m === null ? null : m[1]!;
}

async function expectTypes(origin: string, flags: string[], version: RegExp): Promise<void> {
  const r = await runCurl([...flags, '-o', '/dev/null', '-w', '%{http_version}', `${origin}/text`], curlEnv());
  expect(r.stdout.toString()).toMatch(version);
  expect(await typeOf(origin, '/text', flags)).toBe('text/plain; charset=utf-8');
  expect(await typeOf(origin, '/missing', flags)).toBe('text/plain; charset=utf-8');
  expect(await typeOf(origin, '/bytes', flags)).toBeNull();
  expect(await typeOf(origin, '/html', flags)).toBe('text/html; charset=utf-8');
  expect(await typeOf(origin, '/empty', flags)).toBeNull();
  expect(await typeOf(origin, '/304', flags)).toBeNull();
}

describe('default Content-Type of a text response', () => {
  it('HTTP/1.1', async () => {
    const { port } = await startServer(handler);
    await expectTypes(`http://127.0.0.1:${port}`, ['--http1.1'], /^1\.1$/);
  });

  it('HTTP/2: h2c with prior knowledge, and over TLS by ALPN', async () => {
    const kernel = closeKernelAfter(await createKernel().register(h2).register(h2c).ready());
    const plain = await startServer(handler, { kernel });
    await expectTypes(`http://127.0.0.1:${plain.port}`, ['--http2-prior-knowledge'], /^2$/);
    const secure = await startServer(handler, { kernel, tls: { key: cert.key, cert: cert.cert } });
    await expectTypes(`https://127.0.0.1:${secure.port}`, ['--http2', '-k'], /^2$/);
  });
});
