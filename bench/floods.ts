/**
 * Peak RSS of the server (or client) process under each flood, not in CI:
 *
 *     node --import tsx bench/floods.ts [case...]            # every case when none is named
 *     FLOODS_TREE=/path/to/checkout node --import tsx bench/floods.ts slowloris
 *
 * Each case starts a child process that imports `index.ts` of FLOODS_TREE (default: this
 * checkout), so an older tree can be measured by the same driver: a server on loopback with its
 * defaults (a case may set a timer option, named in its notes), or for the client cases the
 * default client, with the hostile server in this process. This process plays the flood, samples
 * the child's VmRSS in /proc every 20 ms, and prints one line per case: the baseline RSS (server
 * up and warm, before the flood), the peak, and whether the server still answers a normal request
 * afterwards (or what the client call ended in). Cases an older tree never ends are bounded here,
 * by a duration or a byte count, and say "held" or "still growing" in their notes.
 *
 * FLOODS_SECONDS (default 20) bounds the floods that do not end by themselves (pipelining has
 * its own bound, 100 MB or 60 s); FLOODS_RSS_CAP_MB (default 3072) kills a child that grows
 * past it, so a tree without the bounds cannot take the machine down. 10,000 connections need 10,000 descriptors on each side (`ulimit -n` is checked);
 * they come from 127.0.0.1-127.0.0.8 so one run does not exhaust the ephemeral ports of one
 * source address.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once, type EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import http2 from 'node:http2';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import zlib from 'node:zlib';
import { unfinishedHead } from '../test/kernel/server/fixtures/unfinished-heads.js';
import { dripClient } from '../test/hostile/generators.js';
import { block, frame, get as h2Get, PREFACE, rst, settings, T } from '../test/helpers/h2-frames.js';

const SELF = fileURLToPath(import.meta.url);
const TREE = path.resolve(process.env.FLOODS_TREE ?? path.join(path.dirname(SELF), '..'));
const SECONDS = Number(process.env.FLOODS_SECONDS ?? 20);
const RSS_CAP = Number(process.env.FLOODS_RSS_CAP_MB ?? 3072) * 2 ** 20;
const MiB = 2 ** 20;

const delay = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Which of `names` `e` emits first, or 'timeout' after `ms`; never rejects, leaves no listener. */
function firstOf(e: EventEmitter, names: string[], ms: number): Promise<string> {
  return new Promise((resolve) => {
    const handlers = names.map((n) => [n, (): void => done(n)] as const);
    const timer = setTimeout(() => done('timeout'), ms);
    function done(n: string): void {
      clearTimeout(timer);
      for (const [k, h] of handlers) e.off(k, h);
      resolve(n);
    }
    for (const [k, h] of handlers) e.once(k, h);
  });
}

// ---------------------------------------------------------------------------------------------
// The child: a server or a client from the measured tree.

interface TreeApi {
  serve(handler: (req: { target: string }) => unknown, options: Record<string, unknown>): Promise<{ port: number; connectionCount: number }>;
  listen(handler: (st: { request: { target: string }; write(d: Uint8Array | string): Promise<void> }) => unknown, options: Record<string, unknown>): Promise<{ port: number; connectionCount: number }>;
  Response: new (status: number, body: string) => unknown;
  get(url: string): Promise<{ status: number; body: unknown }>;
}

