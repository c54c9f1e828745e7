/**
 * Middleware (`HTTP.Handlers`): `loggingMiddleware` writes one access-log record per request
 * (pino-compatible; here the built-in logger's readable format on stdout), and
 * `handlerTimeout(ms)` answers 503 when a handler is too slow and cancels its `req.ctx`.
 * Middleware wraps handlers (a Router applies its `middleware` to every route); it taps no hook.
 * Starts its own server on 127.0.0.1, calls it, prints the log lines and exits.
 *
 *   node --import tsx examples/middleware.ts
 */
import * as HTTP from '../index.js';

const { Router, handlerTimeout, loggingMiddleware, createLogger } = HTTP.Handlers;

const routes = new Router({ middleware: handlerTimeout(100) })
  .get('/fast', () => new HTTP.Response(200, 'quick answer'))
  .get('/slow', async (req) => {
    // Waits for its context: handlerTimeout cancels it at 100 ms.
    await new Promise((resolve) => req.ctx.signal.addEventListener('abort', resolve, { once: true }));
    console.log(`  /slow saw its context canceled: ${req.ctx.canceled}`);
    return new HTTP.Response(200, 'too late: dropped');
  });

const logger = createLogger({ format: 'pretty', destination: process.stdout });
// A handler that throws is logged at error level (with the error) and still answered 500.
const server = await HTTP.serve(loggingMiddleware(routes, { logger }), { host: '127.0.0.1', port: 0 });

for (const path of ['/fast', '/slow', '/missing']) {
  // statusException: false returns 4xx/5xx instead of throwing; retry: false, or the 503 would be retried.
  const res = await HTTP.get(`http://127.0.0.1:${server.port}${path}`, { statusException: false, retry: false });
  console.log(`GET ${path} -> ${res.status} ${res.text()}`);
}

HTTP.close(HTTP.getDefaultClient());
await server.close();
