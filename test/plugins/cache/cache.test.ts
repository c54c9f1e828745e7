/**
 * The cache plugin against real loopback servers (the project's own): hits, revalidation and
 * the 304 update, Vary, invalidation, per-call modes, stale-while-revalidate, stale-if-error,
 * request coalescing, and the memory store's bounds through the client.
 */
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { Client, createKernel, Response, type ClientEvent, type Request } from '../../../kernel/index.js';
import { cache, MemoryStore, retries, type CacheOptions, type CacheStore } from '../../../plugins/index.js';
import { bootKernel, onCleanup, startServer } from '../../helpers/redirects.js';
import { closeNetServerAfter } from '../../helpers/cleanup.js';

type Handler = (req: Request, n: number) => Response | Promise<Response>;

/** A server answering with `handler`, counting the requests per path; `seen` holds each request's headers. */
async function origin(handler: Handler): Promise<{ base: string; count: () => number; seen: Record<string, string>[] }> {
  let n = 0;
  const seen: Record<string, string>[] = [];
  const { port } = await startServer(async (req) => {
    n++;
    seen.push(Object.fromEntries([...req.headers].map(([k, v]) => [k.toLowerCase(), v])));
    return handler(req, n);
  });
  return { base: `http://127.0.0.1:${port}`, count: () => n, seen };
}

async function cachingClient(options: CacheOptions = {}, events?: ClientEvent[]): Promise<Client> {
  const kernel = createKernel().register(cache, options);
  await kernel.ready();
  onCleanup(() => kernel.close());
  const client = new Client({ kernel, statusException: false, ...(events !== undefined ? { trace: (e: ClientEvent) => events.push(e) } : {}) });
  onCleanup(() => client.close());
  return client;
}

const ok = (body: string, headers: Record<string, string>): Response => new Response(200, body, { headers: { 'Content-Type': 'text/plain', ...headers } });

describe('cache: hits and misses', () => {
  it('a fresh response answers the next call without the network, with Age, status and trace events', async () => {
    const o = await origin((_r, n) => ok(`v${n}`, { 'Cache-Control': 'max-age=60' }));
    const events: ClientEvent[] = [];
    const c = await cachingClient({}, events);
    const a = await c.get(`${o.base}/x`);
    const b = await c.get(`${o.base}/x`);
    expect(a.cacheStatus).toBe('miss');
    expect(b.cacheStatus).toBe('hit');
    expect(b.text()).toBe('v1');
    expect(b.headers.get('Age')).toMatch(/^\d+$/);
    expect(o.count()).toBe(1);
    expect(events.map((e) => e.type).filter((t) => t.startsWith('Cache'))).toEqual(['CacheMissEvent', 'CacheHitEvent']);
  });

  it('a fresh stored GET answers a HEAD, with its fields and no body; a stale one does not', async () => {
    const o = await origin((req, n) => ok(req.method === 'HEAD' ? '' : `v${n}`, { 'Cache-Control': req.target === '/stale' ? 'max-age=0' : 'max-age=60', 'X-N': String(n) }));
    const c = await cachingClient();
    await c.get(`${o.base}/g`);
    const h = await c.head(`${o.base}/g`);
    expect(h.cacheStatus).toBe('hit');
    expect(h.headers.get('X-N')).toBe('1');
    expect(h.body == null || (h.body as Uint8Array).length === 0).toBe(true);
    expect(o.count()).toBe(1);
    await c.get(`${o.base}/stale`);
    expect((await c.head(`${o.base}/stale`)).cacheStatus).toBe('miss');
  });

  it('does not store no-store, nor responses to POST, nor 500 without explicit freshness', async () => {
    const o = await origin((req, n) => (req.target === '/err' ? new Response(500, `e${n}`) : ok(`v${n}`, { 'Cache-Control': req.target === '/ns' ? 'no-store' : 'max-age=60' })));
    const c = await cachingClient();
    await c.get(`${o.base}/ns`);
    expect((await c.get(`${o.base}/ns`)).text()).toBe('v2');
    await c.post(`${o.base}/p`, null, 'x');
    expect((await c.post(`${o.base}/p`, null, 'x')).cacheStatus).toBe('bypass');
    await c.get(`${o.base}/err`);
    expect((await c.get(`${o.base}/err`)).text()).toBe('e6');
  });

  it('heuristic freshness from Last-Modified for a 200, none for a 302 without explicit freshness', async () => {
    const lm = new Date(Date.now() - 86_400_000).toUTCString();
    const o = await origin((req, n) => (req.target === '/r' ? new Response(302, `r${n}`, { headers: { Location: '/x', 'Last-Modified': lm } }) : ok(`v${n}`, { 'Last-Modified': lm })));
    const c = await cachingClient();
    await c.get(`${o.base}/h`);
    expect((await c.get(`${o.base}/h`)).cacheStatus).toBe('hit');
    await c.get(`${o.base}/r`);
    const r = await c.get(`${o.base}/r`);
    expect(r.cacheStatus).toBe('miss');
  });
});

