/**
 * `Router`: maps method and path to a handler through a compiled segment trie (tree.ts).
 *
 * A Router is itself a handler, callable with a `Request` (then it is a request handler:
 * `serve(router)`) or with a `Stream` (a stream handler: `listen(router)`); it tells which by
 * its argument, and calls its routes' handlers with the same argument. The match is left on
 * the request's context for `getRoute`, `getParams` and `getParam`.
 */
import { ArgumentError, checkOptionKeys, isToken, Request, type RequestHandler, type Response, type Stream, type StreamHandler } from '../../kernel/index.js';
import { emptyStreamResponse, methodNotAllowedResponse, notFoundResponse, withAllow } from './defaults.js';
import { targetPath } from './path.js';
import { setRouteData } from './route-data.js';
import { RouteTree, type FindResult, type Route } from './tree.js';
import { DUAL, type DualHandler, type Middleware, type RouteHandler } from './types.js';

/** Options of {@link Router}. */
export interface RouterOptions<H extends RouteHandler = RequestHandler> {
  /** Answers a path with no route. Default: an empty 404. */
  notFound?: H | null;
  /** Answers a path whose routes do not take the method. Default: an empty 405; `Allow` is added either way. */
  methodNotAllowed?: H | null;
  /** Wraps each handler as it is registered (not `notFound`/`methodNotAllowed`). */
  middleware?: Middleware<H> | null;
  /** Match `/a/` as `/a` (and the reverse for patterns). Default false: they differ, as in find-my-way. */
  ignoreTrailingSlash?: boolean;
}

/** A method and pattern as registered (`method` null: every method). */
export interface RouteInfo {
  /** Upper-case method, or null for a route that takes every method. */
  readonly method: string | null;
  /** The pattern, such as `/users/{id}`. */
  readonly pattern: string;
}

/** A Router is callable: a request handler and a stream handler in one. */
// eslint-disable-next-line @typescript-eslint/no-unused-vars -- merged with the class below to make it callable; the parameter must match the class's
export interface Router<H extends RouteHandler = RequestHandler> extends DualHandler {}

/**
 * Routes requests by method and path. `new Router({ notFound, methodNotAllowed, middleware })`
 * or positionally `new Router(notFound, methodNotAllowed, middleware)`. The type parameter
 * is the kind of handler its routes take: `Router` (request handlers, for `serve`) or
 * `Router<StreamHandler>` (for `listen`).
 */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging -- see the interface above
export class Router<H extends RouteHandler = RequestHandler> {
  declare private tree: RouteTree<H>;
  declare private notFound: H | null;
  declare private methodNotAllowed: H | null;
  declare private middleware: Middleware<H> | null;

  /** Makes a router; see the class notes for the forms. */
  // NoInfer: the handler kind comes from the type argument (default: request handlers), not
  // from whatever a notFound function happens to look like.
  constructor(options?: RouterOptions<NoInfer<H>>);
  constructor(notFound?: NoInfer<H> | null, methodNotAllowed?: NoInfer<H> | null, middleware?: Middleware<NoInfer<H>> | null);
  constructor(a?: RouterOptions<H> | H | null, b?: H | null, c?: Middleware<H> | null) {
    const opts: RouterOptions<H> =
      typeof a === 'function' || a === null || (a === undefined && (b != null || c != null)) ? { notFound: a as H | null | undefined, methodNotAllowed: b, middleware: c } : checkOptions(a);
    for (const k of ['notFound', 'methodNotAllowed', 'middleware'] as const) {
      const v = opts[k];
      if (v != null && typeof v !== 'function') throw new ArgumentError(`Router ${k} must be a function, got ${typeof v}`);
    }
    // The instance is a function, so `serve(router)` and `listen(router)` take it as it is.
    const self = ((input: Request | Stream) => self.handle(input)) as unknown as Router<H>;
    Object.setPrototypeOf(self, new.target.prototype);
    Object.defineProperty(self, 'name', { value: 'router' }); // what stack traces and inspect show
    self.tree = new RouteTree<H>({ ignoreTrailingSlash: opts.ignoreTrailingSlash === true });
    self.notFound = opts.notFound ?? null;
    self.methodNotAllowed = opts.methodNotAllowed ?? null;
    self.middleware = opts.middleware ?? null;
    return self;
  }

  /**
   * Adds a route: `register(method, path, handler)`, or `register(path, handler)` for every
   * method. The same method and path shape twice is an `ArgumentError`. Returns the router.
   */
  register(method: string, path: string, handler: H): this;
  register(path: string, handler: H): this;
  register(a: string, b: string | H, c?: H): this {
    if (typeof b === 'string') this.add(a, b, c);
    else this.add(null, a, b);
    return this;
  }

