/**
 * Server options that plugins declare (`definePlugin({ serverOptions })`): a server checks their
 * values when it is made, refuses them naming the plugin when its kernel lacks it, suggests the
 * nearest name for a misspelt one, and the plugin reads them from `ServerInfo.options`. The h2
 * and h2c plugins declare theirs this way.
 */
import { describe, expect, it } from 'vitest';
import { ArgumentError, createKernel, definePlugin, OptionChecks, Response, Server, type ServeOptions, type ServerInit, type ServerInfo } from '../../../kernel/index.js';
import { h2 } from '../../../plugins/h2/index.js';
import { h2c } from '../../../plugins/h2c/index.js';
import { onCleanup, rawClient, startServer } from '../../helpers/server.js';

const ok = (): Response => new Response(200, 'ok');

/** The message of the ArgumentError `fn` throws (fails the test when it throws none or another kind). */
function thrown(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ArgumentError);
    return (err as Error).message;
  }
  throw new Error('expected an ArgumentError, nothing was thrown');
}

/** A plugin of another author with one server option, which it reads per connection. */
const seen: unknown[] = [];
const limiter = definePlugin({
  name: 'limiter',
  serverOptions: { maxConnsPerAddress: OptionChecks.integer(1) },
  register(kernel) {
    kernel.hooks.server.connection.tap('limiter', (_socket, server: ServerInfo) => {
      seen.push(server.options.maxConnsPerAddress);
    });
  },
});

/** `new Server` with options the kernel's types do not know (the plugin above declares no types). */
function server(options: Record<string, unknown>): Server {
  return new Server({ handler: ok, port: 0, ...options } as ServerInit);
}

describe('a plugin that declares a server option', () => {
  it('reads it from ServerInfo.options on a server of a kernel that has it', async () => {
    const kernel = await createKernel().register(limiter).ready();
    onCleanup(() => kernel.close());
    const { port } = await startServer(ok, { kernel, maxConnsPerAddress: 3 } as ServeOptions);
    const c = await rawClient(port);
    await c.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    expect((await c.response()).text).toBe('ok');
    expect(seen).toEqual([3]);
  });

  it('is checked when the server is made: a bad value, a kernel without the plugin, a misspelt name', () => {
    const kernel = createKernel().register(limiter);
    expect(thrown(() => server({ kernel, maxConnsPerAddress: 0 }))).toBe('maxConnsPerAddress must be an integer >= 1, got 0');
    expect(thrown(() => server({ kernel: createKernel(), maxConnsPerAddress: 2 }))).toBe(
      "maxConnsPerAddress needs the limiter plugin, which this server's kernel does not have: register it on this kernel (kernel.register(limiter)) before making the server, or leave out kernel in the top-level `switchyard` entry's serve/listen, which run on the default plugins",
    );
    expect(thrown(() => server({ kernel, maxConnPerAddress: 2 }))).toBe('unknown server option "maxConnPerAddress" (did you mean maxConnsPerAddress?)');
    // Given as undefined, it asks for nothing.
    expect(() => server({ kernel: createKernel(), maxConnsPerAddress: undefined }).close()).not.toThrow();
    // A server without a kernel runs no plugin: the value is checked, and has nothing to act on.
    expect(() => server({ maxConnsPerAddress: 2 }).close()).not.toThrow();
    expect(thrown(() => server({ maxConnsPerAddress: 'two' }))).toBe('maxConnsPerAddress must be an integer >= 1, got the string "two"');
  });

  it('cannot take a name the kernel or another plugin reads', () => {
    const register = (): void => {};
    expect(thrown(() => definePlugin({ name: 'mine', serverOptions: { port: OptionChecks.integer(0) }, register }))).toBe(
      "definePlugin('mine'): the server option \"port\" is the kernel's own; pick another name",
    );
    expect(thrown(() => definePlugin({ name: 'other', serverOptions: { maxConnsPerAddress: OptionChecks.integer(1) }, register }))).toBe(
      'definePlugin(\'other\'): the server option "maxConnsPerAddress" belongs to plugin "limiter"; pick another name',
    );
    expect(thrown(() => definePlugin({ name: 'mine', serverOptions: { x: 5 as never }, register }))).toBe("definePlugin('mine'): serverOptions.x must be a check function (value) => string | null");
  });
});

describe('the h2 and h2c server options', () => {
  it('are refused on a server whose kernel lacks their plugin, naming it', () => {
    const kernel = createKernel();
    expect(thrown(() => server({ kernel, maxConcurrentStreams: 5 }))).toMatch(/^maxConcurrentStreams needs the h2 plugin, which this server's kernel does not have/);
    expect(thrown(() => server({ kernel, http2Settings: { initialWindowSize: 1 << 20 } }))).toMatch(/^http2Settings needs the h2 plugin/);
    expect(thrown(() => server({ kernel: createKernel().register(h2), allowH2c: false }))).toMatch(/^allowH2c needs the h2c plugin/);
  });

  it('are checked when the server is made, with what a good value is', () => {
    const kernel = createKernel().register([h2, h2c]);
    expect(thrown(() => server({ kernel, maxConcurrentStreams: -1 }))).toBe('maxConcurrentStreams must be an integer from 0 to 4294967295 (0 = no limit), got -1');
    expect(thrown(() => server({ kernel, http2Settings: { initialWindowSize: 0 } }))).toBe(
      'http2Settings must be an HTTP2Settings or { initialWindowSize, connectionWindowSize } whose initialWindowSize is an integer from 1 to 2147483647, got a plain object',
    );
    expect(thrown(() => server({ kernel, http2Settings: { windowSize: 5 } }))).toMatch(/^http2Settings must be .*, without windowSize, got a plain object$/);
    expect(thrown(() => server({ kernel, allowH2c: 'no' }))).toBe('allowH2c must be a boolean (true or false), got the string "no"');
    expect(thrown(() => server({ kernel, maxConcurentStreams: 5 }))).toBe('unknown server option "maxConcurentStreams" (did you mean maxConcurrentStreams?)');
    expect(() => server({ kernel, maxConcurrentStreams: 0, allowH2c: false, http2Settings: { connectionWindowSize: 1 << 20 } }).close()).not.toThrow();
  });
});
