/**
 * Plugin `router`: method and path routing with `{name}`, `{name:regex}`, `*` and a trailing
 * `**`; 404 for no route, 405 with `Allow` for a wrong method. A `Router` is a handler
 * (`HTTP.serve(router)`); the plugin also gives every kernel `kernel.route(...)`, dispatched
 * before the server's own handler. Starts its servers on 127.0.0.1, calls them, prints, exits.
 *
 *   node --import tsx examples/router.ts
 */
import * as HTTP from '../index.js';
import { presets } from '../plugins/index.js';

const json = (value: unknown): HTTP.Response => new HTTP.Response(200, JSON.stringify(value), { headers: { 'Content-Type': 'application/json' } });

// 1. A Router as the server's handler.
const router = new HTTP.Router()
  .get('/users/{id:\\d+}', (req) => json({ route: HTTP.getRoute(req), id: Number(HTTP.getParam(req, 'id')) }))
  .get('/posts/{year:\\d{4}}/{slug}', (req) => json({ route: HTTP.getRoute(req), params: HTTP.getParams(req) }))
  .get('/files/**', (req) => json({ route: HTTP.getRoute(req), rest: HTTP.getParam(req, '**') }))
  .post('/users', (req) => new HTTP.Response(201, `created from ${req.body?.length ?? 0} bytes`));

const api = await HTTP.serve(router, { host: '127.0.0.1', port: 0 });
const base = `http://127.0.0.1:${api.port}`;
const call = async (method: string, path: string): Promise<void> => {
  const res = await HTTP.request(method, base + path, { body: method === 'POST' ? 'name=ada' : undefined, statusException: false });
  const allow = res.headers.get('Allow');
  console.log(`${method} ${path} -> ${res.status} ${res.text()}${allow !== undefined ? `(Allow: ${allow})` : ''}`);
};
await call('GET', '/users/42');
await call('GET', '/posts/2024/hello-world');
await call('GET', '/files/docs/a/b.txt');
await call('POST', '/users');
await call('GET', '/users/ada'); // the regex does not match: 404
await call('DELETE', '/users/42'); // path known, method not: 405

// 2. The plugin: routes on the kernel answer first; other paths reach the server's handler.
const kernel = await HTTP.createKernel().register(presets.defaults).ready();
kernel.route('GET', '/health', () => new HTTP.Response(200, 'ok'));
const app = await kernel.serve(() => new HTTP.Response(200, 'the server handler'), { host: '127.0.0.1', port: 0 });
for (const path of ['/health', '/anything-else']) {
  console.log(`kernel.route: GET ${path} -> ${(await HTTP.get(`http://127.0.0.1:${app.port}${path}`)).text()}`);
}

HTTP.close(HTTP.getDefaultClient());
await api.close();
await kernel.close();