describe('cache: revalidation', () => {
  it('a stale entry is revalidated with If-None-Match; a 304 updates the stored headers and serves the stored body', async () => {
    const o = await origin((req, n) =>
      req.headers.get('If-None-Match') === '"v1"'
        ? new Response(304, null, { headers: { ETag: '"v1"', 'Cache-Control': 'max-age=60', 'X-Rev': String(n) } })
        : ok('body-1', { ETag: '"v1"', 'Cache-Control': 'max-age=0' }),
    );
    const events: ClientEvent[] = [];
    const c = await cachingClient({}, events);
    await c.get(`${o.base}/e`);
    const b = await c.get(`${o.base}/e`);
    expect(b.status).toBe(200);
    expect(b.cacheStatus).toBe('revalidated');
    expect(b.text()).toBe('body-1');
    expect(b.headers.get('X-Rev')).toBe('2');
    expect(o.seen[1]!['if-none-match']).toBe('"v1"');
    expect(events.some((e) => e.type === 'CacheRevalidatedEvent')).toBe(true);
    // The 304's max-age=60 now applies: a hit.
    expect((await c.get(`${o.base}/e`)).cacheStatus).toBe('hit');
    expect(o.count()).toBe(2);
  });

  it('If-Modified-Since from Last-Modified; a 200 replaces the entry', async () => {
    const lm = new Date(Date.now() - 1000).toUTCString();
    const o = await origin((_req, n) => ok(`v${n}`, { 'Last-Modified': lm, 'Cache-Control': 'no-cache' }));
    const c = await cachingClient();
    await c.get(`${o.base}/m`);
    const b = await c.get(`${o.base}/m`);
    expect(o.seen[1]!['if-modified-since']).toBe(lm);
    expect(b.text()).toBe('v2');
    expect(b.cacheStatus).toBe('miss');
  });

  it("a retried revalidation is still the cache's: the 304 after a 503 serves the stored body", async () => {
    const o = await origin((req, n) => {
      if (n === 2) return new Response(503, 'busy', { headers: { 'Retry-After': '0' } });
      if (req.headers.get('If-None-Match') === '"v1"') return new Response(304, null, { headers: { ETag: '"v1"' } });
      return ok('body-1', { ETag: '"v1"', 'Cache-Control': 'no-cache' });
    });
    const kernel = createKernel().register([cache, retries]);
    await kernel.ready();
    onCleanup(() => kernel.close());
    const c = new Client({ kernel, statusException: false });
    onCleanup(() => c.close());
    await c.get(`${o.base}/r`);
    const b = await c.get(`${o.base}/r`);
    expect(o.count()).toBe(3);
    expect(b.status).toBe(200);
    expect(b.cacheStatus).toBe('revalidated');
    expect(b.text()).toBe('body-1');
  });

  it('a caller conditional request passes through: its 304 reaches the caller', async () => {
    const o = await origin((req) => (req.headers.has('If-None-Match') ? new Response(304, null, { headers: { ETag: '"a"' } }) : ok('x', { ETag: '"a"', 'Cache-Control': 'max-age=60' })));
    const c = await cachingClient();
    await c.get(`${o.base}/c`);
    const r = await c.get(`${o.base}/c`, { headers: { 'If-None-Match': '"a"' } });
    expect(r.status).toBe(304);
    expect(r.cacheStatus).toBe('bypass');
  });
});

