/**
 * Diagnostic (not part of `npm run bench`): how long a WebSocket echo server takes from the
 * moment a message's bytes arrive to the moment it calls the write syscall for the echo,
 * measured inside the server process, one message in flight.
 *
 * Why: on a virtual machine the 64-byte x1 echo row of bench/websockets.ts is bound by wake-up
 * latency, and a little server latency costs far more throughput than its share of the round
 * trip (here, a 2 µs busy-wait added to bare ws cost ~9% of its messages per second). This
 * figure isolates the server's part and is steady from run to run where throughput is not.
 *
 * Stacks, each in its own process with the same ws client (another process):
 *   ws          bare ws, `ws.send` inside the 'message' event (no Promise can do this)
 *   ws+micro    bare ws, the send deferred with queueMicrotask: the floor of any Promise API
 *   switchyard  `WebSockets.listen` with `for await (const m of ws) await ws.send(m)`
 *
 * How: the server's listening socket is wrapped so each accepted connection gets a 'data'
 * listener in front (timestamp) and its handle's write methods wrapped (timestamp, sample).
 * The first 2,000 samples (JIT warm-up) are dropped.
 *
 * The children run this file precompiled by esbuild with plain node, as the benches run theirs
 * (tsx otherwise), the server pinned to core 1 and the client to core 0 when taskset works.
 *
 * Run: `node --import tsx bench/diagnostics/ws-latency.ts` (WS_LATENCY_MESSAGES, default 40000;
 * WS_LATENCY_ROUNDS, default 3; WS_LATENCY_CLIENT_UNPINNED=1 leaves the client process free to
 * run on either core, which on this VM spreads the figures far less than pinning both).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { prepareProgram } from '../common.js';
import { pinned, tasksetUsable } from '../load.js';

type Stack = 'ws' | 'ws+micro' | 'switchyard';
const STACKS: Stack[] = ['ws', 'ws+micro', 'switchyard'];
const SELF = fileURLToPath(import.meta.url);
const WARMUP = 2000;

/** Server role: serves one stack, samples, prints the sorted samples when stdin closes. */
async function serve(stack: Stack): Promise<void> {
  const samples: number[] = [];
  let t0 = 0n;
  const emit = net.Server.prototype.emit as (this: net.Server, event: string | symbol, ...args: unknown[]) => boolean;
  net.Server.prototype.emit = function (this: net.Server, event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'connection') {
      const socket = args[0] as net.Socket & { _handle: Record<string, unknown> };
      socket.prependListener('data', () => {
        t0 = process.hrtime.bigint();
      });
      const handle = socket._handle;
      for (const m of ['writev', 'writeBuffer', 'writeLatin1String', 'writeUtf8String']) {
        const f = handle[m];
        if (typeof f !== 'function') continue;
        handle[m] = function (this: unknown, ...a: unknown[]): unknown {
          if (t0 !== 0n) {
            samples.push(Number(process.hrtime.bigint() - t0));
            t0 = 0n;
          }
          return (f as (...x: unknown[]) => unknown).apply(this, a);
        };
      }
    }
    return emit.call(this, event, ...args);
  } as typeof net.Server.prototype.emit;
  let port: number;
  if (stack === 'switchyard') {
    const { WebSockets } = await import('../../plugins/websockets/index.js');
    const server = await WebSockets.listen(
      async (ws) => {
        for await (const m of ws) await ws.send(m);
      },
      { host: '127.0.0.1', port: 0, compress: false, onError: () => {} },
    );
    port = server.port;
  } else {
    const { WebSocketServer } = await import('ws');
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false });
    wss.on('connection', (ws) => {
      ws.on('error', () => {});
      if (stack === 'ws') ws.on('message', (d, binary) => ws.send(d as Buffer, { binary }));
      else ws.on('message', (d, binary) => queueMicrotask(() => ws.send(d as Buffer, { binary })));
    });
    await once(wss, 'listening');
    port = (wss.address() as net.AddressInfo).port;
  }
  process.stdout.write(`PORT ${port}\n`);
  process.stdin.resume();
  await once(process.stdin, 'end');
  process.stdout.write(`SAMPLES ${JSON.stringify(samples.slice(WARMUP).sort((a, b) => a - b))}\n`);
  process.exit(0);
}

/** Client role: bare ws, one 64-byte message in flight, `n` echoes. */
async function client(port: number, n: number): Promise<void> {
  const { WebSocket } = await import('ws');
  const ws = new WebSocket(`ws://127.0.0.1:${port}/`, { perMessageDeflate: false });
  await once(ws, 'open');
  const data = Buffer.alloc(64, 97);
  await new Promise<void>((resolve) => {
    let got = 0;
    ws.on('message', () => {
      if (++got === n) resolve();
      else ws.send(data);
    });
    ws.send(data);
  });
  ws.close();
  await once(ws, 'close');
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.floor(q * (sorted.length - 1))] ?? NaN;
}

async function main(): Promise<void> {
  const n = Number(process.env.WS_LATENCY_MESSAGES ?? 40000) || 40000;
  const rounds = Number(process.env.WS_LATENCY_ROUNDS ?? 3) || 3;
  const { launch } = await prepareProgram(SELF, 'ws-latency.mjs', 'diagnostic');
  if ('error' in launch) throw new Error(launch.error);
  const pin = tasksetUsable(1);
  const argv = (cpu: number, args: string[]): string[] => pinned(pin ? cpu : null, [process.execPath, ...launch.argv, ...args]);
  console.log(`server time from a message's bytes arriving to the echo's write syscall, ${n} messages (first ${WARMUP} dropped), ${rounds} rounds`);
  console.log('stack        round  median ns  p25 ns  p75 ns  p90 ns');
  for (let r = 0; r < rounds; r++) {
    for (const stack of STACKS) {
      const sa = argv(1, ['--serve', stack]);
      const server = spawn(sa[0]!, sa.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] });
      let out = '';
      server.stdout!.on('data', (c: Buffer) => (out += c.toString()));
      while (!/PORT (\d+)/.test(out)) await once(server.stdout!, 'data');
      const port = Number(/PORT (\d+)/.exec(out)![1]);
      const ca = process.env.WS_LATENCY_CLIENT_UNPINNED === '1' ? [process.execPath, ...launch.argv, '--client', String(port), String(n)] : argv(0, ['--client', String(port), String(n)]);
      const c = spawn(ca[0]!, ca.slice(1), { stdio: 'inherit' });
      await once(c, 'exit');
      server.stdin!.end();
      await once(server, 'exit');
      const m = /SAMPLES (\[.*\])/.exec(out);
      if (!m) throw new Error(`${stack}: no samples`);
      const xs = JSON.parse(m[1]!) as number[];
      const cells = [quantile(xs, 0.5), quantile(xs, 0.25), quantile(xs, 0.75), quantile(xs, 0.9)].map((v) => String(v).padStart(7));
      console.log(`${stack.padEnd(12)} ${String(r + 1).padStart(5)}  ${cells[0]!.padStart(9)} ${cells.slice(1).join(' ')}`);
    }
  }
}

const role = process.argv[2];
if (role === '--serve') await serve(process.argv[3] as Stack);
else if (role === '--client') await client(Number(process.argv[3]), Number(process.argv[4]));
else await main();
