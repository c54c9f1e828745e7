/**
 * Plugins and the loader: definePlugin checks, register() argument checks, dependency
 * ordering, boot failures that name the plugin, nesting, and register after ready.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ArgumentError, PluginError } from '../../kernel/errors.js';
import { createKernel, isPlugin, Kernel, type AnyPlugin, type Plugin } from '../../kernel/kernel.js';
import { definePlugin } from '../../kernel/plugin.js';
import { presets } from '../../plugins/index.js';

const kernels: Kernel[] = [];
afterEach(async () => {
  await Promise.all(kernels.splice(0).map((k) => k.close().catch(() => {})));
});

function kernel(options?: ConstructorParameters<typeof Kernel>[0]): Kernel {
  const k = createKernel(options);
  kernels.push(k);
  return k;
}

/** A plugin that records its load in `log`. */
function recorder(log: string[], name: string, dependencies: string[] = []): Plugin {
  return definePlugin({
    name,
    dependencies,
    register() {
      log.push(name);
    },
  });
}

async function rejection(p: Promise<unknown>): Promise<PluginError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(PluginError);
    return err as PluginError;
  }
  throw new Error('expected a rejection');
}

describe('definePlugin', () => {
  it('returns a frozen, branded plugin with its metadata', () => {
    const p = definePlugin({ name: 'cookies', dependencies: ['proxy'], register() {} });
    expect(isPlugin(p)).toBe(true);
    expect(Object.isFrozen(p)).toBe(true);
    expect(p.name).toBe('cookies');
    expect(p.dependencies).toEqual(['proxy']);
    expect(Object.isFrozen(p.dependencies)).toBe(true);
    expect(definePlugin({ name: 'x', register() {} }).dependencies).toEqual([]);
    expect(isPlugin({ name: 'x', register() {} })).toBe(false);
  });

  it('rejects bad definitions with an ArgumentError that says what is wrong', () => {
    const bad: [unknown, RegExp][] = [
      [null, /takes \{ name, dependencies\?, register \}/],
      [{ register() {} }, /name must be a non-empty string/],
      [{ name: ' padded ', register() {} }, /without surrounding spaces/],
      [{ name: 'x', dependencies: 'y', register() {} }, /dependencies must be an array/],
      [{ name: 'x', dependencies: ['x'], register() {} }, /cannot depend on itself/],
      [{ name: 'x' }, /register must be a function/],
      [{ name: 'x', register: (_k: unknown, _o: unknown, _done: unknown) => {} }, /no done callback/],
    ];
    for (const [definition, message] of bad) {
      expect(() => definePlugin(definition as never)).toThrow(ArgumentError);
      expect(() => definePlugin(definition as never)).toThrow(message);
    }
  });

  it('passes the options given to register(), {} when none', async () => {
    const seen: unknown[] = [];
    const p = definePlugin({
      name: 'opts',
      register(_kernel, options: { limit?: number }) {
        seen.push(options);
      },
    });
    await kernel().register(p, { limit: 3 }).ready();
    await kernel().register(p).ready();
    expect(seen).toEqual([{ limit: 3 }, {}]);
  });

  it('makes options required in the types when a field is required', () => {
    const p = definePlugin({ name: 'needs', register(_k, _o: { root: string }) {} });
    const k = kernel();
    // @ts-expect-error `root` is required, so options are too.
    expect(() => k.register(p)).not.toThrow();
  });

  it('keeps `this` of a method-style register', async () => {
    let self: unknown;
    const definition = {
      name: 'self',
      register() {
        // eslint-disable-next-line @typescript-eslint/no-this-alias -- the test checks what `this` is inside register
        self = this;
      },
    };
    await kernel().register(definePlugin(definition)).ready();
    expect(self).toBe(definition);
  });
});

