/**
 * `npm run bench`: every benchmark side by side with its peers, in one run, with ratios.
 * Run one alone with `node --import tsx bench/<name>.ts`.
 */
import { runClientBench } from './client.js';
import { runCacheBench } from './cache.js';
import { runCodecBench } from './codec.js';
import { runChannelsBench } from './channels.js';
import { runCompressionBench } from './compression.js';
import { runFetchServerBench } from './fetch-server.js';
import { runH2Bench } from './h2.js';
import { runHooksBench } from './hooks.js';
import { runInjectBench } from './inject.js';
import { runRouterBench } from './router.js';
import { runServerBench } from './server.js';
import { runSseBench } from './sse.js';
import { runStartupBench } from './startup.js';
import { runStaticBench } from './static.js';
import { runWebsocketsBench } from './websockets.js';
import { runWorkersBench } from './workers.js';

const only = process.argv[2];
const benches: [string, () => Promise<unknown>][] = [
  ['codec', runCodecBench],
  ['hooks', runHooksBench],
  ['server', () => runServerBench()],
  ['fetch-server', () => runFetchServerBench()],
  ['client', () => runClientBench()],
  ['channels', () => runChannelsBench()],
  ['h2', () => runH2Bench()],
  ['static', () => runStaticBench()],
  ['compression', () => runCompressionBench()],
  ['sse', () => runSseBench()],
  ['router', () => runRouterBench()],
  ['websockets', () => runWebsocketsBench()],
  ['startup', () => runStartupBench()],
  ['inject', () => runInjectBench()],
  ['workers', () => runWorkersBench()],
  ['cache', () => runCacheBench()],
];

for (const [name, fn] of benches) {
  if (only && only !== name) continue;
  console.log(`\n## ${name}\n`);
  await fn();
}
