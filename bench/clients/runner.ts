/**
 * One HTTP client under test, as a child process of bench/client.ts. `CLIENT` picks it
 * (switchyard, switchyard-preset, switchyard-fetch, undici-request, undici-fetch, node-fetch, node-http, axios, got), `URL` is the server,
 * `CONNECTIONS` the pool size (and the most requests in flight), `EXPECT_BYTES` the body size
 * every response must have.
 *
 * The harness drives it over the IPC channel: `{ type: 'run', seconds, concurrency }` runs
 * `concurrency` loops, each sending one GET after the other until `seconds` have passed, and
 * answers `{ type: 'result', ... }` (completed requests, elapsed ms, this process's CPU ms,
 * body bytes, errors). Every request reads its whole body, whatever the client. The process
 * exits on `{ type: 'exit' }` or when the channel closes (the harness is gone).
 */
import http from 'node:http';

/** What the harness sends. */
export type RunnerCommand = { type: 'run'; seconds: number; concurrency: number } | { type: 'exit' };

/** What the child sends back. */
export type RunnerMessage =
  | { type: 'ready'; client: string; version: string }
  | {
      type: 'result';
      requests: number;
      /** Wall time of the run, ms (from the first request to the last response). */
      elapsedMs: number;
      /** User + system CPU time of this process during the run, ms. */
      cpuMs: number;
      bytes: number;
      errors: number;
      firstError: string | null;
      /** Start and end of the run on the monotonic clock V8's profiler uses, microseconds. */
      fromUs: number;
      toUs: number;
    }
  | { type: 'fatal'; message: string };

/** One request: resolves to the number of body bytes read. */
type One = () => Promise<number>;

interface Made {
  one: One;
  version: string;
  close(): Promise<void> | void;
}

const CLIENT = process.env.CLIENT ?? '';
const URL_ = process.env.URL ?? 'http://127.0.0.1:8080/';
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 50) || 50;
const EXPECT_BYTES = Number(process.env.EXPECT_BYTES ?? -1);
/** Idle keep-alive lifetime for clients that have one: longer than a whole bench run. */
const KEEP_ALIVE_MS = 600_000;

function send(m: RunnerMessage): void {
  process.send?.(m);
}

async function versionOf(pkg: string): Promise<string> {
  try {
    // Read from node_modules (the harness runs us from the project root): not every package
    // exports its package.json.
    const { readFile } = await import('node:fs/promises');
    const text = await readFile(`${process.cwd()}/node_modules/${pkg}/package.json`, 'utf8');
    return (JSON.parse(text) as { version: string }).version;
  } catch {
    return '?';
  }
}

function checkStatus(status: number): void {
  if (status !== 200) throw new Error(`status ${status}`);
}

