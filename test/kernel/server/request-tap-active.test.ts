/**
 * `server.onRequest` taps that declare `active`: while every tap of the hook says it has nothing
 * to do, an exchange skips the hook (no tap is called, the handler answers); as soon as one
 * says it has, every tap runs as before. Taps without `active` always run. The router plugin
 * declares it: with no routes it costs an exchange nothing, and routes added while the server
 * runs are served at once.
 */
import { describe, expect, it } from 'vitest';
import { createKernel, definePlugin, Response, type Kernel } from '../../../kernel/index.js';
import { router } from '../../../plugins/router/index.js';
import { exchange, get, onCleanup, startServer } from '../../helpers/server.js';

async function kernelWith(setup: (kernel: Kernel) => void): Promise<Kernel> {
  const kernel = createKernel().register(definePlugin({ name: 'active-test', register: setup }));
  await kernel.ready();
  onCleanup(() => kernel.close());
  return kernel;
}

const handler = (): Response => new Response(200, 'handler');

describe('server.onRequest taps declaring active', () => {
  it('skips every tap while all say they have nothing to do, and runs them all once one has', async () => {
    const calls: string[] = [];
    let aOn = false;
    const kernel = await kernelWith((k) => {
      k.hooks.server.onRequest.tap({ name: 'a', active: () => aOn }, () => {
        calls.push('a');
        return aOn ? new Response(200, 'a') : undefined;
      });
      k.hooks.server.onRequest.tap({ name: 'b', active: () => false }, () => {
        calls.push('b');
      });
    });
    const { port } = await startServer(handler, { kernel });
    expect((await exchange(port, get('/'))).res.text).toBe('handler');
    expect(calls).toEqual([]);
    aOn = true;
    expect((await exchange(port, get('/'))).res.text).toBe('a');
    expect(calls).toEqual(['a']);
  });

  it('runs every tap when one of them does not declare active', async () => {
    const calls: string[] = [];
    const kernel = await kernelWith((k) => {
      k.hooks.server.onRequest.tap({ name: 'idle', active: () => false }, () => {
        calls.push('idle');
      });
      k.hooks.server.onRequest.tap('always', () => {
        calls.push('always');
      });
    });
    const { port } = await startServer(handler, { kernel });
    expect((await exchange(port, get('/'))).res.text).toBe('handler');
    expect(calls).toEqual(['idle', 'always']);
  });

  it('refuses an active that is not a function, on tap, tapAsync and tapPromise', async () => {
    await expect(
      kernelWith((k) => {
        k.hooks.server.onRequest.tap({ name: 'bad', active: true as unknown as () => boolean }, () => undefined);
      }),
    ).rejects.toThrow(/active must be a function.*got boolean/);
    await expect(
      kernelWith((k) => {
        k.hooks.server.onRequest.tapAsync({ name: 'bad', active: 1 as unknown as () => boolean }, (_r, _e, done) => done(null));
      }),
    ).rejects.toThrow(/active must be a function/);
    await expect(
      kernelWith((k) => {
        k.hooks.server.onRequest.tapPromise({ name: 'bad', active: 'yes' as unknown as () => boolean }, async () => undefined);
      }),
    ).rejects.toThrow(/active must be a function/);
  });

  it('the router with no routes leaves the exchange to the handler, and serves a route added while the server runs', async () => {
    const kernel = createKernel().register(router);
    await kernel.ready();
    onCleanup(() => kernel.close());
    const { port } = await startServer(handler, { kernel });
    expect((await exchange(port, get('/late'))).res.text).toBe('handler');
    kernel.route('GET', '/late', () => new Response(200, 'route'));
    expect((await exchange(port, get('/late'))).res.text).toBe('route');
    expect((await exchange(port, get('/other'))).res.text).toBe('handler');
  });
});
