/**
 * `inject()`: requests through the whole server stack with no socket, for tests. A kernel with
 * the default plugins, routes on it, middleware around the handler; `kernel.inject` runs a
 * request on a server that never listens, `server.inject` on one made with `new Server` (or
 * returned by `serve`). Prints what came back, closes the kernel, exits.
 *
 *   node --import tsx examples/inject.ts
 */
import * as HTTP from '../index.js';
import { presets } from '../plugins/index.js';

const kernel = await HTTP.createKernel().register(presets.defaults).ready();
kernel.route('GET', '/users/{id:\\d+}', (req) => HTTP.Response.json({ id: Number(HTTP.getParam(req, 'id')) }));
kernel.route('POST', '/sum', (req) => {
  const { a, b } = JSON.parse(new TextDecoder().decode(req.body as Uint8Array)) as { a: number; b: number };
  return HTTP.Response.json({ sum: a + b });
});
const fallback = HTTP.Handlers.handlerTimeout(1000)(() => new HTTP.Response(404, 'no such page'));

// kernel.inject: the handler on a server of this kernel that never listens.
const user = await kernel.inject(fallback, '/users/7');
console.log(`GET /users/7 -> ${user.status} ${user.text()} (${user.headers.get('Content-Type')})`);
const sum = await kernel.inject(fallback, { method: 'POST', url: '/sum', payload: { a: 19, b: 23 } });
console.log(`POST /sum -> ${sum.status} ${sum.text()}`);
const missing = await kernel.inject(fallback, { url: '/nope', query: { q: 'x' } });
console.log(`GET /nope?q=x -> ${missing.status} ${missing.text()}`);

// server.inject: a server of your own, with its options (here a body limit) and onError.
const server = new HTTP.Server({
  kernel,
  maxBodyBytes: 16,
  handler: (req: HTTP.Request) => {
    if (req.target === '/boom') throw new Error('boom');
    return new HTTP.Response(200, `got ${req.body?.length ?? 0} bytes from ${req.headers.get('Cookie') ?? 'nobody'}`);
  },
  onError: (err) => console.log(`onError: ${(err as Error).message}`),
});
console.log(`POST /upload -> ${(await server.inject({ method: 'POST', url: '/upload', body: 'tiny', cookies: { user: 'ada' } })).text()}`);
console.log(`POST /upload (too big) -> ${(await server.inject({ method: 'POST', url: '/upload', body: 'x'.repeat(100) })).status}`);
console.log(`GET /boom -> ${(await server.inject('/boom')).status}`);

// An upgrade needs a socket: a clear error instead of a hang.
try {
  await server.inject({ url: '/chat', headers: { Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==' } });
} catch (err) {
  console.log(`upgrade: ${(err as HTTP.NeedsSocketError).code}`);
}

await server.close();
await kernel.close();