  /** `register('GET', path, handler)`; HEAD requests fall back to GET routes. */
  get(path: string, handler: H): this {
    return this.register('GET', path, handler);
  }
  /** `register('HEAD', path, handler)`. */
  head(path: string, handler: H): this {
    return this.register('HEAD', path, handler);
  }
  /** `register('POST', path, handler)`. */
  post(path: string, handler: H): this {
    return this.register('POST', path, handler);
  }
  /** `register('PUT', path, handler)`. */
  put(path: string, handler: H): this {
    return this.register('PUT', path, handler);
  }
  /** `register('PATCH', path, handler)`. */
  patch(path: string, handler: H): this {
    return this.register('PATCH', path, handler);
  }
  /** `register('DELETE', path, handler)`. */
  delete(path: string, handler: H): this {
    return this.register('DELETE', path, handler);
  }
  /** `register('OPTIONS', path, handler)`. */
  options(path: string, handler: H): this {
    return this.register('OPTIONS', path, handler);
  }
  /** `register('QUERY', path, handler)`. */
  query(path: string, handler: H): this {
    return this.register('QUERY', path, handler);
  }
  /** `register(path, handler)`: every method. */
  all(path: string, handler: H): this {
    return this.register(path, handler);
  }

  /** Number of registered routes. */
  get size(): number {
    return this.tree.routes.length;
  }

  /** The registered routes, in registration order. */
  get routes(): RouteInfo[] {
    return this.tree.routes.map((r) => ({ method: r.method, pattern: r.pattern }));
  }

  /**
   * Looks a request up without running anything: the route's pattern, handler and
   * variables, or the methods the path would take, or null. The plugin uses it; so can tests.
   */
  match(method: string, target: string): FindResult<H> | null {
    const path = targetPath(target);
    return path === null ? null : this.tree.find(method, path);
  }

  /** Handles a request (request handler) or a stream (stream handler). */
  handle(request: Request): Response | Promise<Response>;
  handle(stream: Stream): Promise<void>;
  handle(input: Request | Stream): Response | Promise<Response> | Promise<void>;
  handle(input: Request | Stream): Response | Promise<Response> | Promise<void> {
    if (input instanceof Request) return this.handleRequest(input);
    const req = (input as Stream | null | undefined)?.request;
    if (!(req instanceof Request)) {
      throw new ArgumentError(`a Router handles a Request (serve) or a Stream (listen), got ${input === null ? 'null' : typeof input}`);
    }
    return this.handleStream(input as Stream, req);
  }

  private add(method: string | null, path: string, handler: H | undefined): void {
    if (method !== null) {
      if (typeof method !== 'string' || !isToken(method)) throw new ArgumentError(`route method must be a method name such as "GET", got ${JSON.stringify(method)}`);
      method = method === '*' ? null : method.toUpperCase();
    }
    if (typeof handler !== 'function') throw new ArgumentError(`route ${method ?? '*'} ${JSON.stringify(path)}: handler must be a function, got ${typeof handler}`);
    let h = handler;
    if (this.middleware !== null) {
      h = this.middleware(handler);
      if (typeof h !== 'function') throw new ArgumentError(`the router's middleware returned ${typeof h} for route ${JSON.stringify(path)}, not a handler function`);
    }
    this.tree.insert(method, path, h);
  }

  private find(req: Request): FindResult<H> | null {
    const path = targetPath(req.target);
    return path === null ? null : this.tree.find(req.method, path);
  }

  private handleRequest(req: Request): Response | Promise<Response> {
    const found = this.find(req);
    if (found === null) {
      const nf = this.notFound as RequestHandler | null;
      return nf === null ? notFoundResponse() : nf(req);
    }
    if (found.route === null) {
      const allow = found.allow.join(', ');
      const mna = this.methodNotAllowed as RequestHandler | null;
      if (mna === null) return methodNotAllowedResponse(allow);
      const res = mna(req);
      return res instanceof Promise ? res.then((r) => withAllow(r, allow)) : withAllow(res, allow);
    }
    const route: Route<H> = found.route;
    setRouteData(req.ctx, route.pattern, found.params);
    return (route.handler as RequestHandler)(req);
  }

  private async handleStream(stream: Stream, req: Request): Promise<void> {
    const found = this.find(req);
    if (found === null) {
      const nf = this.notFound as StreamHandler | null;
      if (nf === null) await emptyStreamResponse(stream, 404);
      else await nf(stream);
      return;
    }
    if (found.route === null) {
      stream.setHeader('Allow', found.allow.join(', '));
      const mna = this.methodNotAllowed as StreamHandler | null;
      if (mna === null) await emptyStreamResponse(stream, 405);
      else await mna(stream);
      return;
    }
    setRouteData(req.ctx, found.route.pattern, found.params);
    await (found.route.handler as StreamHandler)(stream);
  }
}

// Routers are functions: keep call/apply/bind and the rest of Function.prototype.
Object.setPrototypeOf(Router.prototype, Function.prototype);
Object.defineProperty(Router.prototype, DUAL, { value: true });

const ROUTER_OPTIONS: ReadonlySet<string> = new Set(['notFound', 'methodNotAllowed', 'middleware', 'ignoreTrailingSlash'] satisfies (keyof RouterOptions)[]);

function checkOptions<H extends RouteHandler>(a: unknown): RouterOptions<H> {
  if (a === undefined) return {};
  if (typeof a !== 'object' || a === null) throw new ArgumentError(`Router takes an options object or handler functions, got ${typeof a}`);
  checkOptionKeys(a, ROUTER_OPTIONS, 'new Router()');
  return a as RouterOptions<H>;
}
