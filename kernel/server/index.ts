/**
 * The HTTP/1.1 server: `serve` (request handlers), `listen` (stream handlers), `Server`,
 * `Stream`, `streamHandler` and `port`.
 */
import { ArgumentError } from '../errors.js';
import type { Request } from '../message/request.js';
import type { Response } from '../message/response.js';
import type { RequestHandler, StreamHandler } from './exchange.js';
import type { ServerOptions } from './options.js';
import { Server, type ServerInit } from './server.js';
import { writeResponseToStream, type Stream } from './stream.js';
import { serveWorkers, type WorkerCount, type WorkerPool } from './workers.js';

export { Server, type ServerInit, type InjectTarget } from './server.js';
export { Stream } from './stream.js';
export { encodeResponseBody, EncodedBody, type BodyEncoder } from './body-encoder.js';
export { PeerAddr, prefixEqual, socketPeer } from './peer.js';
export { httpDate } from './date.js';
export { notAResponse } from './handler-result.js';
export type { ServerOptions, CatchableSignal } from './options.js';
export type { RequestHandler, StreamHandler } from './exchange.js';
export type { InjectRequest, InjectBody, InjectQueryValue } from './inject.js';
export { WorkerPool, type WorkerCount } from './workers.js';

/** Options of {@link serve} and {@link listen}: the server options plus `kernel`, `onError` and `workers`. */
export type ServeOptions = ServerOptions &
  Pick<ServerInit, 'kernel' | 'onError'> & {
    /**
     * Run the server in this many worker processes (node:cluster) sharing the port, or
     * `'auto'` for one per core. The program's entry runs again in each worker, where this
     * call starts the worker's server; in the primary it resolves to a {@link WorkerPool}.
     * See docs/workers.md.
     */
    workers?: WorkerCount;
    /**
     * With `workers`: where the primary writes its lines about them (a worker died and another
     * starts, a reload began or ended, giving up on workers that cannot start), each starting
     * `switchyard: `. Default: stderr.
     */
    workerLog?: (line: string) => void;
  };

/** {@link ServeOptions} with `workers` given: the call resolves to a `WorkerPool` in the primary, a `Server` in a worker. */
export type WorkersServeOptions = ServeOptions & { workers: WorkerCount };

function checkHandler(handler: unknown, fn: string): void {
  if (typeof handler !== 'function') throw new ArgumentError(`${fn}(handler, options): handler must be a function, got ${typeof handler}`);
}

/**
 * Starts a server for a request handler (`Request` → `Response`, sync or async) and resolves
 * once it listens. The request body is buffered (up to `maxBodyBytes`). `await server.wait()`
 * blocks until it is closed (the reference's blocking `serve`).
 */
export function serve(handler: RequestHandler, options: WorkersServeOptions): Promise<Server | WorkerPool>;
export function serve(handler: RequestHandler, options?: ServeOptions): Promise<Server>;
export function serve(handler: RequestHandler, options: ServeOptions = {}): Promise<Server | WorkerPool> {
  return startServing(handler, options, false, 'serve');
}

/**
 * Starts a server for a stream handler (reads and writes one `Stream` per request) and resolves
 * once it listens (with `workers`, as {@link serve}).
 */
export function listen(handler: StreamHandler, options: WorkersServeOptions): Promise<Server | WorkerPool>;
export function listen(handler: StreamHandler, options?: ServeOptions): Promise<Server>;
export function listen(handler: StreamHandler, options: ServeOptions = {}): Promise<Server | WorkerPool> {
  return startServing(handler, options, true, 'listen');
}

/** What {@link serve} and {@link listen} do, for a request handler or (`stream`) a stream handler; `fn` names the call in errors. */
function startServing(handler: RequestHandler | StreamHandler, options: ServeOptions, stream: boolean, fn: string): Promise<Server | WorkerPool> {
  return starting(() => {
    checkHandler(handler, fn);
    const start = (o: ServeOptions): Promise<Server> => new Server({ ...o, handler, stream }).listen();
    return withWorkers(options) ? serveWorkers(options, stream, start) : start(options);
  });
}

function withWorkers(options: ServeOptions): boolean {
  return typeof options === 'object' && options !== null && options.workers !== undefined;
}

/**
 * @internal Runs `start`, a mistake in the arguments (a bad option, a handler that is not a
 * function) included as a rejection: a call that returns a Promise never also throws, so
 * `serve(...).catch(...)` sees every failure.
 */
export function starting<T>(start: () => Promise<T>): Promise<T> {
  try {
    return start();
  } catch (err) {
    return Promise.reject(err);
  }
}

/**
 * A stream handler that reads each request into memory, calls `handler`, and writes its
 * response; a body that is not in memory (a file, a stream) is streamed.
 */
export function streamHandler(handler: RequestHandler): StreamHandler {
  checkHandler(handler, 'streamHandler');
  return async (stream: Stream): Promise<void> => {
    const req: Request = await stream.startRead();
    req.setBody(await stream.readAll());
    const res: Response = await handler(req);
    await writeResponseToStream(stream, res);
  };
}

/** The bound port of a server, or its configured port when not listening yet. */
export function port(server: Server): number {
  if (!(server instanceof Server)) throw new ArgumentError('port(server) takes a Server');
  return server.port;
}
