/**
 * Plugin `redirects`: the client follows 301/302/303/307/308 (303 turns a POST into a GET),
 * reports each hop to `trace`, stops on `redirect: false`, and throws
 * `TooManyRedirectsError` past `redirectLimit` (default 10).
 * Starts its own server on 127.0.0.1, talks to it, prints what happened and exits.
 *
 *   node --import tsx examples/redirects.ts
 */
import * as HTTP from '../index.js';

const server = await HTTP.serve(
  (req) => {
    const path = new HTTP.URI(req.target).path;
    const to = (status: number, location: string) => new HTTP.Response(status, '', { headers: { Location: location } });
    if (path === '/old') return to(301, '/moved/here');
    if (path === '/moved/here') return to(307, '/final');
    if (path === '/orders' && req.method === 'POST') return to(303, '/orders/42');
    if (path === '/loop') return to(302, '/loop');
    return new HTTP.Response(200, `${req.method} ${path}`);
  },
  { host: '127.0.0.1', port: 0 },
);
const base = `http://127.0.0.1:${server.port}`;

const hops: string[] = [];
const trace = (e: HTTP.ClientEvent): void => {
  if (e instanceof HTTP.RedirectEvent) hops.push(`${e.status} ${new URL(e.from).pathname} -> ${new URL(e.to).pathname}`);
};

const res = await HTTP.get(`${base}/old`, { trace });
console.log(`GET /old: ${res.status} "${res.text()}" after ${hops.join(', ')}`);

const created = await HTTP.post(`${base}/orders`, { body: 'item=1' });
console.log(`POST /orders: ${created.status} "${created.text()}" (303 means GET the new location)`);

const raw = await HTTP.get(`${base}/old`, { redirect: false });
console.log(`redirect: false: ${raw.status} Location: ${raw.headers.get('Location')}`);

try {
  await HTTP.get(`${base}/loop`, { redirectLimit: 3 });
} catch (err) {
  if (!(err instanceof HTTP.TooManyRedirectsError)) throw err;
  console.log(`GET /loop: ${err.name}: ${err.message}`);
}

HTTP.close(HTTP.getDefaultClient());
await server.close();
