/**
 * The `router` plugin: a kernel-wide Router for request handlers, reached as
 * `kernel.router` and `kernel.route(method, path, handler)`, dispatched by one
 * `server.onRequest` tap at `Stage.ROUTER` (after auth-like taps).
 *
 * - A request whose route matches is answered by that route's handler; the server's own
 *   handler does not run. Works with `serve` and `listen` servers alike: for a stream server
 *   the request body is read into memory first (up to `maxBodyBytes`, else 413), and the
 *   route still gets a `Request`.
 * - A path with no route goes on to the server's handler (the fallback), unless `notFound`
 *   is given.
 * - A path whose routes do not take the method is answered 405 with `Allow` (or by
 *   `methodNotAllowed`); `methodNotAllowed: false` lets it go on to the server's handler.
 * - The tap is synchronous when the route's handler returns a Response synchronously.
 */
import { ArgumentError, ProtocolError, Response, Stage, definePlugin, notAResponse, type Request, type RequestHandler, type ServerExchange, type Stream } from '../../kernel/index.js';
import { methodNotAllowedResponse, withAllow } from './defaults.js';
import { setRouteData } from './route-data.js';
import { Router } from './router.js';
import type { Middleware } from './types.js';

const NAME = 'router';
/** Default `maxBodyBytes` of the plugin on stream servers (the reference's `max_body_bytes` default). */
const DEFAULT_MAX_BODY = 64 * 1024 * 1024;

/** Options of the `router` plugin. */
export interface RouterPluginOptions {
  /** Use this router instead of a new one (it must take request handlers). */
  router?: Router<RequestHandler>;
  /** Middleware of the new router: wraps each handler as it is registered. */
  middleware?: Middleware<RequestHandler>;
  /** Match `/a/` as `/a`. Default false. */
  ignoreTrailingSlash?: boolean;
  /** Answers paths without a route. Default: none, the server's handler gets them. */
  notFound?: RequestHandler;
  /** Answers a path whose routes do not take the method; `false` leaves it to the server's handler. Default: empty 405 with `Allow`. */
  methodNotAllowed?: RequestHandler | false;
  /** On stream (`listen`) servers, the most request-body bytes read for a route; larger gets 413. 0 means no limit. Default 64 MiB. */
  maxBodyBytes?: number;
}

/** `kernel.route`: the method-less form takes every method. */
export interface RouteMethod {
  (method: string, path: string, handler: RequestHandler): Router<RequestHandler>;
  (path: string, handler: RequestHandler): Router<RequestHandler>;
}

// `kernel.router` and `kernel.route` are typed in plugins/options.ts: a `declare module` here
// would be bundled into dist/plugins/index.d.ts with a path that leaves dist/.

type Done = (err: Error | null, result?: Response) => void;

/** The router plugin: `kernel.router`, `kernel.route(...)`, dispatch at `Stage.ROUTER`. */
export const router = definePlugin({
  name: NAME,
  register(kernel, options: RouterPluginOptions) {
    const r = options.router ?? new Router<RequestHandler>({ middleware: options.middleware ?? null, ignoreTrailingSlash: options.ignoreTrailingSlash === true });
    if (!(r instanceof Router)) throw new ArgumentError('router plugin: the router option must be a Router');
    const notFound = options.notFound ?? null;
    if (notFound !== null && typeof notFound !== 'function') throw new ArgumentError(`router plugin: notFound must be a function, got ${typeof notFound}`);
    const mna = options.methodNotAllowed;
    if (mna !== undefined && mna !== false && typeof mna !== 'function') throw new ArgumentError(`router plugin: methodNotAllowed must be a function or false, got ${typeof mna}`);
    const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY;
    if (typeof maxBody !== 'number' || !(maxBody >= 0)) throw new ArgumentError(`router plugin: maxBodyBytes must be a number >= 0, got ${String(maxBody)}`);
    const route = ((a: string, b: string | RequestHandler, c?: RequestHandler) => (typeof b === 'string' ? r.register(a, b, c as RequestHandler) : r.register(a, b))) as RouteMethod;
    kernel.decorate('router', r);
    kernel.decorate('route', route);

    /** Runs `handler` on `req` and reports through `done`, without a tick when it answers synchronously. */
    const run = (handler: RequestHandler, req: Request, done: Done, allow: string | null): void => {
      const finish = (res: unknown): void => {
        // Anything but a Response would read as "not mine" to the hook and fall through to the
        // server's handler: make it the failure it is.
        if (!(res instanceof Response)) done(notAResponse(res, `route handler for ${req.method} ${req.target}`));
        else done(null, allow === null ? res : withAllow(res, allow));
      };
      let res: Response | Promise<Response>;
      try {
        res = handler(req);
      } catch (err) {
        done(err as Error);
        return;
      }
      if (res instanceof Response) finish(res);
      else Promise.resolve(res).then(finish, (err: Error) => done(err));
    };

    const answer = (req: Request, ex: ServerExchange, done: Done): void => {
      // No routes (yet): nothing to look up, unless notFound answers everything.
      if (r.size === 0 && notFound === null) return done(null);
      const found = r.match(req.method, req.target);
      let handler: RequestHandler;
      let allow: string | null = null;
      if (found === null) {
        if (notFound === null) return done(null);
        handler = notFound;
      } else if (found.route === null) {
        if (mna === false) return done(null);
        allow = found.allow.join(', ');
        if (mna === undefined) return done(null, methodNotAllowedResponse(allow));
        handler = mna;
      } else {
        setRouteData(req.ctx, found.route.pattern, found.params);
        handler = found.route.handler;
      }
      const stream = asStream(ex);
      if (stream === null) return run(handler, req, done, allow);
      // A stream server leaves the body on the stream; a request handler wants it in memory.
      stream.readAll(maxBody > 0 ? maxBody : Infinity).then(
        (body) => {
          req.setBody(body);
          run(handler, req, done, allow);
        },
        (err: unknown) => {
          if (err instanceof ProtocolError && err.limit === 'maxBodyBytes') done(null, new Response(413, `request body exceeds ${maxBody} bytes`, { close: true }));
          else done(err as Error);
        },
      );
    };

    // With no routes and no notFound the router has nothing to do: an exchange then skips the hook.
    kernel.hooks.server.onRequest.tapAsync({ name: NAME, stage: Stage.ROUTER, active: () => r.size > 0 || notFound !== null }, answer);
  },
});

/** The exchange as a Stream when the server runs stream handlers (it is then the Stream itself). */
function asStream(ex: ServerExchange): Stream | null {
  return typeof (ex as Partial<Stream>).readAll === 'function' ? (ex as Stream) : null;
}
