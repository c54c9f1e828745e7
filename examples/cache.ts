/**
 * Plugin `cache`: an HTTP cache for the client (RFC 9111). A fresh response answers the next
 * call without the network, a stale one is revalidated with its ETag (a 304 serves the stored
 * body), `Vary` keeps one copy per variant, a POST invalidates, and `cache: 'reload'` skips
 * the lookup. Starts its own server on 127.0.0.1, talks to it, prints what happened and exits.
 *
 *   node --import tsx examples/cache.ts
 */
import * as HTTP from '../index.js';
import { cache, CacheHitEvent, CacheMissEvent, CacheRevalidatedEvent, MemoryStore, presets } from '../plugins/index.js';

const served: string[] = [];
const server = await HTTP.serve(
  (req) => {
    served.push(`${req.method} ${req.target}`);
    if (req.target === '/news') {
      // Always revalidated (no-cache), cheap to confirm with the ETag.
      if (req.headers.get('If-None-Match') === '"v1"') return new HTTP.Response(304, null, { headers: { ETag: '"v1"', 'Cache-Control': 'no-cache' } });
      return new HTTP.Response(200, 'today: the cache works', { headers: { ETag: '"v1"', 'Cache-Control': 'no-cache' } });
    }
    if (req.target === '/greeting') {
      const lang = req.headers.get('Accept-Language') ?? 'en';
      return new HTTP.Response(200, lang === 'fr' ? 'bonjour' : 'hello', { headers: { 'Cache-Control': 'max-age=60', Vary: 'Accept-Language' } });
    }
    if (req.method === 'POST') return new HTTP.Response(204, null);
    return new HTTP.Response(200, `catalog #${served.length}`, { headers: { 'Cache-Control': 'max-age=60' } });
  },
  { host: '127.0.0.1', port: 0 },
);
const base = `http://127.0.0.1:${server.port}`;

const kernel = await HTTP.createKernel()
  .register(presets.defaults)
  .register(cache, { store: new MemoryStore({ maxEntries: 100, maxBytes: 1 << 20 }) })
  .ready();
const client = new HTTP.Client({ kernel });

const events: string[] = [];
const trace = (e: HTTP.ClientEvent): void => {
  if (e instanceof CacheHitEvent || e instanceof CacheMissEvent || e instanceof CacheRevalidatedEvent) events.push(e.type);
};
const show = async (label: string, call: Promise<HTTP.Response>): Promise<void> => {
  const res = await call;
  console.log(`${label.padEnd(28)} ${res.status} ${String(res.cacheStatus).padEnd(11)} "${res.text()}"`);
};

await show('GET /catalog', client.get(`${base}/catalog`, { trace }));
await show('GET /catalog again', client.get(`${base}/catalog`, { trace }));
await show('GET /news', client.get(`${base}/news`, { trace }));
await show('GET /news again', client.get(`${base}/news`, { trace }));
await show('GET /greeting (fr)', client.get(`${base}/greeting`, { headers: { 'Accept-Language': 'fr' } }));
await show('GET /greeting (en)', client.get(`${base}/greeting`, { headers: { 'Accept-Language': 'en' } }));
await show('GET /greeting (fr) again', client.get(`${base}/greeting`, { headers: { 'Accept-Language': 'fr' } }));
await show('POST /catalog', client.post(`${base}/catalog`, { body: 'new item' }));
await show('GET /catalog after POST', client.get(`${base}/catalog`));
await show("GET /catalog cache: 'reload'", client.get(`${base}/catalog`, { cache: 'reload' }));
console.log(`trace: ${events.join(', ')}`);
console.log(`the server saw ${served.length} of 10 requests: ${served.join(', ')}`);

client.close();
await kernel.close();
await server.close();
