/**
 * Where the router leaves its match: on the request's context, under the keys the reference
 * uses (`route`, `params`), so `req.context.get('params')` works too.
 */
import { ArgumentError, Request, type RequestContext } from '../../kernel/index.js';

/** Context key of the matched pattern. */
export const ROUTE_KEY = 'route';
/** Context key of the path variables. */
export const PARAMS_KEY = 'params';

/** @internal Records a match on a request's context. */
export function setRouteData(ctx: RequestContext, pattern: string, params: Record<string, string> | undefined): void {
  ctx.set(ROUTE_KEY, pattern);
  // Clear what an outer router stored, so getParams describes this route only.
  if (params !== undefined || ctx.get(PARAMS_KEY) !== undefined) ctx.set(PARAMS_KEY, params);
}

function checkRequest(req: unknown, fn: string): asserts req is Request {
  if (!(req instanceof Request)) throw new ArgumentError(`${fn}(req) takes a Request (stream.request for a stream handler), got ${req === null ? 'null' : typeof req}`);
}

/** The registered pattern of the route that matched `req` (such as `/users/{id}`), or undefined. */
export function getRoute(req: Request): string | undefined {
  checkRequest(req, 'getRoute');
  return req.ctx.get<string>(ROUTE_KEY);
}

/** The path variables of the matched route, or undefined when no route matched or it has none. */
export function getParams(req: Request): Record<string, string> | undefined {
  checkRequest(req, 'getParams');
  return req.ctx.get<Record<string, string>>(PARAMS_KEY);
}

/** One path variable, or `defaultValue` (undefined unless given) when absent. */
export function getParam(req: Request, name: string): string | undefined;
export function getParam<D>(req: Request, name: string, defaultValue: D): string | D;
export function getParam<D>(req: Request, name: string, defaultValue?: D): string | D | undefined {
  checkRequest(req, 'getParam');
  const p = req.ctx.get<Record<string, string>>(PARAMS_KEY);
  return p !== undefined && Object.hasOwn(p, name) ? p[name] : defaultValue;
}
