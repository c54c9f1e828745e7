/**
 * `loggingMiddleware(handler, { logger, level })`: one access-log record per request, in
 * group `access`, with `method`, `target`, `status`, `elapsedMs` (the handler's wall-clock
 * time), `length` (the response body length when known without reading the body, else null)
 * and, for stream handlers, `peer` (`ip:port`). The message reads `GET /path 200 1.234ms`.
 *
 * A handler that throws is logged at error level with the error (`err`, pino's key) and the
 * status the server sends (500, or for a stream whose response already went out, the status
 * it went out with), and the error is rethrown so the server still answers. For a stream
 * handler the middleware ends the response (`closeWrite`) before logging, so a failure
 * there (a body shorter than its Content-Length) is logged as that failure.
 *
 * A stream the handler upgrades (`WebSockets.upgrade`) is logged when it switches, with
 * status 101 and `elapsedMs` up to the switch, not when the new protocol ends; a throw after
 * the switch adds an error record with status 101.
 *
 * The wrapper tells a request from a stream by its argument, so it wraps request handlers,
 * stream handlers and Routers (which are both) alike.
 */
import { performance } from 'node:perf_hooks';
import { AbstractBody, ArgumentError, notAResponse, Request, Response, type RequestHandler, type Stream, type StreamHandler } from '../../kernel/index.js';
import { DUAL, type DualHandler } from '../router/index.js';
import { checkLogger, getDefaultLogger, isLogLevel, logAt, type Logger, type LogLevel } from './logger.js';

/** Options of {@link loggingMiddleware}. */
export interface LoggingOptions {
  /** A pino-compatible logger; default: the default logger at the time of each record (see `setDefaultLogger`). */
  logger?: Logger | null;
  /** Level of the records of handled requests. Default `info`; a throw is always logged at `error`. */
  level?: LogLevel;
}

/** One access-log record, as the logger receives it. */
export interface AccessRecord {
  /** Always `access`. */
  group: 'access';
  /** Request method. */
  method: string;
  /** Request target (path and query). */
  target: string;
  /** Response status (the one sent). */
  status: number;
  /** Handler wall-clock time, milliseconds. */
  elapsedMs: number;
  /** Response body length when known without reading the body, else null. */
  length: number | null;
  /** Client address `ip:port` (stream handlers only). */
  peer?: string;
  /** What the handler threw (error records only). */
  err?: unknown;
}

/** Wraps a handler so each request it handles leaves one access-log record. */
export function loggingMiddleware(handler: DualHandler, options?: LoggingOptions): DualHandler;
export function loggingMiddleware(handler: RequestHandler, options?: LoggingOptions): RequestHandler;
export function loggingMiddleware(handler: StreamHandler, options?: LoggingOptions): StreamHandler;
export function loggingMiddleware(handler: RequestHandler | StreamHandler | DualHandler, options: LoggingOptions = {}): RequestHandler | StreamHandler | DualHandler {
  if (typeof handler !== 'function') throw new ArgumentError(`loggingMiddleware(handler, options): handler must be a function, got ${typeof handler}`);
  if (typeof options !== 'object' || options === null) throw new ArgumentError('loggingMiddleware options must be an object');
  const fixed = options.logger ?? null;
  if (fixed !== null) checkLogger(fixed, 'loggingMiddleware');
  const level = options.level ?? 'info';
  if (!isLogLevel(level)) throw new ArgumentError(`loggingMiddleware level must be one of trace, debug, info, warn, error, fatal, got ${String(level)}`);
  const h = handler as (input: Request | Stream) => Response | Promise<Response> | void | Promise<void>;

  const write = (rec: AccessRecord, lvl: LogLevel): void => {
    const msg = `${rec.method} ${rec.target} ${rec.status} ${rec.elapsedMs}ms`;
    logAt(fixed ?? getDefaultLogger(), lvl, rec, msg);
  };

  const onRequest = (req: Request): Response | Promise<Response> => {
    const t0 = performance.now();
    let out: Response | Promise<Response>;
    try {
      out = h(req) as Response | Promise<Response>;
    } catch (err) {
      write(record(req, 500, t0, null, err), 'error');
      throw err;
    }
    if (out instanceof Response) {
      write(record(req, out.status, t0, lengthOf(out)), level);
      return out;
    }
    return Promise.resolve(out).then(
      (res) => {
        // Not a Response: the server answers 500 for it.
        if (res instanceof Response) write(record(req, res.status, t0, lengthOf(res)), level);
        else write(record(req, 500, t0, null, notAResponse(res, 'handler')), 'error');
        return res;
      },
      (err: unknown) => {
        write(record(req, 500, t0, null, err), 'error');
        throw err;
      },
    );
  };

  const onStream = async (stream: Stream): Promise<void> => {
    const t0 = performance.now();
    const req = stream.request;
    // An upgraded stream (WebSockets) is logged at the switch, with status 101: its
    // exchange ends there, and the new protocol may run for hours.
    stream.onUpgraded(() => {
      const rec = record(req, 101, t0, null);
      rec.peer = peerOf(stream);
      write(rec, level);
    });
    try {
      await h(stream);
      await stream.closeWrite();
    } catch (err) {
      const rec = record(req, sentStatus(stream), t0, null, err);
      rec.peer = peerOf(stream);
      write(rec, 'error');
      throw err;
    }
    if (stream.isUpgraded) return;
    const res = stream.response();
    const rec = record(req, res.status, t0, headerLength(res));
    rec.peer = peerOf(stream);
    write(rec, level);
  };

  const wrapped = (input: Request | Stream): Response | Promise<Response> | Promise<void> => (input instanceof Request ? onRequest(input) : onStream(input));
  // Middleware around a Router still serves both entry points.
  if ((handler as Partial<DualHandler>)[DUAL] === true) Object.defineProperty(wrapped, DUAL, { value: true });
  return wrapped as DualHandler;
}

function record(req: Request, status: number, t0: number, length: number | null, err?: unknown): AccessRecord {
  const rec: AccessRecord = {
    group: 'access',
    method: req.method,
    target: req.target,
    status,
    elapsedMs: Math.round((performance.now() - t0) * 1000) / 1000,
    length,
  };
  if (err !== undefined) rec.err = err;
  return rec;
}

/** Body length known without reading: the declared length, or a streamed body's own length. */
function lengthOf(res: Response): number | null {
  if (res.contentLength >= 0) return res.contentLength;
  const b = res.body;
  if (b instanceof AbstractBody && b.length >= 0) return b.length;
  return headerLength(res);
}

function headerLength(res: Response): number | null {
  const v = res.headers.get('Content-Length');
  if (v === undefined || v === null || !/^\d+$/.test(v)) return null;
  return Number(v);
}

/**
 * The status the server sends after a stream handler threw: 500 while nothing of the
 * response went out (a held fixed-length response counts as not out), else the status
 * already sent (the server then closes the connection).
 */
function sentStatus(stream: Stream): number {
  if (stream.isUpgraded) return 101;
  const committed = (stream as { readonly isCommitted?: boolean }).isCommitted ?? stream.headersSent;
  return committed ? stream.response().status : 500;
}

function peerOf(stream: Stream): string | undefined {
  try {
    return String(stream.peerAddr());
  } catch {
    return undefined;
  }
}
