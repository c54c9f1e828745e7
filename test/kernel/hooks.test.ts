/**
 * The hook table: every hook fires with its arguments and bail/waterfall semantics, stages
 * order taps, untapped hooks resolve to null and are never called, late taps fail, and tap
 * errors carry the tap's name.
 *
 * Hooks are fired the way the client and server will fire them (they do not exist yet):
 * through `kernel.tapped`, branching on null. The plugins below use only what
 * plugin-api.md documents.
 */
import { randomUUID } from 'node:crypto';
import { Socket } from 'node:net';
import { Duplex, PassThrough } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ArgumentError, PluginError } from '../../kernel/errors.js';
import {
  tapErrorInfo,
  type ClientSession,
  type ConnectOptions,
  type KernelHooks,
  type ProtocolInfo,
  type UpgradeInfo,
  type ServerExchange,
  type ServerInfo,
  type SessionInfo,
  type TappedHooks,
} from '../../kernel/hooks.js';
import { createKernel, type Kernel, type PluginList } from '../../kernel/kernel.js';
import { RequestContext } from '../../kernel/message/context.js';
import { Request } from '../../kernel/message/request.js';
import { Response } from '../../kernel/message/response.js';
import { definePlugin } from '../../kernel/plugin.js';
import { Stage } from '../../kernel/stages.js';

// --- The plugin-api.md example, verbatim (imports aside) --------------------------------

const NAME = 'request-id';
const KEY = Symbol('request-id');

/** Options of the request-id plugin. */
interface RequestIdOptions {
  /** Header to use; default `X-Request-Id`. */
  header?: string;
  /** Makes a new id; default `crypto.randomUUID`. */
  generate?: () => string;
}

const requestId = definePlugin({
  name: NAME,
  register(kernel, options: RequestIdOptions) {
    const header = options.header ?? 'X-Request-Id';
    const generate = options.generate ?? randomUUID;

    // Client: every attempt carries an id; retries and redirect hops reuse the first one.
    kernel.hooks.client.onRequest.tap(NAME, (req, ctx) => {
      let id = ctx.get<string>(KEY);
      if (id === undefined) {
        id = req.headers.get(header) ?? generate();
        ctx.set(KEY, id);
      }
      req.headers.set(header, id);
    });

    // Server: take the caller's id or make one, and echo it on the response.
    kernel.hooks.server.onRequest.tap(NAME, (req) => {
      req.ctx.set(KEY, req.headers.get(header) ?? generate());
    });
    kernel.hooks.server.onResponseHead.tap(NAME, (res, req) => {
      const id = req.ctx.get<string>(KEY);
      if (id !== undefined) res.headers.set(header, id);
    });
  },
});

// --- Fixtures ------------------------------------------------------------------------------

const kernels: Kernel[] = [];
const sockets: Duplex[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await Promise.all(kernels.splice(0).map((k) => k.close()));
});

async function boot(...plugins: PluginList): Promise<Kernel> {
  const kernel = createKernel();
  kernels.push(kernel);
  kernel.register(plugins);
  return kernel.ready();
}

function duplex(): PassThrough {
  const s = new PassThrough();
  sockets.push(s);
  return s;
}

const serverInfo: ServerInfo = { tls: false, options: {} };

function connectOptions(): ConnectOptions {
  return { protocol: 'https:', host: 'example.com', port: 443, servername: 'example.com', alpnProtocols: ['http/1.1'], httpVersion: 'auto', timeoutMs: 30_000 };
}

function exchange(request: Request): ServerExchange & { set: [string, string][] } {
  const set: [string, string][] = [];
  return {
    request,
    server: serverInfo,
    protocol: 'http/1.1',
    peerAddr: () => ({ address: '127.0.0.1', port: 50_000, family: 'IPv4' }),
    setHeader: (name, value) => void set.push([name, value]),
    set,
  };
}

/** A ClientSession stand-in: the shape the h2 plugin's session has. */
function fakeSession(): ClientSession {
  return {
    protocol: 'h2',
    closed: false,
    dispatch: async (req) => new Response(200, { request: req }),
    capacity: () => 100,
    isIdle: () => true,
    close: async () => {},
    destroy: () => {},
  };
}

// --- The table -------------------------------------------------------------------------