describe('cache: Vary', () => {
  it('one variant per selecting header value; Vary with several headers', async () => {
    const o = await origin((req, n) => ok(`${req.headers.get('Accept-Language') ?? '-'}/${req.headers.get('X-A') ?? '-'}/${n}`, { 'Cache-Control': 'max-age=60', Vary: 'Accept-Language, X-A' }));
    const c = await cachingClient();
    const get = (l: string, a: string) => c.get(`${o.base}/v`, { headers: { 'Accept-Language': l, 'X-A': a } });
    expect((await get('en', '1')).text()).toBe('en/1/1');
    expect((await get('fr', '1')).text()).toBe('fr/1/2');
    expect((await get('en', '2')).text()).toBe('en/2/3');
    expect((await get('en', '1')).text()).toBe('en/1/1');
    expect((await get('fr', '1')).text()).toBe('fr/1/2');
    expect(o.count()).toBe(3);
  });

  it('Vary: * is never served from the store', async () => {
    const o = await origin((_r, n) => ok(`v${n}`, { 'Cache-Control': 'max-age=60', Vary: '*' }));
    const c = await cachingClient();
    await c.get(`${o.base}/s`);
    expect((await c.get(`${o.base}/s`)).text()).toBe('v2');
  });
});

describe('cache: invalidation', () => {
  for (const method of ['POST', 'PUT', 'DELETE']) {
    it(`${method} to the URL invalidates it; Location and Content-Location on the same origin too`, async () => {
      const o = await origin((req, n) =>
        req.method === 'GET' ? ok(`v${n}`, { 'Cache-Control': 'max-age=60' }) : new Response(200, 'done', { headers: { Location: '/loc', 'Content-Location': '/cl' } }),
      );
      const c = await cachingClient();
      for (const p of ['/t', '/loc', '/cl', '/other']) await c.get(`${o.base}${p}`);
      await c.request(method, `${o.base}/t`);
      expect((await c.get(`${o.base}/t`)).cacheStatus).toBe('miss');
      expect((await c.get(`${o.base}/loc`)).cacheStatus).toBe('miss');
      expect((await c.get(`${o.base}/cl`)).cacheStatus).toBe('miss');
      expect((await c.get(`${o.base}/other`)).cacheStatus).toBe('hit');
    });
  }

  it('an error answer to POST does not invalidate', async () => {
    const o = await origin((req, n) => (req.method === 'GET' ? ok(`v${n}`, { 'Cache-Control': 'max-age=60' }) : new Response(500, 'no')));
    const c = await cachingClient();
    await c.get(`${o.base}/t`);
    await c.post(`${o.base}/t`, null, 'x');
    expect((await c.get(`${o.base}/t`)).cacheStatus).toBe('hit');
  });
});

describe('cache: per-call modes and request directives', () => {
  it('false and no-store bypass; reload stores; no-cache revalidates; force-cache serves stale', async () => {
    const o = await origin((_r, n) => ok(`v${n}`, { 'Cache-Control': 'max-age=60' }));
    const c = await cachingClient();
    const u = `${o.base}/m`;
    expect((await c.get(u, { cache: false })).cacheStatus).toBe('bypass');
    expect((await c.get(u)).text()).toBe('v2');
    expect((await c.get(u, { cache: 'no-store' })).text()).toBe('v3');
    expect((await c.get(u)).text()).toBe('v2');
    expect((await c.get(u, { cache: 'reload' })).text()).toBe('v4');
    expect((await c.get(u)).text()).toBe('v4');
    expect((await c.get(u, { cache: 'no-cache' })).text()).toBe('v5');
    expect(o.count()).toBe(5);
  });

  it('force-cache and only-if-cached use a stale entry; only-if-cached without one is 504', async () => {
    const o = await origin((_r, n) => ok(`v${n}`, { 'Cache-Control': 'max-age=0' }));
    const c = await cachingClient();
    expect((await c.get(`${o.base}/o`, { cache: 'only-if-cached' })).status).toBe(504);
    await c.get(`${o.base}/o`);
    expect((await c.get(`${o.base}/o`, { cache: 'force-cache' })).text()).toBe('v1');
    expect((await c.get(`${o.base}/o`, { cache: 'only-if-cached' })).text()).toBe('v1');
    const r = await c.get(`${o.base}/o`, { headers: { 'Cache-Control': 'only-if-cached' } });
    expect(r.status).toBe(504);
    expect(o.count()).toBe(1);
  });

  it('an unknown cache mode is refused, naming the values', async () => {
    const c = await cachingClient();
    await expect(c.get('http://127.0.0.1:1/', { cache: 'sometimes' as never })).rejects.toThrow(/only-if-cached/);
  });

  it('a client without the plugin says which plugin the option needs', async () => {
    const kernel = await bootKernel([]);
    const c = new Client({ kernel });
    onCleanup(() => c.close());
    await expect(c.get('http://127.0.0.1:1/', { cache: 'reload' })).rejects.toThrow(/cache/);
  });

  it('request max-age=0 revalidates a fresh entry', async () => {
    const o = await origin((_r, n) => ok(`v${n}`, { 'Cache-Control': 'max-age=60' }));
    const c = await cachingClient();
    await c.get(`${o.base}/a`);
    expect((await c.get(`${o.base}/a`, { headers: { 'Cache-Control': 'max-age=0' } })).text()).toBe('v2');
  });
});

