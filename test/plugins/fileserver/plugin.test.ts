/**
 * The `fileserver` plugin: mounts in front of a server's handler (request and stream
 * handlers), fallthrough for missing files and other methods, several mounts, nothing tapped
 * without mounts, and boot errors for bad options.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKernel, PluginError, Response, type Kernel, type RequestHandler, type StreamHandler } from '../../../kernel/index.js';
import { fileserver, type FileServerPluginOptions } from '../../../plugins/fileserver/index.js';
import { exchange, onCleanup, startServer, startStreamServer, type ParsedResponse } from '../../helpers/server.js';
import { makeSite, type Site } from './fixture.js';

let site: Site;
beforeAll(() => {
  site = makeSite();
});
afterAll(() => site.remove());

async function boot(options: FileServerPluginOptions): Promise<Kernel> {
  const kernel = createKernel().register(fileserver, options);
  await kernel.ready();
  onCleanup(() => kernel.close());
  return kernel;
}

async function ask(port: number, method: string, target: string, headers = ''): Promise<ParsedResponse> {
  const { client, res } = await exchange(port, `${method} ${target} HTTP/1.1\r\nHost: x\r\n${headers}\r\n`, method);
  client.destroy();
  return res;
}

const app: RequestHandler = (req) => new Response(200, `app ${req.method} ${req.target}`);

describe('fileserver plugin', () => {
  it('serves files under the prefix; missing files, other paths and other methods reach the handler', async () => {
    const kernel = await boot({ root: site.root, prefix: '/static', etag: 'weak_stat' });
    const { port } = await startServer(app, { kernel });
    const css = await ask(port, 'GET', '/static/style.css');
    expect([css.status, css.headers.get('Content-Type')]).toEqual([200, 'text/css; charset=utf-8']);
    expect(css.body.equals(site.files['style.css']!)).toBe(true);
    expect((await ask(port, 'GET', '/static/sub')).headers.get('Location')).toBe('/static/sub/');
    expect((await ask(port, 'GET', '/static/style.css', `If-None-Match: ${css.headers.get('ETag')}\r\n`)).status).toBe(304);
    expect((await ask(port, 'HEAD', '/static/big.bin')).headers.get('Content-Length')).toBe(String(site.files['big.bin']!.length));
    expect((await ask(port, 'GET', '/static/missing.txt')).text).toBe('app GET /static/missing.txt');
    expect((await ask(port, 'POST', '/static/style.css')).text).toBe('app POST /static/style.css');
    expect((await ask(port, 'GET', '/api/users')).text).toBe('app GET /api/users');
    // A path no file can have is the handler's business (it may be a route's), never a file.
    expect((await ask(port, 'GET', '/static/%2e%2e/secret.txt')).text).toBe('app GET /static/%2e%2e/secret.txt');
    expect((await ask(port, 'GET', '/static/a%2Fb')).text).toBe('app GET /static/a%2Fb');
  });

  it('fallthrough: false answers 404, 400 and 405 itself', async () => {
    const kernel = await boot({ root: site.root, fallthrough: false });
    const { port } = await startServer(app, { kernel });
    expect((await ask(port, 'GET', '/missing.txt')).status).toBe(404);
    expect((await ask(port, 'GET', '/%2e%2e/secret.txt')).status).toBe(400);
    const post = await ask(port, 'POST', '/style.css');
    expect([post.status, post.headers.get('Allow')]).toEqual([405, 'GET, HEAD']);
  });

  it('several mounts are tried in order', async () => {
    const kernel = await boot({
      mounts: [
        { root: `${site.root}/sub`, prefix: '/docs' },
        { root: site.root, prefix: '/' },
      ],
    });
    const { port } = await startServer(app, { kernel });
    expect((await ask(port, 'GET', '/docs/page.txt')).text).toBe('sub page\n');
    expect((await ask(port, 'GET', '/docs/')).text).toBe('<html><body>sub</body></html>');
    expect((await ask(port, 'GET', '/app.js')).text).toBe(site.files['app.js']!.toString());
    expect((await ask(port, 'GET', '/docs/app.js')).text).toBe('app GET /docs/app.js');
  });

  it('a mount without fallthrough leaves paths outside its prefix alone, whatever the method', async () => {
    const kernel = await boot({ root: site.root, prefix: '/static', fallthrough: false });
    const { port } = await startServer(app, { kernel });
    expect((await ask(port, 'POST', '/api/items')).text).toBe('app POST /api/items');
    expect((await ask(port, 'GET', '/api/a%2Fb')).text).toBe('app GET /api/a%2Fb');
    expect((await ask(port, 'GET', '/static/nope')).status).toBe(404);
    expect((await ask(port, 'DELETE', '/static/style.css')).status).toBe(405);
  });

  it('works in front of a stream handler', async () => {
    const kernel = await boot({ root: site.root });
    const streamApp: StreamHandler = async (s) => {
      const req = await s.startRead();
      await s.write(`stream ${req.target}`);
    };
    const { port } = await startStreamServer(streamApp, { kernel });
    const big = await ask(port, 'GET', '/big.bin');
    expect(big.body.equals(site.files['big.bin']!)).toBe(true);
    const head = await ask(port, 'HEAD', '/big.bin');
    expect([head.headers.get('Content-Length'), head.body.length]).toEqual([String(site.files['big.bin']!.length), 0]);
    expect((await ask(port, 'GET', '/digits.txt', 'Range: bytes=0-2\r\n')).text).toBe('012');
    expect((await ask(port, 'GET', '/nothing')).text).toBe('stream /nothing');
  });

  it('without mounts it taps nothing (the default preset costs nothing)', async () => {
    const kernel = await boot({});
    expect(kernel.tapped.server.onRequest).toBeNull();
  });

  it.each([
    [{ root: '/definitely/not/here' }, /not an existing directory/],
    [{ prefix: '/x' }, /need a root/],
    [{ mounts: 'nope' as unknown as [] }, /mounts must be an array/],
    [{ root: '.', fallthrough: 'yes' as unknown as boolean }, /fallthrough must be a boolean/],
    [{ root: '.', etag: 12 as unknown as string }, /etag must be/],
  ])('bad options fail the boot: %j', async (options, message) => {
    const kernel = createKernel().register(fileserver, options);
    onCleanup(() => kernel.close().catch(() => {}));
    const err = await kernel.ready().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(PluginError);
    expect((err as PluginError).plugin).toBe('fileserver');
    expect(String((err as PluginError).message) + String(((err as PluginError).cause as Error)?.message)).toMatch(message);
  });
});