const CLIENT_HOOKS = ['onRequest', 'onResponseHead', 'onRetry', 'onUpgrade', 'poolKey', 'connect', 'alpnProtocols', 'session'];
const SERVER_HOOKS = ['connection', 'preamble', 'alpnProtocols', 'protocol', 'onUpgrade', 'onRequest', 'onResponseHead'];

describe('hook table', () => {
  it('has exactly the documented hooks, in frozen tables', () => {
    const kernel = createKernel();
    kernels.push(kernel);
    expect(Object.keys(kernel.hooks)).toEqual(['client', 'server']);
    expect(Object.keys(kernel.hooks.client)).toEqual(CLIENT_HOOKS);
    expect(Object.keys(kernel.hooks.server)).toEqual(SERVER_HOOKS);
    expect(Object.isFrozen(kernel.hooks)).toBe(true);
    expect(Object.isFrozen(kernel.hooks.client)).toBe(true);
    expect(Object.isFrozen(kernel.hooks.server)).toBe(true);
    expect(() => {
      (kernel.hooks.client as { onRequest: unknown }).onRequest = null;
    }).toThrow(TypeError);
  });

  it('declares at most three arguments per hook (tapable drops the rest silently)', () => {
    const kernel = createKernel();
    kernels.push(kernel);
    for (const table of [kernel.hooks.client, kernel.hooks.server]) {
      for (const hook of Object.values(table)) {
        const args = (hook as unknown as { _args: string[] })._args;
        expect(args.length).toBeGreaterThanOrEqual(1);
        expect(args.length).toBeLessThanOrEqual(3);
      }
    }
  });

  it('gives every kernel its own hooks', () => {
    const a = createKernel();
    const b = createKernel();
    kernels.push(a, b);
    expect(a.hooks.client.onRequest).not.toBe(b.hooks.client.onRequest);
  });
});

// --- Every hook fires -----------------------------------------------------------------------

