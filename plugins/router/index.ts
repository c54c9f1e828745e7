/**
 * Routing: `Router` (a segment trie with `{id}`, `{name:regex}`, `*` and a trailing `**`),
 * the `register` forms, `getRoute`/`getParams`/`getParam`, and the `router` plugin
 * (`kernel.router`, `kernel.route`).
 *
 * Decisions where the reference is silent (find-my-way / fastify behaviour):
 * - `/a` and `/a/` are different paths unless `ignoreTrailingSlash: true`;
 * - HEAD requests fall back to GET routes (fastify's `exposeHeadRoutes`); `Allow` on a 405
 *   lists HEAD wherever GET is listed;
 * - variables and `*` match one non-empty segment; `**` matches the rest of the path after
 *   its slash, possibly empty (`/files/**` takes `/files/` but not `/files`), captured as `**`;
 * - segments are percent-decoded before matching (`%2F` stays inside its segment); a
 *   malformed escape is matched as written; paths are case-sensitive;
 * - the same method on the same path shape twice is an `ArgumentError`;
 * - a path matched by a route for another method falls through to a route for this method
 *   elsewhere in the tree before answering 405 (as with find-my-way's per-method trees).
 */
export { Router, type RouterOptions, type RouteInfo } from './router.js';
export { register } from './register.js';
export { getRoute, getParams, getParam, ROUTE_KEY, PARAMS_KEY } from './route-data.js';
export { router, type RouterPluginOptions, type RouteMethod } from './plugin.js';
export { DUAL, type DualHandler, type Middleware, type RouteHandler } from './types.js';
export type { FindResult, Route } from './tree.js';
