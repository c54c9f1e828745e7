/**
 * The `client.poolKey` hook: what a plugin adds to the pool key of a call. Calls whose values
 * differ never share a connection, calls with equal ones do, and the value of the call that
 * opens a connection reaches the `client.connect` taps; a stack without a tap keys by origin.
 * Observed from the server side (accepted connections).
 */
import { describe, expect, it } from 'vitest';
import { createKernel, definePlugin, getCallOptions, Response, Transport, type CallOptions } from '../../../kernel/index.js';
import { closeKernelAfter } from '../../helpers/cleanup.js';
import { newClient, startServer, text } from '../../helpers/client.js';

/** A plugin whose `tenant` call option keeps each tenant's connections apart; records what its connect tap saw. */
function tenants(seen: unknown[]) {
  return definePlugin({
    name: 'tenants',
    callOptions: { tenant: (v) => (typeof v === 'string' || (typeof v === 'object' && v !== null) ? null : 'a string or an object') },
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
});
