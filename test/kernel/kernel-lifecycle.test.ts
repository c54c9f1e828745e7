/** Kernel close handlers (LIFO) and decorations. */
import { describe, expect, it } from 'vitest';
import { ArgumentError } from '../../kernel/errors.js';
import { createKernel, type Kernel } from '../../kernel/kernel.js';
import { definePlugin } from '../../kernel/plugin.js';

describe('close()', () => {
  it('runs close handlers last-in first-out, awaiting each', async () => {
    const log: string[] = [];
    const k = createKernel();
    const plugin = (name: string) =>
      definePlugin({
        name,
        register(kernel) {
          kernel.onClose(async (arg) => {
            expect(arg).toBe(kernel);
            await new Promise((r) => setTimeout(r, 5));
            log.push(name);
          });
        },
      });
    k.onClose(() => void log.push('before-ready'));
    await k.register([plugin('first'), plugin('second'), plugin('third')]).ready();
    k.onClose(() => void log.push('after-ready')); // clients/servers made later close first
    await k.close();
    expect(log).toEqual(['after-ready', 'third', 'second', 'first', 'before-ready']);
  });

  it('returns the same promise when called twice and refuses handlers after it began', async () => {
    const k = await createKernel().ready();
    const p = k.close();
    expect(k.close()).toBe(p);
    expect(() => k.onClose(() => {})).toThrow(ArgumentError);
    await p;
    expect(k.state).toBe('closed');
  });

  it('runs every handler and rejects with the error one threw', async () => {
    const log: string[] = [];
    const k = createKernel();
    k.onClose(() => void log.push('a'));
    k.onClose(() => {
      throw new Error('teardown failed');
    });
    k.onClose(() => void log.push('c'));
    await k.ready();
    await expect(k.close()).rejects.toThrow('teardown failed');
    expect(log).toEqual(['c', 'a']);
  });

  it('works without ready(), and after a failed ready() closes what did load', async () => {
    const log: string[] = [];
    const idle = createKernel();
    idle.onClose(() => void log.push('idle'));
    await idle.close();
    expect(log).toEqual(['idle']);
    expect(() => idle.ready()).not.toThrow();
    await expect(idle.ready()).rejects.toThrow(/closed/);

    const k = createKernel().register([
      definePlugin({ name: 'good', register: (kernel) => void kernel.onClose(() => void log.push('good')) }),
      definePlugin({ name: 'bad', register: () => Promise.reject(new Error('x')) }),
    ]);
    await expect(k.ready()).rejects.toThrow();
    await k.close();
    expect(log).toEqual(['idle', 'good']);
  });

  it('waits for a ready() in progress', async () => {
    const log: string[] = [];
    const k = createKernel().register(
      definePlugin({
        name: 'slow',
        async register(kernel) {
          await new Promise((r) => setTimeout(r, 10));
          kernel.onClose(() => void log.push('slow closed'));
          kernel.hooks.client.onRequest.tap('slow', () => undefined);
          log.push('slow loaded');
        },
      }),
    );
    const ready = k.ready();
    await k.close();
    await ready;
    expect(log).toEqual(['slow loaded', 'slow closed']);
    expect(k.tapped.client.onRequest).toBe(k.hooks.client.onRequest);
    expect(() => k.hooks.client.onRequest.tap('later', () => undefined)).toThrow(/closed/);
  });

  it('refuses a non-function handler', () => {
    expect(() => createKernel().onClose('x' as never)).toThrow(/fn must be a function/);
  });
});

describe('decorate()', () => {
  it('adds a read-only, enumerable property and returns the kernel typed with it', async () => {
    const k = createKernel();
    const route = (path: string) => `route ${path}`;
    const decorated = k.decorate('route', route);
    expect(decorated).toBe(k);
    expect(decorated.route('/x')).toBe('route /x');
    expect(Object.keys(k)).toContain('route');
    expect(() => {
      (k as unknown as { route: unknown }).route = null;
    }).toThrow(TypeError);
    const sym = Symbol('private-api');
    expect(k.decorate(sym, 1)[sym]).toBe(1);
    await k.close();
  });

  it('is how a plugin exposes its API to later plugins', async () => {
    const router = definePlugin({
      name: 'router',
      register(kernel) {
        kernel.decorate('routes', new Map<string, string>());
      },
    });
    const user = definePlugin({
      name: 'user',
      dependencies: ['router'],
      register(kernel) {
        (kernel as Kernel & { routes: Map<string, string> }).routes.set('/me', 'user');
      },
    });
    const k = await createKernel().register([user, router]).ready();
    expect((k as Kernel & { routes: Map<string, string> }).routes.get('/me')).toBe('user');
    await k.close();
  });

  it('refuses to overwrite anything, saying who owns the name', async () => {
    const k = createKernel();
    const owner = definePlugin({ name: 'owner', register: (kernel) => void kernel.decorate('thing', 1) });
    const thief = definePlugin({ name: 'thief', register: (kernel) => void kernel.decorate('thing', 2) });
    const err = await k
      .register([owner, thief])
      .ready()
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'SWY_ERR_PLUGIN_BOOT', plugin: 'thief' });
    const cause = (err as { cause: unknown }).cause;
    expect(cause).toBeInstanceOf(ArgumentError);
    expect((cause as Error).message).toMatch(/already has "thing" \(added by plugin "owner"\); refusing to overwrite/);

    const fresh = createKernel();
    for (const name of ['register', 'hooks', 'ready', 'tapped', 'plugins', 'toString', 'constructor']) {
      expect(() => fresh.decorate(name, 1)).toThrow(/a kernel member/);
    }
    expect(() => fresh.decorate('then', () => {})).toThrow(/must not be thenable/);
    expect(() => fresh.decorate('' as string, 1)).toThrow(ArgumentError);
    await fresh.close();
    await k.close();
  });

  it('is refused after ready()', async () => {
    const k = await createKernel().ready();
    expect(() => k.decorate('late', 1)).toThrow(/after ready\(\)/);
    await k.close();
  });
});
