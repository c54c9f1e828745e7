/**
 * exchangeHead: one request head out, one response head back over a real loopback socket;
 * interim answers skipped, the bytes past the head returned, the socket handed on with none of
 * its listeners and in the state asked for.
 */
import net from 'node:net';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { ParseError, ProtocolError } from '../../../kernel/errors.js';
import { exchangeHead, MAX_INTERIM_RESPONSES } from '../../../kernel/http1/head-exchange.js';
import { closeNetServerAfter, destroyAfter } from '../../helpers/cleanup.js';

interface Peer {
  /** The client side, connected. */
  client: net.Socket;
  /** The server side of the same connection. */
  server: net.Socket;
  /** Resolves with the first `n` bytes the server side received. */
  received(n: number): Promise<string>;
  /** Every byte the server side received so far. */
  all(): string;
}

/** A connected pair of loopback sockets. */
async function pair(): Promise<Peer> {
  const listener = net.createServer();
  closeNetServerAfter(listener);
  listener.listen(0, '127.0.0.1');
  await once(listener, 'listening');
  const accepted = once(listener, 'connection') as Promise<[net.Socket]>;
  const client = destroyAfter(net.connect((listener.address() as net.AddressInfo).port, '127.0.0.1'));
  await once(client, 'connect');
  const [server] = await accepted;
  destroyAfter(server);
  let got = '';
  const waiters: (() => void)[] = [];
  server.on('data', (d: Buffer) => {
    got += d.toString('latin1');
    for (const w of waiters.splice(0)) w();
  });
  return {
    client,
    server,
    async received(n) {
      while (got.length < n) await new Promise<void>((resolve) => waiters.push(resolve));
      return got.slice(0, n);
    },
    all: () => got,
  };
}

const HEAD = 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n';
const EVENTS = ['readable', 'data', 'end', 'close', 'error'] as const;

function listeners(s: net.Socket): number[] {
  return EVENTS.map((e) => s.listenerCount(e));
}

