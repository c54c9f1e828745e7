/**
 * A seeded fuzz of the HTTP/1 server on the default preset (`serve` from index.ts) over real
 * loopback sockets: pipelined batches of mutated request heads, cut at random points, on many
 * parallel connections. The server must answer each with well-formed HTTP/1.1 responses or a
 * close, never a 500 (a handler or kernel bug), never hang, keep serving, and keep its memory.
 * The seed is printed in every failure; `FUZZ_SEED=<n>` replays it.
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import { describe, expect, it } from 'vitest';
import { Response, serve } from '../../index.js';
import { forceCloseAfter } from '../helpers/cleanup.js';
import { expectServing, waitConnections } from '../helpers/server.js';
import { FUZZ_SERVER_OPTIONS, mutatedBatch, reached, Rng, seedFromEnv, sendBatch } from './generators.js';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

const HEADS = 50_000;
const PARALLEL = 24;
const BATCH = 40;

describe('server fuzz', () => {
  it(`answers ${HEADS} mutated request heads (pipelined, split) with 1xx-4xx, 501/505 or a close, and keeps serving`, async () => {
    const seed = seedFromEnv();
    const where = `seed ${seed} (replay with FUZZ_SEED=${seed})`;
    const uncaught: unknown[] = [];
    const onUncaught = (e: unknown): void => void uncaught.push(e);
    process.on('uncaughtException', onUncaught);
    process.on('unhandledRejection', onUncaught);
    try {
      const handlerErrors: unknown[] = [];
      const server = forceCloseAfter(
        await serve(() => new Response(200, 'ok'), {
          ...FUZZ_SERVER_OPTIONS,
          onError: (error, request) => {
            if (request !== null && request !== undefined) handlerErrors.push(error);
          },
        }),
      );
      const port = server.port;
      await expectServing(port);
      gc();
      const heap0 = process.memoryUsage().heapUsed;

      const rng = new Rng(seed);
      let mutatedHeads = 0;
      let heads = 0;
      let connections = 0;
      let answered = 0;
      const counts = new Map<number, number>();
      const problems: string[] = [];
      const worker = async (): Promise<void> => {
        while (mutatedHeads < HEADS && problems.length < 5) {
          const { parts, mutated } = mutatedBatch(rng, BATCH);
          const r = await sendBatch(port, parts, 5000);
          const n = reached(r.statuses, mutated.length);
          connections++;
          heads += n;
          mutatedHeads += mutated.slice(0, n).filter(Boolean).length;
          answered += r.statuses.length;
          for (const s of r.statuses) counts.set(s, (counts.get(s) ?? 0) + 1);
          if (r.hung) problems.push(`a connection was neither answered nor closed within 5 s: ${JSON.stringify(parts.join('').slice(0, 300))}`);
          if (r.garbage !== null) problems.push(`not an HTTP/1.1 response at byte ${r.garbage.offset}: ${r.garbage.excerpt}`);
          const bad = r.statuses.filter((s) => s >= 500 && s !== 501 && s !== 505);
          if (bad.length > 0) problems.push(`status ${bad.join(',')} for ${JSON.stringify(parts.join('').slice(0, 300))}`);
        }
      };
      const t0 = performance.now();
      await Promise.all(Array.from({ length: PARALLEL }, worker));
      const ms = performance.now() - t0;

      expect(problems, where).toEqual([]);
      expect(uncaught, where).toEqual([]);
      expect(handlerErrors, where).toEqual([]);
      expect(mutatedHeads, where).toBeGreaterThanOrEqual(HEADS);
      expect(counts.get(200) ?? 0, where).toBeGreaterThan(0);
      expect(counts.get(400) ?? 0, where).toBeGreaterThan(0);

      await waitConnections(server, 0, 5000);
      await expectServing(port);
      gc();
      const growth = process.memoryUsage().heapUsed - heap0;
      expect(growth, `${where}: heapUsed grew by ${(growth / 2 ** 20).toFixed(1)} MB`).toBeLessThan(50 * 2 ** 20);
      console.log(
        `server fuzz ${where}: ${connections} connections, ${heads} heads reached (${mutatedHeads} mutated), ${answered} answered in ${(ms / 1000).toFixed(1)} s; statuses ${JSON.stringify(Object.fromEntries(counts))}; heap growth ${(growth / 2 ** 20).toFixed(1)} MB`,
      );
    } finally {
      process.off('uncaughtException', onUncaught);
      process.off('unhandledRejection', onUncaught);
    }
  }, 60_000);
});