async function make(name: string): Promise<Made> {
  const u = new URL(URL_);
  switch (name) {
    case 'switchyard': {
      // The kernel alone, no plugins (a Client given no kernel runs on the default plugins once the top-level entry is loaded).
      const { Client, createKernel } = await import('../../kernel/index.js');
      const client = new Client({ kernel: createKernel() });
      return {
        version: 'local',
        one: async () => {
          const res = await client.get(URL_);
          checkStatus(res.status);
          return (res.body as Uint8Array).length;
        },
        close: () => client.close(),
      };
    }
    case 'switchyard-preset': {
      // The top-level entry's client: the default kernel with presets.defaults (redirects,
      // decompression, ...), i.e. what `HTTP.get` uses.
      const { Client, getDefaultKernel } = await import('../../index.js');
      const client = new Client({ kernel: getDefaultKernel() });
      return {
        version: 'local',
        one: async () => {
          const res = await client.get(URL_);
          checkStatus(res.status);
          return (res.body as Uint8Array).length;
        },
        close: () => client.close(),
      };
    }
    case 'switchyard-fetch': {
      // The top-level `fetch`: a client on the default kernel (presets.defaults), as `HTTP.fetch` uses.
      const { Client, getDefaultKernel } = await import('../../index.js');
      const client = new Client({ kernel: getDefaultKernel() });
      return {
        version: 'local',
        one: async () => {
          const res = await client.fetch(URL_);
          const ab = await res.arrayBuffer();
          checkStatus(res.status);
          return ab.byteLength;
        },
        close: () => client.close(),
      };
    }
    case 'node-fetch': {
      // Node's global fetch (the undici bundled with Node, on its global dispatcher).
      return {
        version: process.versions.undici ?? '?',
        one: async () => {
          const res = await fetch(URL_);
          const ab = await res.arrayBuffer();
          checkStatus(res.status);
          return ab.byteLength;
        },
        close: () => undefined,
      };
    }
    case 'undici-request': {
      const { Pool } = await import('undici');
      const pool = new Pool(u.origin, { connections: CONNECTIONS, keepAliveTimeout: KEEP_ALIVE_MS, keepAliveMaxTimeout: KEEP_ALIVE_MS });
      const path = u.pathname + u.search;
      return {
        version: await versionOf('undici'),
        one: async () => {
          const { statusCode, body } = await pool.request({ path, method: 'GET' });
          const ab = await body.arrayBuffer();
          checkStatus(statusCode);
          return ab.byteLength;
        },
        close: () => pool.close(),
      };
    }
    case 'undici-fetch': {
      const { Agent, fetch } = await import('undici');
      const agent = new Agent({ connections: CONNECTIONS, keepAliveTimeout: KEEP_ALIVE_MS, keepAliveMaxTimeout: KEEP_ALIVE_MS });
      return {
        version: await versionOf('undici'),
        one: async () => {
          const res = await fetch(URL_, { dispatcher: agent });
          const ab = await res.arrayBuffer();
          checkStatus(res.status);
          return ab.byteLength;
        },
        close: () => agent.close(),
      };
    }
    case 'node-http': {
      const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
      const opts: http.RequestOptions = { host: u.hostname, port: Number(u.port), path: u.pathname + u.search, agent };
      return {
        version: process.version,
        one: () =>
          new Promise<number>((resolve, reject) => {
            const req = http.get(opts, (res) => {
              const chunks: Buffer[] = [];
              let n = 0;
              res.on('data', (c: Buffer) => {
                chunks.push(c);
                n += c.length;
              });
              res.on('end', () => {
                const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, n);
                if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`));
                else resolve(body.length);
              });
              res.on('error', reject);
            });
            req.on('error', reject);
          }),
        close: () => agent.destroy(),
      };
    }
    case 'axios': {
      const axios = (await import('axios')).default;
      const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
      const inst = axios.create({ httpAgent: agent, responseType: 'arraybuffer' });
      return {
        version: axios.VERSION,
        one: async () => {
          const res = await inst.get<Buffer>(URL_);
          checkStatus(res.status);
          return res.data.length;
        },
        close: () => agent.destroy(),
      };
    }
    case 'got': {
      const { got } = await import('got');
      const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
      const g = got.extend({ agent: { http: agent }, retry: { limit: 0 } });
      return {
        version: await versionOf('got'),
        one: async () => {
          const res = await g(URL_, { responseType: 'buffer' });
          checkStatus(res.statusCode);
          return res.body.length;
        },
        close: () => agent.destroy(),
      };
    }
    default:
      throw new Error(`unknown CLIENT ${JSON.stringify(name)}`);
  }
}

async function run(one: One, seconds: number, concurrency: number): Promise<RunnerMessage> {
  let requests = 0;
  let bytes = 0;
  let errors = 0;
  let firstError: string | null = null;
  const cpu0 = process.cpuUsage();
  const fromUs = Number(process.hrtime.bigint() / 1000n);
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  const loop = async (): Promise<void> => {
    while (performance.now() < end) {
      try {
        const n = await one();
        if (EXPECT_BYTES >= 0 && n !== EXPECT_BYTES) throw new Error(`body of ${n} bytes, expected ${EXPECT_BYTES}`);
        bytes += n;
        requests++;
      } catch (e) {
        errors++;
        firstError ??= e instanceof Error ? `${e.name}: ${e.message}` : String(e);
        if (errors > 100) return; // broken: stop early
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  const elapsedMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const toUs = Number(process.hrtime.bigint() / 1000n);
  return { type: 'result', requests, elapsedMs, cpuMs: (cpu.user + cpu.system) / 1000, bytes, errors, firstError, fromUs, toUs };
}

async function main(): Promise<void> {
  let made: Made;
  try {
    made = await make(CLIENT);
    await made.one(); // connects, and checks the client works at all
  } catch (e) {
    send({ type: 'fatal', message: e instanceof Error ? e.message : String(e) });
    process.exit(1);
  }
  const exit = async (): Promise<void> => {
    try {
      await made.close();
    } finally {
      process.exit(0);
    }
  };
  // Commands run one at a time, in order.
  let chain = Promise.resolve();
  process.on('message', (m: RunnerCommand) => {
    chain = chain.then(async () => {
      if (m.type === 'exit') return exit();
      send(await run(made.one, m.seconds, m.concurrency));
    });
  });
  process.on('disconnect', () => void exit());
  send({ type: 'ready', client: CLIENT, version: made.version });
}

if (process.send === undefined) {
  console.error('bench/clients/runner.ts is a child of bench/client.ts (it needs an IPC channel)');
  process.exit(2);
}
void main();