describe('a plugin tapping every hook', () => {
  /** Taps all 13 hooks; records each call; bail hooks return what `answers` holds. */
  function probePlugin(log: unknown[][], answers: Partial<Record<string, unknown>> = {}) {
    const answer = (key: string): any => answers[key];
    return definePlugin({
      name: 'probe',
      register(kernel) {
        const { client, server } = kernel.hooks;
        client.onRequest.tap('probe', (req, ctx) => {
          log.push(['client.onRequest', req, ctx]);
          return answer('client.onRequest');
        });
        client.onResponseHead.tap('probe', (res, ctx) => {
          log.push(['client.onResponseHead', res, ctx]);
          return answer('client.onResponseHead');
        });
        client.onRetry.tap('probe', (state, ctx) => {
          log.push(['client.onRetry', state, ctx]);
          return answer('client.onRetry');
        });
        client.onUpgrade.tapPromise('probe', async (req, res, socket) => {
          log.push(['client.onUpgrade', req, res, socket]);
        });
        client.connect.tapPromise({ name: 'probe', stage: Stage.PROXY }, async (options, ctx) => {
          log.push(['client.connect', options, ctx]);
          return answer('client.connect');
        });
        client.alpnProtocols.tap('probe', (protocols, options) => {
          log.push(['client.alpnProtocols', [...protocols], options]);
          return ['h2', ...protocols];
        });
        client.session.tap('probe', (socket, info) => {
          log.push(['client.session', socket, info]);
          return answer('client.session');
        });
        server.connection.tap('probe', (socket, info) => {
          log.push(['server.connection', socket, info]);
        });
        server.alpnProtocols.tap('probe', (protocols, info) => {
          log.push(['server.alpnProtocols', [...protocols], info]);
          return ['h2', ...protocols];
        });
        server.protocol.tap('probe', (socket, info) => {
          log.push(['server.protocol', socket, info]);
          return answer('server.protocol');
        });
        server.onUpgrade.tapAsync('probe', (req, socket, info, callback) => {
          log.push(['server.onUpgrade', req, socket, info]);
          setImmediate(() => callback(null, answer('server.onUpgrade')));
        });
        server.onRequest.tap({ name: 'probe', stage: Stage.ROUTER }, (req, ex) => {
          log.push(['server.onRequest', req, ex]);
          return answer('server.onRequest');
        });
        server.onResponseHead.tap('probe', (res, req) => {
          log.push(['server.onResponseHead', res, req]);
        });
      },
    });
  }

  /** Fires every hook once, as the client and server will; returns each hook's result. */
  async function fireAll(t: TappedHooks) {
    const ctx = new RequestContext();
    const req = new Request('GET', '/items');
    const res = new Response(200, { request: req });
    const socket = duplex();
    const opts = connectOptions();
    const results: Record<string, unknown> = {};
    const c = t.client;
    const s = t.server;
    if (c.onRequest !== null) results['client.onRequest'] = await c.onRequest.promise(req, ctx);
    if (c.onResponseHead !== null) results['client.onResponseHead'] = await c.onResponseHead.promise(res, ctx);
    if (c.onRetry !== null) results['client.onRetry'] = await c.onRetry.promise({ attempt: 1, error: null, request: req, response: res }, ctx);
    if (c.onUpgrade !== null) results['client.onUpgrade'] = await c.onUpgrade.promise(req, new Response(101), socket);
    if (c.alpnProtocols !== null) opts.alpnProtocols = c.alpnProtocols.call(opts.alpnProtocols, opts);
    results['client.alpnProtocols'] = opts.alpnProtocols;
    if (c.connect !== null) results['client.connect'] = await c.connect.promise(opts, ctx);
    const info: SessionInfo = { alpnProtocol: 'h2', connect: opts };
    if (c.session !== null) results['client.session'] = c.session.call(socket, info);
    const tcp = new Socket();
    sockets.push(tcp);
    if (s.connection !== null) s.connection.call(tcp, serverInfo);
    results['server.alpnProtocols'] = s.alpnProtocols !== null ? s.alpnProtocols.call(['http/1.1'], serverInfo) : ['http/1.1'];
    const pinfo: ProtocolInfo = { alpnProtocol: null, head: Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), server: serverInfo };
    if (s.protocol !== null) results['server.protocol'] = s.protocol.call(socket, pinfo);
    const up = new Request('GET', '/ws', { Upgrade: 'websocket', Connection: 'upgrade' });
    // Hand-built: the server's host is left out (the tap here reads only the bytes).
    const uinfo = { head: new Uint8Array([1, 2]), server: serverInfo } as UpgradeInfo;
    if (s.onUpgrade !== null) results['server.onUpgrade'] = await s.onUpgrade.promise(up, socket, uinfo);
    if (s.onRequest !== null) results['server.onRequest'] = await s.onRequest.promise(req, exchange(req));
    if (s.onResponseHead !== null) s.onResponseHead.call(res, req);
    return { results, ctx, req, res, socket, opts, tcp };
  }

  it('sees every hook fire once, with its arguments', async () => {
    const log: unknown[][] = [];
    const kernel = await boot(probePlugin(log));
    const { ctx, req, res, socket, opts, tcp, results } = await fireAll(kernel.tapped);

    expect(log.map((e) => e[0])).toEqual([
      'client.onRequest',
      'client.onResponseHead',
      'client.onRetry',
      'client.onUpgrade',
      'client.alpnProtocols',
      'client.connect',
      'client.session',
      'server.connection',
      'server.alpnProtocols',
      'server.protocol',
      'server.onUpgrade',
      'server.onRequest',
      'server.onResponseHead',
    ]);
    const byHook = Object.fromEntries(log.map((e) => [e[0] as string, e.slice(1)]));
    expect(byHook['client.onRequest']).toEqual([req, ctx]);
    expect(byHook['client.onResponseHead']![0]).toBe(res);
    expect(byHook['client.onRetry']![0]).toMatchObject({ attempt: 1, error: null, request: req, response: res });
    expect(byHook['client.onUpgrade']![2]).toBe(socket);
    expect(byHook['client.alpnProtocols']).toEqual([['http/1.1'], opts]);
    expect(byHook['client.connect']![0]).toBe(opts);
    expect(byHook['client.session']![1]).toMatchObject({ alpnProtocol: 'h2' });
    expect(byHook['server.connection']).toEqual([tcp, serverInfo]);
    expect(byHook['server.alpnProtocols']).toEqual([['http/1.1'], serverInfo]);
    expect((byHook['server.protocol']![1] as ProtocolInfo).head.length).toBe(24);
    expect((byHook['server.onUpgrade']![2] as UpgradeInfo).head).toEqual(new Uint8Array([1, 2]));
    expect((byHook['server.onUpgrade']![2] as UpgradeInfo).server).toBe(serverInfo);
    expect((byHook['server.onRequest']![1] as ServerExchange).peerAddr().address).toBe('127.0.0.1');
    expect(byHook['server.onResponseHead']).toEqual([res, req]);

    // No tap answered: bail hooks give undefined, the kernel goes its default way.
    for (const k of ['client.onRequest', 'client.onResponseHead', 'client.onRetry', 'client.connect', 'client.session', 'server.protocol', 'server.onUpgrade', 'server.onRequest']) {
      expect(results[k], k).toBeUndefined();
    }
    // Waterfalls: the tap's list is the result.
    expect(results['client.alpnProtocols']).toEqual(['h2', 'http/1.1']);
    expect(results['server.alpnProtocols']).toEqual(['h2', 'http/1.1']);
  });

  it('lets every bail hook answer, and later taps of that hook do not run', async () => {
    const log: unknown[][] = [];
    const short = new Response(204);
    const redirect = new Request('GET', '/elsewhere');
    const decision = { retry: true, delayMs: 25, reason: 'status 503' };
    const tunnel = duplex();
    const session = fakeSession();
    const served = new Response(404);
    const answers = {
      'client.onRequest': short,
      'client.onResponseHead': redirect,
      'client.onRetry': decision,
      'client.connect': tunnel,
      'client.session': session,
      'server.protocol': true,
      'server.onUpgrade': true,
      'server.onRequest': served,
    };
    const late: string[] = [];
    const after = definePlugin({
      name: 'after',
      register(kernel) {
        // Later stages than the probe's taps: a bail must skip them.
        const note = (hook: string) => () => void late.push(hook);
        kernel.hooks.client.onRequest.tap({ name: 'after', stage: Stage.LAST }, note('client.onRequest'));
        kernel.hooks.client.onResponseHead.tap({ name: 'after', stage: Stage.LAST }, note('client.onResponseHead'));
        kernel.hooks.client.onRetry.tap({ name: 'after', stage: Stage.LAST }, note('client.onRetry'));
        kernel.hooks.client.connect.tap({ name: 'after', stage: Stage.LAST }, note('client.connect'));
        kernel.hooks.client.session.tap({ name: 'after', stage: Stage.LAST }, note('client.session'));
        kernel.hooks.server.protocol.tap({ name: 'after', stage: Stage.LAST }, note('server.protocol'));
        kernel.hooks.server.onUpgrade.tap({ name: 'after', stage: Stage.LAST }, note('server.onUpgrade'));
        kernel.hooks.server.onRequest.tap({ name: 'after', stage: Stage.LAST }, note('server.onRequest'));
      },
    });
    const kernel = await boot(probePlugin(log, answers), after);
    const { results } = await fireAll(kernel.tapped);
    expect(results['client.onRequest']).toBe(short);
    expect(results['client.onResponseHead']).toBe(redirect);
    expect(results['client.onRetry']).toBe(decision);
    expect(results['client.connect']).toBe(tunnel);
    expect(results['client.session']).toBe(session);
    expect(results['server.protocol']).toBe(true);
    expect(results['server.onUpgrade']).toBe(true);
    expect(results['server.onRequest']).toBe(served);
    expect(late).toEqual([]);
  });

  it('runs the later taps when no earlier tap answers', async () => {
    const late: string[] = [];
    const kernel = createKernel();
    kernels.push(kernel);
    kernel.hooks.client.onRequest.tap('first', () => undefined);
    kernel.hooks.client.onRequest.tap('second', () => void late.push('second'));
    await kernel.ready();
    await kernel.tapped.client.onRequest!.promise(new Request('GET', '/'), new RequestContext());
    expect(late).toEqual(['second']);
  });

  it('works through callAsync, synchronously when every tap is sync', () => {
    const kernel = createKernel();
    kernels.push(kernel);
    const short = new Response(204);
    kernel.hooks.client.onRequest.tap('answer', () => short);
    return kernel.ready().then(() => {
      let got: unknown;
      kernel.tapped.client.onRequest!.callAsync(new Request('GET', '/'), new RequestContext(), (err, res) => {
        expect(err).toBeNull();
        got = res;
      });
      expect(got).toBe(short); // no tick: callers need no Promise for sync taps
    });
  });

  it('the plugin-api.md example plugin adds and echoes X-Request-Id', async () => {
    let n = 0;
    const kernel = createKernel();
    kernels.push(kernel);
    await kernel.register(requestId, { generate: () => `id-${++n}` }).ready();
    const t = kernel.tapped;

    // Client: set on the first attempt, kept on the next (same context).
    const ctx = new RequestContext();
    const first = new Request('GET', '/');
    await t.client.onRequest!.promise(first, ctx);
    const retry = new Request('GET', '/');
    await t.client.onRequest!.promise(retry, ctx);
    expect(first.headers.get('X-Request-Id')).toBe('id-1');
    expect(retry.headers.get('X-Request-Id')).toBe('id-1');

    // Server: echo the caller's id; make one when there is none.
    for (const [incoming, expected] of [
      ['abc', 'abc'],
      [undefined, 'id-2'],
    ] as const) {
      const req = new Request('GET', '/', incoming ? { 'X-Request-Id': incoming } : {});
      const res = new Response(200);
      expect(await t.server.onRequest!.promise(req, exchange(req))).toBeUndefined();
      t.server.onResponseHead!.call(res, req);
      expect(res.headers.get('X-Request-Id')).toBe(expected);
    }
    expect(t.client.onResponseHead).toBeNull();
  });
});

