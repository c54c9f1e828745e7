/**
 * `shutdown()`: the drain a load balancer or an orchestrator expects on SIGTERM. The server
 * answers its own health path, listens for SIGTERM (`signals`), and on it turns unready (the
 * health path says 503) while it still serves for `drainDelay`, then stops accepting, lets the
 * request in flight finish and closes. The example sends itself SIGTERM and exits on its own
 * once the server is closed.
 *
 *   node --import tsx examples/shutdown.ts
 */
import process from 'node:process';
import * as HTTP from '../index.js';

let release: () => void = () => undefined;
const slow = new Promise<void>((resolve) => (release = resolve));

const server = await HTTP.serve(
  async (req: HTTP.Request) => {
    if (req.target === '/slow') await slow;
    return new HTTP.Response(200, `hello from ${req.target}`);
  },
  { port: 0, healthPath: '/healthz', drainDelay: 300, signals: ['SIGTERM'] },
);
const base = `http://127.0.0.1:${server.port}`;
const health = async (): Promise<string> => {
  const res = await HTTP.get(`${base}/healthz`, { statusException: false });
  return `${res.status} ${res.text().trim()}`;
};

console.log(`/healthz before: ${await health()}`);
const inFlight = HTTP.get(`${base}/slow`);
// The server's SIGTERM listener runs first (it was added first); this one only waits for it.
const signalled = new Promise((resolve) => process.once('SIGTERM', resolve));
process.kill(process.pid, 'SIGTERM');
await signalled;
// The drain began: unready at once, still serving during drainDelay.
console.log(`ready: ${server.ready}, /healthz after SIGTERM: ${await health()}`);
console.log(`during the delay: ${(await HTTP.get(`${base}/fast`)).text()}`);
release();
console.log(`in flight: ${(await inFlight).text()}`);
const t0 = performance.now();
await server.wait();
console.log(`server closed ${Math.round(performance.now() - t0) < 5000 ? 'after its drain' : 'late'}; SIGTERM listeners left: ${process.listenerCount('SIGTERM')}`);