describe('kernel.register() arguments', () => {
  it('refuses values that are not plugins, saying what they are', () => {
    const k = kernel();
    const cases: [unknown, RegExp][] = [
      [undefined, /expects a plugin made by definePlugin\(\) or a list of them, got undefined/],
      [null, /got null/],
      [function cookies() {}, /got a function "cookies"; wrap it: definePlugin\(\{ name: 'cookies'/],
      [{ name: 'x', register() {} }, /got a plain object; make plugins with definePlugin/],
      ['cookies', /got the string "cookies"/],
    ];
    for (const [value, message] of cases) {
      expect(() => k.register(value as never)).toThrow(ArgumentError);
      expect(() => k.register(value as never)).toThrow(message);
    }
  });

  it('names the position of a bad entry in a (nested) list', () => {
    const ok = definePlugin({ name: 'ok', register() {} });
    expect(() => kernel().register([ok, [ok, 42 as never]])).toThrow(/plugins\[1\]\[1\] expects a plugin.*got 42/);
  });

  it('refuses options with a list', () => {
    const ok = definePlugin({ name: 'ok', register() {} });
    expect(() => (kernel().register as (...a: unknown[]) => unknown)([ok], { x: 1 })).toThrow(/options belong to one plugin/);
  });

  it('accepts a module whose default export is a plugin', async () => {
    const log: string[] = [];
    const mod = { default: recorder(log, 'from-module') };
    await kernel()
      .register(mod as never)
      .ready();
    expect(log).toEqual(['from-module']);
  });

  it('returns the kernel for chaining', () => {
    const k = kernel();
    expect(k.register([])).toBe(k);
  });
});

describe('load order', () => {
  it('sorts a preset list topologically, otherwise keeping list order', async () => {
    const log: string[] = [];
    const list = [recorder(log, 'x'), recorder(log, 'redirects', ['cookies']), recorder(log, 'y'), recorder(log, 'cookies', ['proxy']), recorder(log, 'proxy'), recorder(log, 'z')];
    const k = await kernel().register(list).ready();
    expect(log).toEqual(['x', 'proxy', 'cookies', 'redirects', 'y', 'z']);
    expect(k.plugins).toEqual(log);
  });

  it('sorts across separate register() calls and nested lists as well', async () => {
    const log: string[] = [];
    const k = kernel();
    k.register(recorder(log, 'c', ['b']));
    k.register([[recorder(log, 'b', ['a'])], recorder(log, 'd')]);
    k.register(recorder(log, 'a'));
    await k.ready();
    expect(log).toEqual(['a', 'b', 'c', 'd']);
  });

  it('is plain registration order without dependencies', async () => {
    const log: string[] = [];
    await kernel()
      .register([recorder(log, 'one'), recorder(log, 'two')])
      .register(recorder(log, 'three'))
      .ready();
    expect(log).toEqual(['one', 'two', 'three']);
  });

  it('rejects a dependency cycle, naming the plugins', async () => {
    const log: string[] = [];
    const err = await rejection(
      kernel()
        .register([recorder(log, 'a', ['b']), recorder(log, 'b', ['a'])])
        .ready(),
    );
    expect(err.code).toBe('SWY_ERR_PLUGIN_DEPENDENCY');
    expect(err.message).toMatch(/dependency cycle: "a" → "b" → "a"/);
    expect(log).toEqual([]);
  });

  it('loads a nested plugin right after its parent, before the next sibling', async () => {
    const log: string[] = [];
    const child = recorder(log, 'child', ['parent']);
    const parent = definePlugin({
      name: 'parent',
      register(k) {
        log.push('parent');
        k.register(child);
      },
    });
    let sawParent: boolean | undefined;
    const sibling = definePlugin({
      name: 'sibling',
      register(k) {
        sawParent = k.hasPlugin('parent') && k.hasPlugin('child');
        log.push('sibling');
      },
    });
    const k = await kernel().register([parent, sibling]).ready();
    expect(log).toEqual(['parent', 'child', 'sibling']);
    expect(sawParent).toBe(true);
    expect(k.plugins).toEqual(['parent', 'child', 'sibling']);
  });

  it('awaits an async register() before the next plugin', async () => {
    const log: string[] = [];
    const slow = definePlugin({
      name: 'slow',
      async register() {
        await new Promise((r) => setTimeout(r, 10));
        log.push('slow');
      },
    });
    await kernel()
      .register([slow, recorder(log, 'next')])
      .ready();
    expect(log).toEqual(['slow', 'next']);
  });
});

describe('ready() failures name the plugin', () => {
  it('missing dependency: SWY_ERR_PLUGIN_DEPENDENCY says which plugin needs which', async () => {
    const log: string[] = [];
    const k = kernel().register([recorder(log, 'ok'), recorder(log, 'redirects', ['cookies'])]);
    const err = await rejection(k.ready());
    expect(err.code).toBe('SWY_ERR_PLUGIN_DEPENDENCY');
    expect(err.plugin).toBe('redirects');
    expect(err.message).toMatch(/plugin "redirects" needs plugin "cookies", which is not registered/);
    expect(log).toEqual(['ok']);
    expect(k.state).toBe('failed');
  });

  it('missing dependency of a nested plugin', async () => {
    const parent = definePlugin({
      name: 'parent',
      register(k) {
        k.register(definePlugin({ name: 'kid', dependencies: ['absent'], register() {} }));
      },
    });
    const err = await rejection(kernel().register(parent).ready());
    expect(err).toMatchObject({ code: 'SWY_ERR_PLUGIN_DEPENDENCY', plugin: 'kid' });
  });

  it('duplicate: SWY_ERR_PLUGIN_DUPLICATE, top level and nested', async () => {
    const log: string[] = [];
    const cookies = recorder(log, 'cookies');
    const top = await rejection(
      kernel()
        .register(cookies)
        .register([recorder(log, 'cookies')])
        .ready(),
    );
    expect(top).toMatchObject({ code: 'SWY_ERR_PLUGIN_DUPLICATE', plugin: 'cookies' });
    expect(top.message).toMatch(/plugin "cookies" is registered twice/);

    const again = definePlugin({
      name: 'bundle',
      register(k) {
        k.register(cookies);
      },
    });
    const nested = await rejection(kernel().register([cookies, again]).ready());
    expect(nested).toMatchObject({ code: 'SWY_ERR_PLUGIN_DUPLICATE', plugin: 'cookies' });
  });

  it('register() throws: SWY_ERR_PLUGIN_BOOT with the error as cause; later plugins do not load', async () => {
    const log: string[] = [];
    const cause = new TypeError('bad option');
    const broken = definePlugin({
      name: 'broken',
      register() {
        throw cause;
      },
    });
    const err = await rejection(
      kernel()
        .register([broken, recorder(log, 'after')])
        .ready(),
    );
    expect(err).toMatchObject({ code: 'SWY_ERR_PLUGIN_BOOT', plugin: 'broken' });
    expect(err.cause).toBe(cause);
    expect(err.message).toBe('plugin "broken" failed in register(): bad option');
    expect(log).toEqual([]);
  });

  it('register() rejects: SWY_ERR_PLUGIN_BOOT with the rejection as cause', async () => {
    const cause = new Error('no config file');
    const broken = definePlugin({
      name: 'async-broken',
      async register() {
        await Promise.resolve();
        throw cause;
      },
    });
    const err = await rejection(kernel().register(broken).ready());
    expect(err).toMatchObject({ code: 'SWY_ERR_PLUGIN_BOOT', plugin: 'async-broken', cause });
  });

  it('register() never settles: SWY_ERR_PLUGIN_BOOT after pluginTimeout', async () => {
    const hung = definePlugin({ name: 'hung', register: () => new Promise<void>(() => {}) });
    const err = await rejection(kernel({ pluginTimeout: 30 }).register(hung).ready());
    expect(err).toMatchObject({ code: 'SWY_ERR_PLUGIN_BOOT', plugin: 'hung' });
    expect(err.message).toMatch(/did not finish register\(\) within 30 ms/);
    expect((err.cause as { code?: string }).code).toBe('AVV_ERR_PLUGIN_EXEC_TIMEOUT');
  });

  it('a failed kernel stays failed', async () => {
    const k = kernel().register(definePlugin({ name: 'b', register: () => Promise.reject(new Error('x')) }));
    const first = k.ready();
    await expect(first).rejects.toBeInstanceOf(PluginError);
    expect(k.ready()).toBe(first);
    expect(() => k.register(definePlugin({ name: 'c', register() {} }))).toThrow(PluginError);
  });
});

describe('register after ready()', () => {
  it('throws SWY_ERR_KERNEL_STARTED naming the plugin', async () => {
    const k = await kernel().ready();
    let err: unknown;
    try {
      k.register(definePlugin({ name: 'late', register() {} }));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(PluginError);
    expect(err).toMatchObject({ code: 'SWY_ERR_KERNEL_STARTED', plugin: 'late' });
    expect((err as Error).message).toMatch(/register every plugin before ready\(\)/);
  });

  it('throws while ready() runs, unless called from a plugin', async () => {
    const k = kernel();
    const pending = k.ready();
    expect(() => k.register(definePlugin({ name: 'racer', register() {} }))).toThrow(/while ready\(\) is running/);
    await pending;
  });
});

describe('kernel state', () => {
  it('ready() resolves to the kernel, once', async () => {
    const k = kernel();
    expect(k.state).toBe('idle');
    const p = k.ready();
    expect(k.state).toBe('booting');
    expect(k.ready()).toBe(p);
    expect(await p).toBe(k);
    expect(k.state).toBe('ready');
    await k.close();
    expect(k.state).toBe('closed');
    await expect(
      kernel()
        .close()
        .then(() => undefined),
    ).resolves.toBeUndefined();
  });

  it('hasPlugin and plugins report loaded plugins only', async () => {
    const log: string[] = [];
    const k = kernel().register(recorder(log, 'a'));
    expect(k.hasPlugin('a')).toBe(false);
    expect(k.plugins).toEqual([]);
    await k.ready();
    expect(k.hasPlugin('a')).toBe(true);
    expect(k.hasPlugin('b')).toBe(false);
    expect(Object.isFrozen(k.plugins)).toBe(true);
  });

  it('validates createKernel options', () => {
    expect(() => createKernel({ pluginTimeout: -1 })).toThrow(ArgumentError);
    expect(() => createKernel(null as never)).toThrow(/options must be an object/);
  });
});

describe('presets', () => {
  it('defaults is a frozen list of plugins (empty until the plugins land)', async () => {
    expect(Object.isFrozen(presets)).toBe(true);
    expect(Object.isFrozen(presets.defaults)).toBe(true);
    expect(presets.defaults.every((p: AnyPlugin) => isPlugin(p))).toBe(true);
    const k = await kernel().register(presets.defaults).ready();
    expect(k.plugins).toEqual(presets.defaults.map((p) => p.name));
  });
});