// --- Stages ---------------------------------------------------------------------------

describe('stages', () => {
  it('order taps by stage, not by registration order', async () => {
    const order: string[] = [];
    const tapAt = (name: string, stage: number) =>
      definePlugin({
        name,
        register(kernel) {
          kernel.hooks.client.onResponseHead.tap({ name, stage }, () => void order.push(name));
        },
      });
    const plugins = [
      tapAt('retries', Stage.RETRY),
      tapAt('redirects', Stage.REDIRECT),
      tapAt('sse', Stage.SSE),
      tapAt('plain', Stage.DEFAULT),
      tapAt('decompress', Stage.DECOMPRESS),
      tapAt('cookies', Stage.COOKIES),
      tapAt('log', Stage.FIRST),
    ];
    const expected = ['log', 'cookies', 'decompress', 'plain', 'sse', 'redirects', 'retries'];
    for (const list of [plugins, [...plugins].reverse(), [plugins[3]!, plugins[0]!, plugins[6]!, plugins[1]!, plugins[5]!, plugins[2]!, plugins[4]!]]) {
      order.length = 0;
      const kernel = await boot(list);
      await kernel.tapped.client.onResponseHead!.promise(new Response(200), new RequestContext());
      expect(order).toEqual(expected);
    }
  });

  it('keep registration order within one stage', async () => {
    const order: string[] = [];
    const kernel = createKernel();
    kernels.push(kernel);
    for (const name of ['a', 'b', 'c']) kernel.hooks.server.onResponseHead.tap(name, () => void order.push(name));
    await kernel.ready();
    kernel.tapped.server.onResponseHead!.call(new Response(200), new Request('GET', '/'));
    expect(order).toEqual(['a', 'b', 'c']);
  });

  it('are frozen named numbers with gaps, in the documented order', () => {
    expect(Object.isFrozen(Stage)).toBe(true);
    const names = ['FIRST', 'PROXY', 'COOKIES', 'DECOMPRESS', 'DEFAULT', 'SSE', 'REDIRECT', 'RETRY', 'ROUTER', 'COMPRESS', 'LAST'] as const;
    const values = names.map((n) => Stage[n]);
    expect([...values].sort((a, b) => a - b)).toEqual(values);
    expect(Stage.DEFAULT).toBe(0);
  });
});

