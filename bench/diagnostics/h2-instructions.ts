/**
 * Diagnostic (not part of `npm run bench`): CPU instructions per request of the HTTP/2 servers
 * of bench/h2.ts (switchyard and bare node:http2, h2c and TLS), counted by valgrind.
 *
 * Why: on a shared virtual machine the req/s and CPU-time columns of bench/h2.ts move by 10-20%
 * from one process to the next for the same code. An instruction count moves by about 1-2%.
 * It does not see cache misses or the cost of a GC pause on a pinned core, so it is a floor of
 * the difference, not the whole of it.
 *
 * How: each server runs the same child role as bench/h2.ts (`--serve <kind>`, precompiled) under
 * `valgrind --tool=cachegrind --cache-sim=no`; h2load (`-c 10 -m 100`) sends 2,000 requests to
 * warm it up, then N; the process's total instruction count is read when it exits. Two
 * processes per server (N = LOW and HIGH) and the difference divided by HIGH - LOW is the
 * per-request figure: start-up, warm-up and the JIT's first compilations cancel out.
 *
 * Needs valgrind and h2load (Debian `valgrind`, `nghttp2-client`). Slow: about a minute per
 * process. Run: `node --import tsx bench/diagnostics/h2-instructions.ts` (H2_INSTR_KINDS, a
 * comma list, default node-h2c,switchyard-h2c,node-h2,switchyard-h2; switchyard-preset-h2c and
 * switchyard-preset-h2 are the default preset; H2_INSTR_LOW / _HIGH, default 10000 / 40000).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { prepareProgram } from '../common.js';

const SELF = fileURLToPath(import.meta.url);
const H2_BENCH = join(SELF, '..', '..', 'h2.ts');

function h2load(url: string, n: number): Promise<string> {
  const child = spawn('h2load', ['-c', '10', '-m', '100', '-n', String(n), url], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  return once(child, 'exit').then(() => {
    const m = /requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded/.exec(out);
    if (!m || Number(m[1]) !== n) throw new Error(`h2load did not complete ${n} requests: ${out.slice(0, 300)}`);
    return out;
  });
}

/** Instructions of one server process that served 2,000 + `n` requests. */
async function count(launch: { argv: string[] }, kind: string, n: number): Promise<number> {
  const child = spawn('valgrind', ['--tool=cachegrind', '--cache-sim=no', '--cachegrind-out-file=/dev/null', process.execPath, ...launch.argv, '--serve', kind], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  while (!/PORT (\d+)/.test(out)) {
    if (child.exitCode !== null) throw new Error(`${kind} exited before listening: ${err.slice(-300)}`);
    await Promise.race([once(child.stdout!, 'data'), once(child, 'exit')]);
  }
  const url = `${kind.endsWith('-h2') ? 'https' : 'http'}://127.0.0.1:${/PORT (\d+)/.exec(out)![1]}/`;
  await h2load(url, 2000);
  await h2load(url, n);
  child.stdin!.end();
  await once(child, 'exit');
  const m = /I\s+refs:\s+([\d,]+)/.exec(err);
  if (!m) throw new Error(`${kind}: no instruction count from valgrind: ${err.slice(-300)}`);
  return Number(m[1]!.replace(/,/g, ''));
}

async function main(): Promise<void> {
  const kinds = (process.env.H2_INSTR_KINDS ?? 'node-h2c,switchyard-h2c,node-h2,switchyard-h2').split(',');
  const low = Number(process.env.H2_INSTR_LOW ?? 10000) || 10000;
  const high = Number(process.env.H2_INSTR_HIGH ?? 40000) || 40000;
  const { launch } = await prepareProgram(H2_BENCH, 'h2-bench.mjs', 'servers');
  if ('error' in launch) throw new Error(launch.error);
  console.log(`instructions per request (valgrind), h2load -c 10 -m 100: (count after ${high} - count after ${low}) / ${high - low}`);
  const per = new Map<string, number>();
  for (const kind of kinds) {
    const a = await count(launch, kind, low);
    const b = await count(launch, kind, high);
    const v = (b - a) / (high - low);
    per.set(kind, v);
    const base = per.get(kind.replace(/^switchyard/, 'node'));
    const vs = kind.startsWith('switchyard') && base !== undefined ? `  ${(v / base).toFixed(3)}x node:http2` : '';
    console.log(`${kind.padEnd(16)} ${Math.round(v).toLocaleString('en-US').padStart(9)}${vs}`);
  }
}

await main();
