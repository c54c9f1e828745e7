/**
 * One of the processes behind a balancer in the drain tests, run as `node --import tsx
 * drain-server.ts MODE PORT` (PORT 0 picks one): a server on the default preset answering
 * `GET /get` and `POST /post` (echoing the body's length), with its health at `/healthz`.
 * It prints `listening PORT` once it listens and `closed` once it is closed, then ends on its own.
 *
 * MODE `shutdown`: `signals: ['SIGTERM']` with `healthPath` and `drainDelay` (ms, from
 * SWY_DRAIN_DELAY, default 500): the drain sequence. MODE `workers`: the same on two
 * `node:cluster` workers (`workers: 2`), which SIGHUP replaces one at a time; the primary
 * prints `reload done` on stderr when a reload is over. MODE `close`: SIGTERM calls `close()`
 * and `/healthz` is the handler's 200, as a server without the drain sequence behaves.
 */
import * as HTTP from '../../../index.js';

const [mode, portArg] = process.argv.slice(2);
if (mode !== 'shutdown' && mode !== 'workers' && mode !== 'close') throw new Error(`usage: drain-server.ts shutdown|workers|close PORT, got ${mode}`);
const drain = mode !== 'close';

const handler = (req: HTTP.Request): HTTP.Response => {
  if (req.method === 'POST') return new HTTP.Response(200, `posted ${(req.body as Uint8Array).length}\n`);
  if (req.target === '/healthz') return new HTTP.Response(200, 'ok\n');
  return new HTTP.Response(200, 'got\n');
};

const server = await HTTP.serve(handler, {
  host: '127.0.0.1',
  port: Number(portArg ?? 0),
  ...(drain ? { healthPath: '/healthz', signals: ['SIGTERM'] as const, drainDelay: Number(process.env.SWY_DRAIN_DELAY ?? 500) } : {}),
  ...(mode === 'workers' ? { workers: 2 } : {}),
});
if (!drain) process.once('SIGTERM', () => void server.close());
console.log(`listening ${server.port}`);
await server.wait();
console.log('closed');