// --- tapped: null when untapped ---------------------------------------------------------

describe('kernel.tapped', () => {
  it('holds the hook when tapped and null when not', async () => {
    const kernel = await boot(requestId);
    const t = kernel.tapped;
    expect(Object.isFrozen(t) && Object.isFrozen(t.client) && Object.isFrozen(t.server)).toBe(true);
    expect(Object.keys(t.client)).toEqual(CLIENT_HOOKS);
    expect(Object.keys(t.server)).toEqual(SERVER_HOOKS);
    expect(t.client.onRequest).toBe(kernel.hooks.client.onRequest);
    expect(t.server.onRequest).toBe(kernel.hooks.server.onRequest);
    expect(t.server.onResponseHead).toBe(kernel.hooks.server.onResponseHead);
    const tappedNames = ['client.onRequest', 'server.onRequest', 'server.onResponseHead'];
    for (const [side, table] of Object.entries(t) as [string, Record<string, unknown>][]) {
      for (const [name, hook] of Object.entries(table)) {
        if (!tappedNames.includes(`${side}.${name}`)) expect(hook, `${side}.${name}`).toBeNull();
      }
    }
  });

  it('is all null for an empty kernel, and the same object on every read', async () => {
    const kernel = await boot();
    expect(Object.values(kernel.tapped.client).every((h) => h === null)).toBe(true);
    expect(Object.values(kernel.tapped.server).every((h) => h === null)).toBe(true);
    expect(kernel.tapped).toBe(kernel.tapped);
  });

  it('is not available before ready()', () => {
    const kernel = createKernel();
    kernels.push(kernel);
    expect(() => kernel.tapped).toThrow(ArgumentError);
    expect(() => kernel.tapped).toThrow(/ready\(\)/);
  });

  it('counts taps, not isUsed(): an interceptor alone leaves a hook null', async () => {
    const kernel = createKernel();
    kernels.push(kernel);
    const call = vi.fn();
    kernel.hooks.client.onRetry.intercept({ name: 'tracer', call });
    expect(kernel.hooks.client.onRetry.isUsed()).toBe(true);
    await kernel.ready();
    expect(kernel.tapped.client.onRetry).toBeNull();
  });

  it('means an untapped hook is never invoked on the request path', async () => {
    const kernel = await boot(requestId);
    const { client, server } = kernel.hooks;
    const untapped = [
      client.onResponseHead,
      client.onRetry,
      client.onUpgrade,
      client.connect,
      client.session,
      client.alpnProtocols,
      server.connection,
      server.alpnProtocols,
      server.protocol,
      server.onUpgrade,
    ];
    const spies = untapped.flatMap((hook) =>
      (['call', 'callAsync', 'promise'] as const).filter((m) => typeof (hook as unknown as Record<string, unknown>)[m] === 'function').map((m) => vi.spyOn(hook as never, m as never)),
    );
    const compiledBefore = untapped.map((h) => (h as unknown as { _x: unknown })._x);

    const { results } = await fireAllAsKernelWould(kernel.tapped);
    expect(results.requestHeader).toMatch(/^[0-9a-f-]{36}$/);
    for (const spy of spies) expect(spy).not.toHaveBeenCalled();
    // Nothing was even compiled for them: tapable compiles a caller on first call.
    expect(untapped.map((h) => (h as unknown as { _x: unknown })._x)).toEqual(compiledBefore);
  });

  /** A request through a "client" and a "server" that only call tapped hooks. */
  async function fireAllAsKernelWould(t: TappedHooks) {
    const ctx = new RequestContext();
    const req = new Request('GET', '/');
    const c = t.client;
    let res: Response | void = undefined;
    if (c.onRequest !== null) res = await c.onRequest.promise(req, ctx);
    const opts = connectOptions();
    if (c.alpnProtocols !== null) opts.alpnProtocols = c.alpnProtocols.call(opts.alpnProtocols, opts);
    if (c.connect !== null) await c.connect.promise(opts, ctx);
    if (c.session !== null) c.session.call(duplex(), { alpnProtocol: 'http/1.1', connect: opts });
    res ??= new Response(200, { request: req });
    if (c.onResponseHead !== null) await c.onResponseHead.promise(res, ctx);
    if (c.onRetry !== null) await c.onRetry.promise({ attempt: 1, error: null, request: req, response: res }, ctx);
    const s = t.server;
    if (s.connection !== null) s.connection.call(new Socket(), serverInfo);
    if (s.protocol !== null) s.protocol.call(duplex(), { alpnProtocol: null, head: new Uint8Array(0), server: serverInfo });
    if (s.onRequest !== null) await s.onRequest.promise(req, exchange(req));
    if (s.onResponseHead !== null) s.onResponseHead.call(res, req);
    return { results: { requestHeader: req.headers.get('X-Request-Id') } };
  }
});

