/**
 * Writing a third-party plugin: `route-metrics` counts server requests per route and status
 * and times them, through two server hooks, and exposes the numbers as a kernel decoration
 * (`kernel.routeMetrics`) and as a `GET /metrics` route. It depends on the `router` plugin
 * (for `getRoute` and `kernel.route`); the kernel loads that first or fails with a clear error.
 * Outside this repository, import from 'switchyard/kernel' and 'switchyard/plugins'.
 * Starts a server on 127.0.0.1, sends it some traffic, prints the counts and exits.
 *
 *   node --import tsx examples/custom-plugin.ts
 */
import { performance } from 'node:perf_hooks';
import { Response, Stage, createKernel, definePlugin } from '../kernel/index.js';
import { getParam, getRoute, presets } from '../plugins/index.js';

/** What the plugin decorates the kernel with. */
export interface RouteMetrics {
  /** `{ 'GET /users/{id}': { count, statuses: { 200: n }, meanMs } }`, a copy. */
  snapshot(): Record<string, { count: number; statuses: Record<number, number>; meanMs: number }>;
}

// Types the decoration for every kernel (plugin-api.md, "Decorations").
declare module '../kernel/index.js' {
  interface Kernel {
    readonly routeMetrics: RouteMetrics;
  }
}

const NAME = 'route-metrics';
const STARTED = Symbol('route-metrics.started');

/** The plugin. Options: `path` of the metrics route (default `/metrics`), `false` for none. */
export const routeMetrics = definePlugin({
  name: NAME,
  dependencies: ['router'],
  register(kernel, options: { path?: string | false }) {
    const table = new Map<string, { count: number; statuses: Record<number, number>; totalMs: number }>();

    // First of all onRequest taps: note the start time on the request's context.
    kernel.hooks.server.onRequest.tap({ name: NAME, stage: Stage.FIRST }, (req) => {
      req.ctx.set(STARTED, performance.now());
    });
    // Last of the onResponseHead taps: the router has put the matched pattern on the context.
    kernel.hooks.server.onResponseHead.tap({ name: NAME, stage: Stage.LAST }, (res, req) => {
      const key = `${req.method} ${getRoute(req) ?? '(no route)'}`;
      const row = table.get(key) ?? { count: 0, statuses: {}, totalMs: 0 };
      row.count++;
      row.statuses[res.status] = (row.statuses[res.status] ?? 0) + 1;
      row.totalMs += performance.now() - (req.ctx.get<number>(STARTED) ?? performance.now());
      table.set(key, row);
    });

    const metrics: RouteMetrics = {
      snapshot: () => Object.fromEntries([...table].map(([k, r]) => [k, { count: r.count, statuses: { ...r.statuses }, meanMs: Number((r.totalMs / r.count).toFixed(3)) }])),
    };
    kernel.decorate('routeMetrics', metrics);
    const path = options.path ?? '/metrics';
    if (path !== false) kernel.route('GET', path, () => new Response(200, JSON.stringify(metrics.snapshot(), null, 2), { headers: { 'Content-Type': 'application/json' } }));
  },
});

// ---- using it --------------------------------------------------------------------------

const kernel = await createKernel().register(presets.defaults).register(routeMetrics, {}).ready();
kernel.route('GET', '/users/{id}', (req) => new Response(200, `user ${getParam(req, 'id')}`));
kernel.route('POST', '/users', () => new Response(201, 'created'));
const server = await kernel.serve(() => new Response(404, 'no such page'), { host: '127.0.0.1', port: 0 });

const client = kernel.client({ statusException: false });
const base = `http://127.0.0.1:${server.port}`;
for (const id of [1, 2, 3]) await client.get(`${base}/users/${id}`);
await client.post(`${base}/users`, { body: '{}' });
await client.get(`${base}/nowhere`);
await client.delete(`${base}/users/1`); // a known path, wrong method: the router's 405

for (const [route, m] of Object.entries(kernel.routeMetrics.snapshot())) {
  console.log(`${route.padEnd(20)} count=${m.count} statuses=${JSON.stringify(m.statuses)}`);
}
console.log(`GET /metrics answers ${(await client.get(`${base}/metrics`)).text().split('\n').length} lines of JSON`);

await kernel.close(); // closes the client and the server made from the kernel
