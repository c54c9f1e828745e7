/**
 * The reference's `register!` forms as one function: router first, or handler first (the
 * form that reads well with a function written inline), each with or without a method.
 */
import { ArgumentError } from '../../kernel/index.js';
import { Router } from './router.js';
import type { RouteHandler } from './types.js';

/**
 * Adds a route to `router` and returns the router:
 * `register(router, method, path, handler)`, `register(router, path, handler)` (every
 * method), `register(handler, router, method, path)`, `register(handler, router, path)`.
 */
export function register<H extends RouteHandler>(router: Router<H>, method: string, path: string, handler: H): Router<H>;
export function register<H extends RouteHandler>(router: Router<H>, path: string, handler: H): Router<H>;
export function register<H extends RouteHandler>(handler: H, router: Router<H>, method: string, path: string): Router<H>;
export function register<H extends RouteHandler>(handler: H, router: Router<H>, path: string): Router<H>;
export function register<H extends RouteHandler>(a: Router<H> | H, b: string | Router<H>, c?: string | H, d?: string | H): Router<H> {
  // Router first unless the second argument is the router (a Router may itself be a handler).
  if (b instanceof Router) {
    const handler = a as H;
    return typeof d === 'string' ? b.register(c as string, d, handler) : b.register(c as string, handler);
  }
  if (a instanceof Router && typeof b === 'string') {
    return typeof c === 'string' ? a.register(b, c, d as H) : a.register(b, c as H);
  }
  throw new ArgumentError('register takes (router, [method,] path, handler) or (handler, router, [method,] path)');
}