async function child(role: string, name: string): Promise<void> {
  const api = (await import(pathToFileURL(path.join(TREE, 'index.ts')).href)) as TreeApi;
  const send = (m: unknown): void => void process.send!(m);
  if (role === 'client') {
    const next = once(process, 'message');
    send({ ready: true });
    const [url] = (await next) as [string];
    try {
      const res = await api.get(url);
      const body = res.body as { length?: number } | null;
      send({ outcome: `status ${res.status}, ${body?.length ?? 0} body bytes` });
    } catch (err) {
      const e = err as Error;
      send({ outcome: `${e.constructor.name}: ${e.message.length > 150 ? `${e.message.slice(0, 150)}...` : e.message}` });
    }
    return;
  }
  const options = { host: '127.0.0.1', port: 0, onError: () => undefined, ...CASES[name]!.options };
  const chunk = Buffer.alloc(1024, 0x61);
  const server =
    CASES[name]!.stream === true
      ? await api.listen(async (st) => {
          if (st.request.target === '/ok') return void (await st.write('ok'));
          for (let i = 0; i < 1024; i++) await st.write(chunk); // 1 MiB per stream
        }, options)
      : await api.serve(async (req) => {
          // In flight a little while, so a stream reset at once finds its handler running.
          if (req.target === '/slow') await delay(5);
          return new api.Response(200, 'ok');
        }, options);
  process.on('message', (m) => {
    if (m === 'count') send({ connections: server.connectionCount });
  });
  send({ port: server.port });
}

// ---------------------------------------------------------------------------------------------
// The driver.

interface Memory {
  rss: number;
  hwm: number;
}

function memoryOf(pid: number): Memory | null {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'latin1');
    const kb = (k: string): number => Number(/(\d+) kB/.exec(s.slice(s.indexOf(k)))?.[1] ?? 0) * 1024;
    return { rss: kb('VmRSS:'), hwm: kb('VmHWM:') };
  } catch {
    return null;
  }
}

/** Samples a child's RSS until stopped; kills it past the cap. */
class Sampler {
  peak = 0;
  capped = false;
  private readonly timer: NodeJS.Timeout;
  constructor(private readonly proc: ChildProcess) {
    this.timer = setInterval(() => this.sample(), 20);
  }
  sample(): number {
    const m = memoryOf(this.proc.pid!);
    if (m === null) return 0;
    if (m.rss > this.peak) this.peak = m.rss;
    if (m.rss > RSS_CAP && !this.capped) {
      this.capped = true;
      this.proc.kill('SIGKILL');
    }
    return m.rss;
  }
  stop(): void {
    clearInterval(this.timer);
  }
}

interface Ctx {
  port: number;
  url: string;
  sampler: Sampler;
  /** Connections the server holds (asked over IPC). */
  connections(): Promise<number>;
}

interface Case {
  what: string;
  side?: 'server' | 'client';
  stream?: boolean;
  options?: Record<string, unknown>;
  /** Plays the flood; returns notes. */
  run(ctx: Ctx): Promise<string>;
}

const SOURCES = 8;
/** A TCP connection from one of 127.0.0.1-8 (see the file comment). */
function connect(port: number, i: number): net.Socket {
  const s = net.connect({ host: '127.0.0.1', port, localAddress: `127.0.0.${1 + (i % SOURCES)}` });
  s.on('error', () => undefined);
  return s;
}

/**
 * Opens `n` connections, 100 at a time, each batch once the server has accepted the last: its
 * listen backlog is 128, and a connection the accept queue drops still looks connected here.
 */
async function connectMany(port: number, n: number, connections: () => Promise<number>): Promise<net.Socket[]> {
  const socks: net.Socket[] = [];
  const base = await connections();
  for (let i = 0; i < n; i += 100) {
    const batch = Array.from({ length: Math.min(100, n - i) }, (_, k) => connect(port, i + k));
    await Promise.all(batch.map((s) => once(s, 'connect')));
    socks.push(...batch);
    const deadline = performance.now() + 3000;
    while ((await connections()) < base + socks.length && performance.now() < deadline) await delay(5);
  }
  return socks;
}

