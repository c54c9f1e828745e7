/**
 * The `client.poolKey` hook: what a plugin adds to the pool key of a call. Calls whose values
 * differ never share a connection, calls with equal ones do, and the value of the call that
 * opens a connection reaches the `client.connect` taps; a stack without a tap keys by origin.
 * Observed from the server side (accepted connections).
 */
import { describe, expect, it } from 'vitest';
import { createKernel, definePlugin, getCallOptions, Request, Response, Transport, upgradeRequest, type CallOptions, type ClientOptions, type TransportOptions } from '../../../kernel/index.js';
import { closeKernelAfter } from '../../helpers/cleanup.js';
import { newClient, startServer, text } from '../../helpers/client.js';

/** A plugin whose `tenant` call option keeps each tenant's connections apart (a Transport may carry it); records what its connect tap saw. */
function tenants(seen: unknown[]) {
  return definePlugin({
    name: 'tenants',
    callOptions: { tenant: (v) => (v === null || typeof v === 'string' || (typeof v === 'object' && v !== null) ? null : 'a string, an object or null') },
    transportOptions: ['tenant'],
    register(kernel) {
      kernel.hooks.client.poolKey.tap('tenants', (key, ctx) => (getCallOptions(ctx) as { tenant?: unknown }).tenant ?? key);
      kernel.hooks.client.connect.tap('tenants', (o) => void seen.push(o.poolKey));
    },
  });
}

const as = (tenant: unknown): CallOptions => ({ tenant }) as CallOptions;

describe('client.poolKey', () => {
  it('calls whose values differ never share a connection; equal values do; connect taps see the value', async () => {
    const s = await startServer((req) => new Response(200, req.target));
    const seen: unknown[] = [];
    const kernel = closeKernelAfter(await createKernel().register(tenants(seen)).ready());
    const c = newClient({ kernel });
    expect(text(await c.get(`${s.origin}/a1`, as('a')))).toBe('/a1');
    expect(text(await c.get(`${s.origin}/a2`, as('a')))).toBe('/a2');
    expect(s.connections).toBe(1);
    expect(text(await c.get(`${s.origin}/b1`, as('b')))).toBe('/b1');
    expect(s.connections).toBe(2);
    await c.get(`${s.origin}/a3`, as('a'));
    await c.get(`${s.origin}/b2`, as('b'));
    await c.get(`${s.origin}/none`);
    expect(s.connections).toBe(3);
    expect(seen).toEqual(['a', 'b', undefined]);
  });

  it('objects count by identity, and a string never matches an object', async () => {
    const s = await startServer(() => new Response(200, 'ok'));
    const seen: unknown[] = [];
    const kernel = closeKernelAfter(await createKernel().register(tenants(seen)).ready());
    const c = newClient({ kernel });
    const one = { name: 'one' };
    await c.get(`${s.origin}/`, as(one));
    await c.get(`${s.origin}/`, as(one));
    expect(s.connections).toBe(1);
    await c.get(`${s.origin}/`, as({ name: 'one' }));
    expect(s.connections).toBe(2);
    // The key of an object is its id: a string that spells the same never reaches its connections.
    await c.get(`${s.origin}/`, as('@1'));
    await c.get(`${s.origin}/`, as('=@1'));
    expect(s.connections).toBe(4);
    expect(seen[0]).toBe(one);
  });

  it('a Transport shared by kernels with and without the tap keeps their connections apart', async () => {
    const s = await startServer(() => new Response(200, 'ok'));
    const kernel = closeKernelAfter(await createKernel().register(tenants([])).ready());
    const t = new Transport();
    await newClient({ kernel, transport: t }).get(`${s.origin}/`, as('a'));
    await newClient({ transport: t }).get(`${s.origin}/`);
    expect(s.connections).toBe(2);
    // Without a tap, calls share by origin as always.
    await newClient({ transport: t }).get(`${s.origin}/`);
    expect(s.connections).toBe(2);
    t.close();
  });

  it("a Transport carries a plugin's call option it declares as its clients' default, under each client's own", async () => {
    const s = await startServer((req) => new Response(200, req.target));
    const seen: unknown[] = [];
    const kernel = closeKernelAfter(await createKernel().register(tenants(seen)).ready());
    const t = new Transport({ tenant: 'eu' } as TransportOptions);
    expect(t.callDefaults).toEqual({ tenant: 'eu' });
    await newClient({ kernel, transport: t }).get(`${s.origin}/`);
    // Given as undefined, the client's own option leaves the transport's standing; null wins over it.
    await newClient({ kernel, transport: t, tenant: undefined } as ClientOptions).get(`${s.origin}/`);
    await newClient({ kernel, transport: t, tenant: 'us' } as ClientOptions).get(`${s.origin}/`);
    await newClient({ kernel, transport: t, tenant: null } as ClientOptions).get(`${s.origin}/`);
    expect(seen).toEqual(['eu', 'us', undefined]);
    expect(s.connections).toBe(3);
    // The value is checked as the client's, by the plugin that declares it.
    expect(() => newClient({ kernel, transport: new Transport({ tenant: 5 } as TransportOptions) })).toThrow('new Client() (its transport): tenant must be a string, an object or null, got 5');
    t.close();
  });

  it("an upgrade handshake's connection, outside the pool, is keyed by the same taps from its call options", async () => {
    const s = await startServer(() => new Response(200, 'no upgrade here'));
    const seen: unknown[] = [];
    const kernel = closeKernelAfter(await createKernel().register(tenants(seen)).ready());
    const upgrade = async (callOptions?: CallOptions): Promise<void> => {
      const req = new Request('GET', '/', { headers: { Connection: 'Upgrade', Upgrade: 'echo' }, host: `127.0.0.1:${s.port}` });
      req.url = `${s.origin}/`;
      const { socket } = await upgradeRequest(req, { kernel, ...(callOptions !== undefined ? { callOptions } : {}) });
      socket.destroy();
    };
    await upgrade(as('eu'));
    await upgrade();
    expect(seen).toEqual(['eu', undefined]);
  });

  it('a Transport refuses any other name, with the nearest valid one', () => {
    tenants([]);
    expect(() => new Transport({ tenat: 'eu' } as TransportOptions)).toThrow('new Transport(): unknown option "tenat" (did you mean tenant?)');
    expect(() => new Transport({ retries: 2 } as TransportOptions)).toThrow(/^new Transport\(\): unknown option "retries"/);
    expect(() => definePlugin({ name: 'loose', callOptions: { a: () => null }, transportOptions: ['b'], register() {} })).toThrow(
      /^definePlugin\('loose'\): transportOptions lists "b", which is not one of its callOptions/,
    );
  });
});