describe('exchangeHead', () => {
  it('writes the head, skips interim answers (whole or byte by byte) and returns the final head and the bytes past it', async () => {
    for (const split of [false, true]) {
      const p = await pair();
      const before = listeners(p.client);
      const answer = exchangeHead(p.client, HEAD);
      expect(await p.received(HEAD.length)).toBe(HEAD);
      const reply = 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 Connection established\r\nX-Via: test\r\n\r\nTUNNEL';
      if (!split) p.server.write(reply);
      else for (const c of reply) p.server.write(c);
      const got = await answer;
      expect(got.status).toBe(200);
      expect(got.reason).toBe('Connection established');
      expect(got.headers.get('X-Via')).toBe('test');
      expect(got.versionMinor).toBe(1);
      // Whole: the tunnel's first bytes came in the read that completed the head. Byte by
      // byte: they are still in the socket for the next reader.
      const rest = Buffer.from(got.rest).toString('latin1');
      let more = '';
      p.client.on('data', (d: Buffer) => (more += d.toString('latin1')));
      while (rest + more !== 'TUNNEL') await once(p.client, 'data');
      expect(listeners(p.client)).toEqual([before[0]!, 1, before[2]!, before[3]!, before[4]!]);
    }
  });

  it('a 101 ends the exchange (the new protocol follows); an HTTP/1.0 answer reports minor version 0', async () => {
    const p = await pair();
    const answer = exchangeHead(p.client, HEAD);
    p.server.write(Buffer.from('HTTP/1.0 101 Switching Protocols\r\nUpgrade: x\r\n\r\n\x81\x00', 'latin1'));
    const got = await answer;
    expect([got.status, got.versionMinor, [...got.rest]]).toEqual([101, 0, [0x81, 0x00]]);
  });

  it('leaves the socket as a fresh one by default (a data listener starts it), or explicitly paused when asked', async () => {
    const fresh = await pair();
    const a = exchangeHead(fresh.client, HEAD);
    fresh.server.write('HTTP/1.1 200 OK\r\n\r\n');
    await a;
    expect(fresh.client.isPaused()).toBe(false);
    const arrived = once(fresh.client, 'data');
    fresh.server.write('after');
    expect(String((await arrived)[0])).toBe('after');

    const paused = await pair();
    const b = exchangeHead(paused.client, HEAD, { pause: true });
    paused.server.write('HTTP/1.1 200 OK\r\n\r\n');
    await b;
    expect(paused.client.isPaused()).toBe(true);
    // A listener attached now does not start the flow: bytes wait for the next owner's resume().
    const chunks: string[] = [];
    paused.client.on('data', (d: Buffer) => chunks.push(d.toString('latin1')));
    expect(paused.client.readableFlowing).toBe(false);
    paused.server.write('held');
    const flowed = once(paused.client, 'data');
    paused.client.resume();
    await flowed;
    expect(chunks.join('')).toBe('held');
  });

  it('a connection closed before or inside the head rejects with closedError, told the byte counts', async () => {
    const seen: [number, number][] = [];
    const closedError = (received: number, headBytes: number): Error => {
      seen.push([received, headBytes]);
      return new Error(`closed after ${received}`);
    };
    const silent = await pair();
    const a = exchangeHead(silent.client, HEAD, { closedError });
    silent.server.end();
    await expect(a).rejects.toThrow('closed after 0');
    const partial = await pair();
    const b = exchangeHead(partial.client, HEAD, { closedError });
    partial.server.end('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 2');
    await expect(b).rejects.toThrow('closed after 35');
    expect(seen).toEqual([
      [0, 0],
      [35, 10],
    ]);
    const plain = await pair();
    const c = exchangeHead(plain.client, HEAD);
    plain.server.end('HTTP/1.1 200');
    const err = await c.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ParseError);
    expect((err as Error).message).toMatch(/closed inside the response head/);
  });

  it('bytes that are not a response head are a ParseError; a head over its limits a ProtocolError', async () => {
    const bad = await pair();
    const a = exchangeHead(bad.client, HEAD);
    bad.server.write('SSH-2.0-OpenSSH_9.6\r\n\r\n');
    await expect(a).rejects.toBeInstanceOf(ParseError);
    const big = await pair();
    const b = exchangeHead(big.client, HEAD, { maxHeaderBytes: 64 });
    big.server.write(`HTTP/1.1 200 OK\r\nX-Long: ${'a'.repeat(100)}\r\n\r\n`);
    const err = await b.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProtocolError);
    expect((err as ProtocolError).message).toMatch(/maxHeaderBytes \(64 bytes\)/);
    const line = await pair();
    const c = exchangeHead(line.client, HEAD, { maxLineBytes: 20 });
    line.server.write(`HTTP/1.1 200 ${'O'.repeat(40)}\r\n\r\n`);
    await expect(c).rejects.toThrow(/maxLineBytes \(20 bytes\)/);
  });

  it(`takes ${MAX_INTERIM_RESPONSES} interim answers before the final one; one more is a ProtocolError`, async () => {
    const ok = await pair();
    const a = exchangeHead(ok.client, HEAD);
    ok.server.write('HTTP/1.1 100 Continue\r\n\r\n'.repeat(MAX_INTERIM_RESPONSES) + 'HTTP/1.1 200 OK\r\n\r\n');
    expect((await a).status).toBe(200);
    const endless = await pair();
    const b = exchangeHead(endless.client, HEAD);
    endless.server.write('HTTP/1.1 103 Early Hints\r\n\r\n'.repeat(MAX_INTERIM_RESPONSES + 1) + 'HTTP/1.1 200 OK\r\n\r\n');
    const err = await b.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProtocolError);
    expect((err as Error).message).toMatch(/more than 10 informational \(1xx\) responses/);
  });

  it('aborting its signal rejects with the reason and removes its listeners; an aborted signal writes nothing', async () => {
    const p = await pair();
    const before = listeners(p.client);
    const stop = new AbortController();
    const progress: number[] = [];
    const answer = exchangeHead(p.client, HEAD, { signal: stop.signal, onProgress: () => progress.push(1) });
    await p.received(HEAD.length);
    p.server.write('HTTP/1.1 200 OK\r\n');
    while (progress.length === 0) await once(p.client, 'readable');
    const why = new Error('gave up');
    stop.abort(why);
    await expect(answer).rejects.toBe(why);
    expect(listeners(p.client)).toEqual(before);
    expect(p.client.destroyed).toBe(false);

    const q = await pair();
    const early = new AbortController();
    early.abort(why);
    await expect(exchangeHead(q.client, HEAD, { signal: early.signal })).rejects.toBe(why);
    q.client.end();
    await once(q.server, 'end');
    expect(q.all()).toBe('');
  });

  it("the socket's error rejects the exchange with it", async () => {
    const p = await pair();
    const answer = exchangeHead(p.client, HEAD);
    await p.received(HEAD.length);
    const boom = new Error('reset by test');
    p.client.destroy(boom);
    await expect(answer).rejects.toBe(boom);
  });
});
