/**
 * What an idle keep-alive connection keeps on the server once it has served a request: no head
 * parser (the connections share a few, taken while a head is parsed and an exchange runs), no
 * timer of its own (the idle deadlines of all share one), and
 * little JavaScript heap above what node:net itself keeps for the socket. The heap is measured
 * after full collections, against a bare `net` server holding as many sockets the same way
 * (the client sockets live in this process too, alike in both). Real sockets on loopback.
 */
import net from 'node:net';
import { setFlagsFromString, queryObjects } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { Response, serve } from '../../../kernel/index.js';
import { HeadParser } from '../../../kernel/http1/head-parser.js';
import { forceCloseAfter, closeNetServerAfter, onCleanup } from '../../helpers/cleanup.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Connections per measurement: enough that a few shared objects are noise per connection. */
const N = 400;
const REQUEST = 'GET / HTTP/1.1\r\nHost: x\r\n\r\n';
const ANSWER = Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello', 'latin1');

function heapUsed(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

const clientSockets = new Set<net.Socket>();
onCleanup(() => {
  for (const s of clientSockets) s.destroy();
});

/** Opens `n` connections to `port`, one after another, each sending one request and reading its whole response (`hello` ends it). */
async function openIdle(port: number, n: number): Promise<net.Socket[]> {
  const sockets: net.Socket[] = [];
  for (let i = 0; i < n; i++) {
    const socket = net.connect({ host: '127.0.0.1', port });
    // Kept until it closes, not until the test ends: a registry of closed sockets would count.
    clientSockets.add(socket);
    socket.once('close', () => clientSockets.delete(socket));
    sockets.push(socket);
    await new Promise<void>((resolve, reject) => {
      let got = '';
      socket.once('error', reject);
      socket.on('data', (chunk: Buffer) => {
        got += chunk.toString('latin1');
        if (got.endsWith('hello')) resolve();
      });
      socket.write(REQUEST);
    });
  }
  return sockets;
}

/**
 * Heap bytes per idle connection to `port`, over {@link N} connections: the median of five
 * rounds after one that warms the code paths (compiled code is no connection's).
 * `open()` counts the server's connections: each round starts with none.
 */
async function perConnection(port: number, open: () => Promise<number>): Promise<number> {
  const rounds: number[] = [];
  for (let round = 0; round < 6; round++) {
    const before = heapUsed();
    const sockets = await openIdle(port, N);
    const after = heapUsed();
    if (round > 0) rounds.push((after - before) / N);
    for (const s of sockets) s.destroy();
    // Both ends closed, and their handles released (a turn of the loop after 'close').
    await waitFor(async () => clientSockets.size === 0 && (await open()) === 0, 'both ends of the connections to close');
    await new Promise((resolve) => setImmediate(resolve));
  }
  return rounds.sort((a, b) => a - b)[2]!;
}

async function waitFor(cond: () => Promise<boolean>, what: string): Promise<void> {
  const until = Date.now() + 5000;
  while (!(await cond())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** A bare net server answering every read with one fixed response: the sockets' own floor. */
function answerRead(this: net.Socket): void {
  this.write(ANSWER);
}

async function bareNetServer(): Promise<net.Server> {
  const server = closeNetServerAfter(
    net.createServer((socket) => {
      socket.on('data', answerRead);
      socket.on('error', () => {});
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

describe('idle keep-alive connections', () => {
  it('hold no head parser once their request is answered', async () => {
    const server = forceCloseAfter(await serve(() => new Response(200, 'hello'), { host: '127.0.0.1', port: 0 }));
    const sockets = await openIdle(server.port, 50);
    expect(server.connectionCount).toBe(50);
    // Sequential requests: one parser serves them all (a few may be left from other uses).
    expect(queryObjects(HeadParser, { format: 'count' })).toBeLessThan(5);
    for (const s of sockets) s.destroy();
  });

  it('share one timer for their idle deadlines', async () => {
    const server = forceCloseAfter(await serve(() => new Response(200, 'hello'), { host: '127.0.0.1', port: 0 }));
    const Timeout = setTimeout(() => {}, 0).constructor as new () => unknown;
    const before = queryObjects(Timeout, { format: 'count' }) as number;
    const sockets = await openIdle(server.port, 50);
    expect(server.connectionCount).toBe(50);
    expect((queryObjects(Timeout, { format: 'count' }) as number) - before).toBeLessThan(5);
    for (const s of sockets) s.destroy();
  });

  it('keep under 1 KiB of heap each above what node:net keeps for the socket', async () => {
    const bare = await bareNetServer();
    const floor = await perConnection((bare.address() as net.AddressInfo).port, () => new Promise((resolve) => bare.getConnections((_err, n) => resolve(n))));
    const server = forceCloseAfter(await serve(() => new Response(200, 'hello'), { host: '127.0.0.1', port: 0 }));
    const ours = await perConnection(server.port, () => Promise.resolve(server.connectionCount));
    expect(ours - floor).toBeLessThan(1024);
  });
});
