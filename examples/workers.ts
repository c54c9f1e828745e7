/**
 * `workers`: one server on every core through node:cluster. This file runs in the primary
 * and again in each worker (cluster starts the same entry): in a worker, `serve` starts that
 * worker's server; in the primary it starts the workers and resolves to a `WorkerPool`. The
 * primary asks who answers, reloads the workers (each new one listens before an old one
 * drains: what SIGHUP does too), asks again, and closes them all.
 *
 *   node --import tsx examples/workers.ts
 */
import process from 'node:process';
import * as HTTP from '../index.js';

// The handler is made at the top level of the entry, so every worker makes its own.
const handler = (): HTTP.Response => new HTTP.Response(200, String(process.pid));

const server = await HTTP.serve(handler, { port: 0, workers: 2, workerLog: (line) => console.log(line) });

if (server instanceof HTTP.WorkerPool) {
  /** The pids that answer a few requests, each on a new connection (the primary hands connections round-robin). */
  const answering = async (): Promise<Set<string>> => {
    const seen = new Set<string>();
    for (let i = 0; i < 6; i++) seen.add((await HTTP.get(`http://127.0.0.1:${server.port}/`, [['Connection', 'close']])).text());
    return seen;
  };
  const before = await answering();
  console.log(`workers ${server.pids.join(', ')}; answered by ${[...before].join(', ')}`);
  await server.reload();
  const after = await answering();
  const kept = [...after].filter((pid) => before.has(pid));
  console.log(`after reload: ${after.size} new workers answer, ${kept.length === 0 ? 'none' : kept.join(', ')} of the old`);
  await server.close();
  console.log('closed');
}