/** A normal GET /ok on a new connection: its status and time, or why it failed. */
async function normalRequest(port: number, timeoutMs = 5000): Promise<string> {
  const t0 = performance.now();
  const s = connect(port, 0);
  s.write('GET /ok HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
  let got = '';
  s.on('data', (d: Buffer) => (got += d.toString('latin1')));
  const ok = (await firstOf(s, ['close'], timeoutMs)) === 'close';
  s.destroy();
  const status = /^HTTP\/1\.1 (\d{3})/.exec(got)?.[1];
  if (!ok || status === undefined) return `no answer in ${timeoutMs} ms`;
  return `${status} in ${(performance.now() - t0).toFixed(0)} ms`;
}

/** Writes `piece()` until `stop()` or `maxBytes`, honouring backpressure; the bytes written. */
async function pump(s: net.Socket, piece: () => Buffer, stop: () => boolean, maxBytes = Infinity): Promise<number> {
  let sent = 0;
  while (!stop() && sent < maxBytes && !s.destroyed && s.writable) {
    const p = piece();
    sent += p.length;
    if (!s.write(p)) {
      const drained = (await firstOf(s, ['drain', 'close', 'error'], 1000)) === 'drain';
      if (!drained) {
        // Not read for a second: the peer applies backpressure (or is gone); wait for it.
        while (!stop() && !s.destroyed && s.writableNeedDrain) await delay(100);
      }
    }
  }
  return sent;
}

function until(seconds: number): () => boolean {
  const end = performance.now() + seconds * 1000;
  return () => performance.now() > end;
}

/** Count of sockets the server closed (they saw 'close' without our destroy). */
function closedCount(socks: net.Socket[]): number {
  return socks.filter((s) => s.destroyed || s.readableEnded).length;
}

/** An HTTP/2 raw connection that sends the preface and its SETTINGS, reading nothing. */
async function h2Raw(port: number): Promise<net.Socket> {
  const s = connect(port, 0);
  await once(s, 'connect');
  s.pause();
  s.write(Buffer.concat([PREFACE, settings()]));
  return s;
}

/** Writes bursts until `total` frames went out or the socket closed; frames sent. */
async function h2Flood(s: net.Socket, burst: () => Buffer, perBurst: number, total: number): Promise<number> {
  let sent = 0;
  const stopAt = until(SECONDS);
  while (sent < total && !s.destroyed && !stopAt()) {
    sent += perBurst;
    if (!s.write(burst()) && (await firstOf(s, ['drain', 'close', 'error'], 5000)) !== 'drain') break;
    await new Promise<void>((r) => setImmediate(r));
  }
  return sent;
}

/** Notes of a one-connection flood: what was sent, and whether the server still holds a connection (asked after a pause). */
async function oneConnection(s: net.Socket, sent: string, connections: () => Promise<number>): Promise<string> {
  await delay(500);
  const held = await connections();
  s.destroy();
  return `${sent}; the server ${held > 0 ? 'still holds the connection' : 'closed the connection'}`;
}

/** A hostile server for the client cases: `answer` gets each connection once its request arrived. */
async function hostileServer(answer: (s: net.Socket) => void): Promise<net.Server> {
  const srv = net.createServer((s) => {
    s.on('error', () => undefined);
    s.once('data', () => answer(s));
  });
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  return srv;
}

/** 1 GiB of zeros under brotli quality 5, window 24: 809 bytes. */
async function brotliBomb(): Promise<Buffer> {
  const { BROTLI_PARAM_QUALITY, BROTLI_PARAM_LGWIN, BROTLI_PARAM_SIZE_HINT } = zlib.constants;
  const enc = zlib.createBrotliCompress({ params: { [BROTLI_PARAM_QUALITY]: 5, [BROTLI_PARAM_LGWIN]: 24, [BROTLI_PARAM_SIZE_HINT]: 1024 * MiB } });
  const out: Buffer[] = [];
  enc.on('data', (d: Buffer) => out.push(d));
  const zeros = Buffer.alloc(16 * MiB);
  for (let i = 0; i < 64; i++) if (!enc.write(zeros)) await once(enc, 'drain');
  enc.end();
  await once(enc, 'end');
  return Buffer.concat(out);
}

/** The client cases end when the child reports; bounded by SECONDS. */
async function clientOutcome(proc: ChildProcess, url: string): Promise<string> {
  proc.send(url);
  let outcome: string | null = null;
  proc.once('message', (m: { outcome: string }) => (outcome = m.outcome));
  const r = await firstOf(proc, ['message', 'exit'], SECONDS * 1000);
  return outcome ?? (r === 'exit' ? 'the client process ended' : `no outcome after ${SECONDS} s (still reading)`);
}

const CASES: Record<string, Case> = {
  pipelining: {
    what: 'pipelined GETs, never reading: 1 connection, 100 MB or 60 s',
    async run({ port, connections }) {
      const s = connect(port, 0);
      await once(s, 'connect');
      s.pause();
      const piece = Buffer.from('GET /x HTTP/1.1\r\nHost: localhost\r\n\r\n'.repeat(1000), 'latin1');
      const sent = await pump(s, () => piece, until(60), 100e6);
      return oneConnection(s, `${(sent / 1e6).toFixed(1)} MB of requests written (100 MB or 60 s at most)`, connections);
    },
  },
  'h2-zero-window': {
    what: 'HTTP/2 zero-window readers: 20 connections x 100 streams, handler streams 1 MiB each',
    stream: true,
    async run({ url, sampler }) {
      const sessions: http2.ClientHttp2Session[] = [];
      for (let c = 0; c < 20; c++) {
        const s = http2.connect(url, { settings: { initialWindowSize: 0 } });
        s.on('error', () => undefined);
        sessions.push(s);
        for (let i = 0; i < 100; i++) s.request({ ':path': '/stream' }).on('error', () => undefined);
      }
      // Until the RSS stops moving for 2 s, or the time bound.
      const stop = until(SECONDS);
      let last = sampler.sample();
      let still = performance.now();
      while (!stop() && performance.now() - still < 2000) {
        await delay(200);
        const now = sampler.sample();
        if (Math.abs(now - last) > MiB) {
          last = now;
          still = performance.now();
        }
      }
      const settled = !stop();
      for (const s of sessions) s.destroy();
      return settled ? 'RSS settled (held)' : `still growing after ${SECONDS} s`;
    },
  },
  'unfinished-heads': {
    what: '1,000 connections, each an unfinished 60 KiB head in 1 KiB pieces',
    async run({ port, connections }) {
      const socks = await connectMany(port, 1000, connections);
      const head = unfinishedHead(60 * 1024);
      for (let off = 0; off < head.length; off += 1024) {
        for (const s of socks) s.write(head.subarray(off, off + 1024));
        // A served request per round, so the server read each piece on its own.
        await normalRequest(port);
      }
      await delay(1000);
      const held = await connections();
      const closed = closedCount(socks);
      for (const s of socks) s.destroy();
      return `${held} connections held by the server, ${closed} closed by it`;
    },
  },
  slowloris: {
    what: '200 connections dripping a head, one byte per 100 ms, for the time bound',
    async run({ port }) {
      const text = `GET / HTTP/1.1\r\nHost: localhost\r\n${'X-Slow: 1\r\n'.repeat(1000)}\r\n`;
      const drips = Array.from({ length: 200 }, () => dripClient(port, text, 100));
      await delay(SECONDS * 1000);
      const closed = drips.filter((d) => d.isClosed()).length;
      for (const d of drips) d.stop();
      return `${closed} of 200 closed by the server after ${SECONDS} s`;
    },
  },
  silent: {
    what: '10,000 connections that send nothing, for the time bound',
    async run({ port, connections }) {
      const socks = await connectMany(port, 10_000, connections);
      await delay(SECONDS * 1000);
      const held = await connections();
      const closed = closedCount(socks);
      for (const s of socks) s.destroy();
      return `${held} held, ${closed} closed by the server after ${SECONDS} s`;
    },
  },
  'idle-keep-alive': {
    what: '10,000 keep-alive connections idle after one request (idleTimeout 15000)',
    options: { idleTimeout: 15_000 },
    async run({ port, sampler, connections }) {
      const socks: net.Socket[] = [];
      for (let i = 0; i < 10_000; i += 100) {
        const batch = Array.from({ length: Math.min(100, 10_000 - i) }, (_, k) => connect(port, i + k));
        await Promise.all(
          batch.map(async (s) => {
            await once(s, 'connect');
            s.write('GET /ok HTTP/1.1\r\nHost: localhost\r\n\r\n');
            await once(s, 'data');
          }),
        );
        socks.push(...batch);
      }
      const open = sampler.sample();
      const held = await connections();
      await delay(17_000);
      const closed = closedCount(socks);
      const left = await connections();
      const after = sampler.sample();
      for (const s of socks) s.destroy();
      return `${held} held (RSS ${(open / MiB).toFixed(0)} MB); 17 s later ${closed} closed by the server, ${left} left, RSS ${(after / MiB).toFixed(0)} MB`;
    },
  },
  'h2-rapid-reset': {
    what: 'HTTP/2 Rapid Reset: HEADERS + RST_STREAM pairs in bursts of 1,000, up to 20,000',
    async run({ port, connections }) {
      const s = await h2Raw(port);
      let pairs = 0;
      const sent = await h2Flood(
        s,
        () => {
          const out: Buffer[] = [];
          for (let i = 0; i < 1000; i++, pairs++) out.push(h2Get(1 + 2 * pairs, '/slow'), rst(1 + 2 * pairs));
          return Buffer.concat(out);
        },
        1000,
        20_000,
      );
      return oneConnection(s, `${sent.toLocaleString('en')} pairs sent`, connections);
    },
  },
  'h2-continuation': {
    what: 'HTTP/2 CONTINUATION without END_HEADERS, 1 KB each, up to 20,000',
    async run({ port, connections }) {
      const s = await h2Raw(port);
      const first = block([
        [':method', 'GET'],
        [':scheme', 'http'],
        [':path', '/c'],
        [':authority', 'localhost'],
      ]);
      s.write(frame(T.HEADERS, 0x1, 1, first));
      const burst = Buffer.concat(Array.from({ length: 100 }, () => frame(T.CONTINUATION, 0, 1, block([['x-more', 'a'.repeat(1000)]]))));
      const sent = await h2Flood(s, () => burst, 100, 20_000);
      return oneConnection(s, `${sent.toLocaleString('en')} frames sent`, connections);
    },
  },
  'h2-settings': {
    what: 'HTTP/2 SETTINGS flood, acknowledgements never read: 5,000 per write, up to 100,000',
    async run({ port, connections }) {
      const s = await h2Raw(port);
      const burst = Buffer.concat(Array.from({ length: 5000 }, () => settings([[4, 65535]])));
      const sent = await h2Flood(s, () => burst, 5000, 100_000);
      return oneConnection(s, `${sent.toLocaleString('en')} frames sent`, connections);
    },
  },
  'h2-ping': {
    what: 'HTTP/2 PING flood, acknowledgements never read: 5,000 per write, up to 100,000',
    async run({ port, connections }) {
      const s = await h2Raw(port);
      const burst = Buffer.concat(Array.from({ length: 5000 }, () => frame(T.PING, 0, 0, Buffer.alloc(8))));
      const sent = await h2Flood(s, () => burst, 5000, 100_000);
      return oneConnection(s, `${sent.toLocaleString('en')} frames sent`, connections);
    },
  },
  'client-brotli-bomb': {
    what: 'client: HTTP.get of an 809-byte brotli bomb (1 GiB of zeros)',
    side: 'client',
    async run() {
      throw new Error('client cases run in runClientCase');
    },
  },
  'client-endless-body': {
    what: 'client: HTTP.get of a read-to-close body that never ends (sent up to 1 GiB)',
    side: 'client',
    async run() {
      throw new Error('client cases run in runClientCase');
    },
  },
};

interface Row {
  name: string;
  baseline: number;
  peak: number;
  hwm: number;
  answer: string;
  notes: string;
}

function startChild(role: string, name: string): ChildProcess {
  return fork(SELF, ['--child', role, name], { execArgv: ['--import', 'tsx'], env: { ...process.env, FLOODS_TREE: TREE }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
}

async function settle(sampler: Sampler): Promise<number> {
  // A collection happens on its own while idle; let the child come to rest first.
  await delay(1000);
  return sampler.sample();
}

async function runServerCase(name: string): Promise<Row> {
  const proc = startChild('server', name);
  const [{ port }] = (await once(proc, 'message')) as [{ port: number }];
  const sampler = new Sampler(proc);
  const connections = async (): Promise<number> => {
    if (proc.exitCode !== null || proc.signalCode !== null) return -1;
    proc.send('count');
    const [m] = (await once(proc, 'message')) as [{ connections: number }];
    return m.connections;
  };
  for (let i = 0; i < 20; i++) await normalRequest(port);
  const baseline = await settle(sampler);
  sampler.peak = baseline;
  let notes: string;
  try {
    notes = await CASES[name]!.run({ port, url: `http://127.0.0.1:${port}`, sampler, connections });
  } catch (err) {
    notes = `flood failed: ${(err as Error).message}`;
  }
  sampler.sample();
  const answer = sampler.capped ? 'killed at the RSS cap' : await normalRequest(port);
  const hwm = memoryOf(proc.pid!)?.hwm ?? 0;
  sampler.stop();
  proc.kill('SIGKILL');
  return { name, baseline, peak: sampler.peak, hwm, answer, notes };
}

async function runClientCase(name: string): Promise<Row> {
  let sentBytes = 0;
  let srv: net.Server;
  if (name === 'client-brotli-bomb') {
    const bomb = await brotliBomb();
    srv = await hostileServer((s) => s.end(Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: ${bomb.length}\r\n\r\n`), bomb])));
  } else {
    srv = await hostileServer((s) => {
      s.write('HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n');
      const chunk = Buffer.alloc(64 * 1024);
      void pump(
        s,
        () => ((sentBytes += chunk.length), chunk),
        () => false,
        1024 * MiB,
      );
    });
  }
  const port = (srv.address() as net.AddressInfo).port;
  const proc = startChild('client', name);
  await once(proc, 'message'); // the tree imported, the child waiting
  const sampler = new Sampler(proc);
  const baseline = await settle(sampler);
  sampler.peak = baseline;
  const outcome = sampler.capped ? 'killed at the RSS cap' : await clientOutcome(proc, `http://127.0.0.1:${port}/`);
  sampler.sample();
  const hwm = memoryOf(proc.pid!)?.hwm ?? 0;
  sampler.stop();
  proc.kill('SIGKILL');
  srv.close();
  const notes = name === 'client-endless-body' ? `${(sentBytes / MiB).toFixed(0)} MiB sent` : '809-byte body';
  return { name, baseline, peak: sampler.peak, hwm, answer: sampler.capped ? 'killed at the RSS cap' : outcome, notes };
}

async function main(): Promise<void> {
  const names = process.argv.slice(2);
  for (const n of names) if (CASES[n] === undefined) throw new Error(`unknown case ${n}; cases: ${Object.keys(CASES).join(', ')}`);
  const fds = Number(readFileSync('/proc/self/limits', 'latin1').match(/Max open files\s+(\d+)/)?.[1] ?? 0);
  if (fds < 12_000) console.warn(`ulimit -n is ${fds}: the 10,000-connection cases need about 10,100 per process (raise it with ulimit -n 20000)`);
  console.log(`tree ${TREE}, time bound ${SECONDS} s, node ${process.version}`);
  console.log('case | baseline MB | peak MB | VmHWM MB | after | notes');
  for (const name of names.length > 0 ? names : Object.keys(CASES)) {
    const row = CASES[name]!.side === 'client' ? await runClientCase(name) : await runServerCase(name);
    const mb = (n: number): string => (n / MiB).toFixed(0);
    console.log(`${row.name} | ${mb(row.baseline)} | ${mb(row.peak)} | ${mb(row.hwm)} | ${row.answer} | ${row.notes}`);
  }
}

if (process.argv[2] === '--child') await child(process.argv[3]!, process.argv[4]!);
else await main();