describe('cache: fetch', () => {
  it("maps init.cache onto the plugin's modes, and Request.cache too", async () => {
    const o = await origin((_r, n) => ok(`v${n}`, { 'Cache-Control': 'max-age=60' }));
    const c = await cachingClient();
    expect(await (await c.fetch(`${o.base}/f`)).text()).toBe('v1');
    expect(await (await c.fetch(`${o.base}/f`)).text()).toBe('v1');
    expect(await (await c.fetch(`${o.base}/f`, { cache: 'reload' })).text()).toBe('v2');
    expect(await (await c.fetch(`${o.base}/f`, { cache: 'no-store' })).text()).toBe('v3');
    expect(await (await c.fetch(new globalThis.Request(`${o.base}/f`, { cache: 'no-cache' } as RequestInit))).text()).toBe('v4');
    expect((await c.fetch(`${o.base}/none`, { cache: 'only-if-cached', mode: 'same-origin' })).status).toBe(504);
  });

  it('a client without the plugin ignores init.cache, as Node does', async () => {
    const o = await origin((_r, n) => ok(`v${n}`, { 'Cache-Control': 'max-age=60' }));
    const kernel = createKernel();
    await kernel.ready();
    onCleanup(() => kernel.close());
    const c = new Client({ kernel });
    onCleanup(() => c.close());
    expect((await c.fetch(`${o.base}/f`, { cache: 'force-cache' })).status).toBe(200);
  });
});

describe('cache: private and shared', () => {
  it('shared mode refuses private and Authorization-bound responses; private mode stores them', async () => {
    const o = await origin((req, n) => ok(`v${n}`, { 'Cache-Control': req.target === '/p' ? 'private, max-age=60' : 'max-age=60' }));
    const shared = await cachingClient({ mode: 'shared' });
    await shared.get(`${o.base}/p`);
    expect((await shared.get(`${o.base}/p`)).cacheStatus).toBe('miss');
    await shared.get(`${o.base}/a`, { headers: { Authorization: 'Bearer t' } });
    expect((await shared.get(`${o.base}/a`, { headers: { Authorization: 'Bearer t' } })).cacheStatus).toBe('miss');
    const priv = await cachingClient();
    await priv.get(`${o.base}/p`);
    expect((await priv.get(`${o.base}/p`)).cacheStatus).toBe('hit');
  });
});

describe('cache: Set-Cookie', () => {
  it('a shared cache never hands one caller the cookie the origin set for another; a private one keeps it for its user', async () => {
    const o = await origin((_r, n) => ok(`v${n}`, { 'Cache-Control': 'public, s-maxage=60, max-age=60', 'Set-Cookie': `sid=user${n}` }));
    const shared = await cachingClient({ mode: 'shared' });
    const first = await shared.get(`${o.base}/me`);
    const second = await shared.get(`${o.base}/me`);
    expect([first.headers.get('Set-Cookie'), second.headers.get('Set-Cookie')]).toEqual(['sid=user1', 'sid=user2']);
    expect(second.cacheStatus).toBe('miss');
    const priv = await cachingClient();
    await priv.get(`${o.base}/mine`);
    const again = await priv.get(`${o.base}/mine`);
    expect([again.cacheStatus, again.headers.get('Set-Cookie')]).toEqual(['hit', 'sid=user3']);
  });
});

