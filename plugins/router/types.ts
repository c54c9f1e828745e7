/**
 * Handler types shared by the router and the middleware: a route handler is a request
 * handler or a stream handler; a dual handler (a `Router`, or middleware around one) serves
 * both and tells which by its argument.
 */
import type { Request, RequestHandler, Response, Stream, StreamHandler } from '../../kernel/index.js';

/** What a route runs: a request handler (`serve`) or a stream handler (`listen`). */
export type RouteHandler = RequestHandler | StreamHandler;

/** Wraps a handler in another of the same kind (the reference's middleware). */
export type Middleware<H extends RouteHandler = RequestHandler> = (handler: H) => H;

/** Brand of a {@link DualHandler}: set on Routers and on middleware wrapped around one. */
export const DUAL: unique symbol = Symbol('switchyard.dualHandler');

/**
 * A handler that works with both entry points: called with a `Request` it returns a
 * `Response` (`serve`), called with a `Stream` it reads and writes that stream (`listen`).
 */
export interface DualHandler {
  (request: Request): Response | Promise<Response>;
  (stream: Stream): Promise<void>;
  /** Brand: true for handlers that tell request from stream by their argument. */
  readonly [DUAL]: true;
}