// --- Closed after ready -----------------------------------------------------------------

describe('after ready()', () => {
  it('a late tap throws SWY_ERR_KERNEL_STARTED naming the tap', async () => {
    const kernel = await boot(requestId);
    let err: unknown;
    try {
      kernel.hooks.client.onRequest.tap('latecomer', () => undefined);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(PluginError);
    expect(err).toMatchObject({ code: 'SWY_ERR_KERNEL_STARTED', plugin: 'latecomer' });
    expect((err as Error).message).toMatch(/client\.onRequest.*"latecomer"/);
    expect(kernel.hooks.client.onRequest.taps.map((t) => t.name)).toEqual([NAME]);
  });

  it('every way of tapping is closed: tapAsync, tapPromise, options form, withOptions, intercept', async () => {
    const kernel = await boot();
    const { client, server } = kernel.hooks;
    const attempts: [string, () => void][] = [
      ['a', () => client.onRetry.tapAsync('a', (_s, _c, cb) => cb())],
      ['b', () => client.connect.tapPromise('b', async () => undefined)],
      ['c', () => server.onResponseHead.tap({ name: 'c', stage: Stage.LAST }, () => {})],
      ['d', () => server.connection.withOptions({ stage: Stage.FIRST }).tap('d', () => {})],
      ['e', () => client.alpnProtocols.intercept({ name: 'e', register: (tap) => tap })],
    ];
    for (const [name, attempt] of attempts) {
      expect(attempt).toThrow(PluginError);
      try {
        attempt();
      } catch (e) {
        expect(e).toMatchObject({ code: 'SWY_ERR_KERNEL_STARTED', plugin: name });
      }
    }
    expect(Object.values(kernel.tapped.client).every((h) => h === null)).toBe(true);
    expect(client.onRetry.taps).toHaveLength(0);
  });

  it('closes on close() too, even without ready()', async () => {
    const kernel = createKernel();
    await kernel.close();
    expect(() => kernel.hooks.server.onRequest.tap('x', () => undefined)).toThrow(/closed/);
  });
});

// --- Tap validation ---------------------------------------------------------------------------

describe('tapping', () => {
  it('needs a name, a function and a numeric stage', () => {
    const { hooks } = createKernel();
    expect(() => hooks.client.onRequest.tap('', () => undefined)).toThrow(ArgumentError);
    expect(() => hooks.client.onRequest.tap({ name: '  ' }, () => undefined)).toThrow(/needs a tap name/);
    expect(() => hooks.client.onRequest.tap('x', null as never)).toThrow(/fn must be a function/);
    expect(() => hooks.client.onRequest.tap({ name: 'x', stage: Number.NaN }, () => undefined)).toThrow(/stage must be a finite number/);
    expect(() => hooks.server.onResponseHead.tap({ name: 'x', stage: '10' as never }, () => {})).toThrow(ArgumentError);
    expect(hooks.client.onRequest.taps).toHaveLength(0);
  });

  it('keeps tapable refusing async taps on sync hooks', () => {
    const { hooks } = createKernel();
    expect(() => (hooks.server.onResponseHead as unknown as { tapPromise: (n: string, f: () => void) => void }).tapPromise('x', () => {})).toThrow(/not supported/);
  });

  it('rejects a tap function with more parameters than the hook has (types)', () => {
    const { hooks } = createKernel();
    // @ts-expect-error client.onRequest passes two arguments; a third parameter would always be undefined.
    hooks.client.onRequest.tap('x', (_req: Request, _ctx: RequestContext, _extra: string) => undefined);
    expect(hooks.client.onRequest.taps).toHaveLength(1);
  });
});

// --- Errors from taps -----------------------------------------------------------------------

describe('errors thrown by taps', () => {
  class CustomError extends Error {
    readonly code = 'X_CUSTOM';
  }

  it('carry the tap name and hook, keeping class, message and identity (sync tap, .call)', async () => {
    const boom = new CustomError('boom');
    const kernel = createKernel();
    kernels.push(kernel);
    kernel.hooks.server.onResponseHead.tap('fine', () => {});
    kernel.hooks.server.onResponseHead.tap('header-mangler', () => {
      throw boom;
    });
    await kernel.ready();
    let err: unknown;
    try {
      kernel.tapped.server.onResponseHead!.call(new Response(200), new Request('GET', '/'));
    } catch (e) {
      err = e;
    }
    expect(err).toBe(boom);
    expect(err).toBeInstanceOf(CustomError);
    expect((err as Error).message).toBe('boom');
    expect(tapErrorInfo(err)).toEqual({ hook: 'server.onResponseHead', tap: 'header-mangler' });
    expect((err as { tap?: string }).tap).toBe('header-mangler');
    expect(Object.keys(err as object)).not.toContain('tap'); // non-enumerable: logs and toEqual unchanged
  });

  it('carry the tap name through callAsync and .promise() (sync, promise and callback taps)', async () => {
    const kernel = createKernel();
    kernels.push(kernel);
    const { client } = kernel.hooks;
    client.onRequest.tap('sync-thrower', () => {
      throw new Error('sync');
    });
    client.onResponseHead.tapPromise('promise-rejecter', async () => {
      throw new Error('rejected');
    });
    client.onRetry.tapAsync('callback-erring', (_s, _c, cb) => cb(new Error('callback')));
    client.connect.tapPromise('sync-throw-in-promise-tap', () => {
      throw new Error('early');
    });
    await kernel.ready();
    const t = kernel.tapped.client;
    const ctx = new RequestContext();
    const req = new Request('GET', '/');

    const viaCallAsync = await new Promise<unknown>((resolve) => t.onRequest!.callAsync(req, ctx, (e) => resolve(e)));
    expect(tapErrorInfo(viaCallAsync)).toEqual({ hook: 'client.onRequest', tap: 'sync-thrower' });

    await expect(t.onRequest!.promise(req, ctx)).rejects.toMatchObject({ message: 'sync', tap: 'sync-thrower' });
    await expect(t.onResponseHead!.promise(new Response(200), ctx)).rejects.toMatchObject({ message: 'rejected', tap: 'promise-rejecter', hook: 'client.onResponseHead' });
    await expect(t.onRetry!.promise({ attempt: 1, error: null, request: req, response: null }, ctx)).rejects.toMatchObject({ message: 'callback', tap: 'callback-erring' });
    await expect(t.connect!.promise(connectOptions(), ctx)).rejects.toMatchObject({ message: 'early', tap: 'sync-throw-in-promise-tap' });
  });

  it('a callback tap that throws and calls back later answers once: its error', async () => {
    const kernel = createKernel();
    kernels.push(kernel);
    let late: ((err?: Error | null) => void) | null = null;
    kernel.hooks.client.onRetry.tapAsync('throws-then-calls', (_s, _c, cb) => {
      late = cb;
      throw new Error('thrown');
    });
    await kernel.ready();
    const req = new Request('GET', '/');
    const answers: unknown[] = [];
    kernel.tapped.client.onRetry!.callAsync({ attempt: 1, error: null, request: req, response: null }, new RequestContext(), (e) => answers.push(e));
    late!();
    await new Promise((resolve) => setImmediate(resolve));
    expect(answers).toHaveLength(1);
    expect(answers[0]).toMatchObject({ message: 'thrown', tap: 'throws-then-calls' });
  });

  it('wraps a thrown non-Error in a PluginError naming the tap', async () => {
    const kernel = createKernel();
    kernels.push(kernel);
    kernel.hooks.server.protocol.tap('stringly', () => {
      throw 'nope';
    });
    await kernel.ready();
    let err: unknown;
    try {
      kernel.tapped.server.protocol!.call(duplex(), { alpnProtocol: null, head: new Uint8Array(0), server: serverInfo });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(PluginError);
    expect(err).toMatchObject({ code: 'SWY_ERR_PLUGIN_TAP', plugin: 'stringly', cause: 'nope' });
    expect((err as Error).message).toMatch(/tap "stringly" on server\.protocol threw a non-Error value: nope/);
  });

  it('keep the innermost tap when an error crosses nested hooks', async () => {
    const kernel = createKernel();
    kernels.push(kernel);
    const { client } = kernel.hooks;
    client.alpnProtocols.tap('inner', () => {
      throw new Error('deep');
    });
    client.connect.tap('outer', (opts) => {
      client.alpnProtocols.call(opts.alpnProtocols, opts);
    });
    await kernel.ready();
    await expect(kernel.tapped.client.connect!.promise(connectOptions(), new RequestContext())).rejects.toMatchObject({ tap: 'inner', hook: 'client.alpnProtocols' });
  });

  it('tapErrorInfo is undefined for errors that did not come from a tap', () => {
    expect(tapErrorInfo(new Error('x'))).toBeUndefined();
    expect(tapErrorInfo('x')).toBeUndefined();
    expect(tapErrorInfo(null)).toBeUndefined();
  });
});

// Type-level: the tables are what plugin-api.md documents.
function _typeChecks(hooks: KernelHooks): void {
  // Bail taps may return nothing.
  hooks.client.onRequest.tap('t', () => {});
  // @ts-expect-error onResponseHead taps return a Request (redirect), not a Response.
  hooks.client.onResponseHead.tap('t', () => new Response(200));
  // @ts-expect-error server.protocol taps answer `true` or nothing.
  hooks.server.protocol.tap('t', () => false);
  // Waterfall taps return the list.
  hooks.server.alpnProtocols.tap('t', (list) => list);
}
void _typeChecks;