describe('cache: stale-* (RFC 5861)', () => {
  it('stale-if-error serves the stored response for a 503', async () => {
    let fail = false;
    const o = await origin((_r, n) => (fail ? new Response(503, 'down') : ok(`v${n}`, { 'Cache-Control': 'max-age=0, stale-if-error=600' })));
    const c = await cachingClient();
    await c.get(`${o.base}/s`);
    fail = true;
    const r = await c.get(`${o.base}/s`);
    expect(r.status).toBe(200);
    expect(r.cacheStatus).toBe('stale');
    expect(r.text()).toBe('v1');
  });

  it('stale-if-error after a network error', async () => {
    // A port that accepts and closes at once: the revalidation fails on the network.
    const srv = closeNetServerAfter(net.createServer((s) => s.destroy()));
    const store = new MemoryStore();
    const first = await origin((_r, n) => ok(`v${n}`, { 'Cache-Control': 'max-age=0, stale-if-error=600' }));
    const c = await cachingClient({ store });
    await c.get(`${first.base}/s`);
    // Move the stored entry to the failing origin's URL.
    await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
    const port = (srv.address() as net.AddressInfo).port;
    const [e] = await store.get(`GET ${first.base}/s`);
    const url = `http://127.0.0.1:${port}/s`;
    const w = store.open(`GET ${url}`, e!.variant, { ...e!.head, url });
    for await (const chunk of e!.body()) await w.write(chunk);
    await w.commit();
    const r = await c.get(url);
    expect(r.cacheStatus).toBe('stale');
    expect(r.text()).toBe('v1');
  });

  it('no stale-if-error: the 503 reaches the caller', async () => {
    let fail = false;
    const o = await origin((_r, n) => (fail ? new Response(503, 'down') : ok(`v${n}`, { 'Cache-Control': 'max-age=0' })));
    const c = await cachingClient();
    await c.get(`${o.base}/s`);
    fail = true;
    expect((await c.get(`${o.base}/s`)).status).toBe(503);
  });

  it('stale-while-revalidate answers at once from the store and revalidates in the background', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let bgSeen!: () => void;
    const bg = new Promise<void>((r) => (bgSeen = r));
    const o = await origin(async (_r, n) => {
      if (n === 2) {
        bgSeen();
        await gate;
      }
      return ok(`v${n}`, { 'Cache-Control': 'max-age=0, stale-while-revalidate=600' });
    });
    const c = await cachingClient();
    await c.get(`${o.base}/w`);
    const r = await c.get(`${o.base}/w`);
    expect(r.cacheStatus).toBe('stale');
    expect(r.text()).toBe('v1');
    await bg; // the background revalidation reached the server, and is held there
    expect((await c.get(`${o.base}/w`)).cacheStatus).toBe('stale'); // still answered at once, no second revalidation
    release();
    // The background call stored v2: wait for the store to have it, then it answers.
    for (;;) {
      const r = await c.get(`${o.base}/w`, { cache: 'only-if-cached' });
      if (r.text() === 'v2') break;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    expect(o.count()).toBe(2);
  });
});

describe('cache: concurrency', () => {
  it('100 concurrent requests for one stale URL make one revalidation; a hit meanwhile does not wait', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const o = await origin(async (req, n) => {
      if (req.target === '/fresh') return ok('f', { 'Cache-Control': 'max-age=600' });
      if (n > 2) await gate;
      if (req.headers.get('If-None-Match') === '"e"') return new Response(304, null, { headers: { ETag: '"e"', 'Cache-Control': 'max-age=600' } });
      return ok('stale-body', { ETag: '"e"', 'Cache-Control': 'max-age=0' });
    });
    const inner = new MemoryStore();
    let gets = 0;
    let allLooked!: () => void;
    const looked = new Promise<void>((r) => (allLooked = r));
    const store: CacheStore = {
      get: async (k) => {
        const r = await inner.get(k);
        if (k.endsWith('/s') && ++gets === 101) allLooked();
        return r;
      },
      open: (k, v, h) => inner.open(k, v, h),
      update: (k, v, h) => inner.update(k, v, h),
      delete: (k) => inner.delete(k),
    };
    const c = await cachingClient({ store });
    await c.get(`${o.base}/s`);
    await c.get(`${o.base}/fresh`);
    const calls = Array.from({ length: 100 }, () => c.get(`${o.base}/s`));
    await looked;
    // Every call looked its entry up; the one revalidation is held at the server. A fresh hit does not wait.
    const h = await c.get(`${o.base}/fresh`);
    expect(h.cacheStatus).toBe('hit');
    release();
    const all = await Promise.all(calls);
    expect(all.every((r) => r.text() === 'stale-body' && r.status === 200)).toBe(true);
    expect(o.seen.filter((s) => s['if-none-match'] === '"e"').length).toBe(1);
    expect(o.count()).toBe(3);
  });

  it("a call waiting on another call's revalidation fails at once when canceled", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let held!: () => void;
    const reached = new Promise<void>((r) => (held = r));
    const o = await origin(async (_req, n) => {
      if (n === 2) {
        held();
        await gate;
      }
      return ok('x', { ETag: '"e"', 'Cache-Control': 'max-age=0' });
    });
    const c = await cachingClient();
    await c.get(`${o.base}/s`);
    const leader = c.get(`${o.base}/s`);
    await reached;
    const ac = new AbortController();
    const follower = c.get(`${o.base}/s`, { signal: ac.signal });
    ac.abort();
    await expect(follower).rejects.toThrow();
    release();
    expect((await leader).status).toBe(200);
  });
});

describe('cache: the memory store through the client', () => {
  it('a body over the entry bound is not stored', async () => {
    const o = await origin((_r, n) => ok(`${n}`.padEnd(2000, 'x'), { 'Cache-Control': 'max-age=60' }));
    const c = await cachingClient({ store: new MemoryStore({ maxBytes: 10_000, maxEntryBytes: 1000 }) });
    await c.get(`${o.base}/big`);
    expect((await c.get(`${o.base}/big`)).cacheStatus).toBe('miss');
  });

  it('evicts the least recently used entry by count and by bytes', async () => {
    const o = await origin((req, n) => ok(`${req.target}:${n}`.padEnd(100, '.'), { 'Cache-Control': 'max-age=60' }));
    const store = new MemoryStore({ maxEntries: 2, maxBytes: 1000 });
    const c = await cachingClient({ store });
    await c.get(`${o.base}/a`);
    await c.get(`${o.base}/b`);
    await c.get(`${o.base}/a`); // a is now the most recent
    await c.get(`${o.base}/c`); // evicts b
    expect((await c.get(`${o.base}/a`)).cacheStatus).toBe('hit');
    expect((await c.get(`${o.base}/b`)).cacheStatus).toBe('miss');
    const bytes = new MemoryStore({ maxEntries: 100, maxBytes: 250, maxEntryBytes: 250 });
    const c2 = await cachingClient({ store: bytes });
    for (const p of ['/a', '/b', '/c']) await c2.get(`${o.base}${p}`);
    expect(bytes.totalBytes).toBeLessThanOrEqual(250);
    expect(bytes.size).toBe(2);
    expect((await c2.get(`${o.base}/a`)).cacheStatus).toBe('miss');
  });

  it('a truncated body is not stored', async () => {
    const srv = closeNetServerAfter(
      net.createServer((s) => {
        s.once('data', () => s.end('HTTP/1.1 200 OK\r\nCache-Control: max-age=60\r\nContent-Length: 100\r\n\r\nonly-part'));
      }),
    );
    await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
    const store = new MemoryStore();
    const c = await cachingClient({ store });
    const url = `http://127.0.0.1:${(srv.address() as net.AddressInfo).port}/t`;
    await expect(c.get(url, { retry: false } as never)).rejects.toThrow();
    expect(store.size).toBe(0);
  });

  it('a caller that stops reading leaves no entry', async () => {
    const o = await origin(() => ok('y'.repeat(200_000), { 'Cache-Control': 'max-age=60' }));
    const store = new MemoryStore();
    const c = await cachingClient({ store });
    const stopped = c.open('GET', `${o.base}/half`, async (stream) => {
      await stream.startRead();
      expect((await stream.read())!.length).toBeGreaterThan(0);
      throw new Error('caller stops');
    });
    await expect(stopped).rejects.toThrow('caller stops');
    expect(store.size).toBe(0);
    expect((await c.get(`${o.base}/half`)).cacheStatus).toBe('miss');
    expect((await c.get(`${o.base}/half`)).cacheStatus).toBe('hit');
  });
});
