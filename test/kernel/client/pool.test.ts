/**
 * The connection pool, observed from the server side (accepted and closed connections):
 * reuse for sequential and concurrent requests, no reuse after a body not read to its end or
 * a `Connection: close`, servers that close idle keep-alive connections (and the stale
 * connection retry), `maxIdlePerHost` and `maxIdleTotal`, a Transport shared by clients.
 */
import { describe, expect, it } from 'vitest';
import * as HTTP from '../../../index.js';
import { AbstractBody, createKernel, definePlugin, ParseError, Request, Response, Transport, type Client, type RequestHandler } from '../../../kernel/index.js';
import type { ClientSession } from '../../../kernel/protocol.js';
import { closeKernelAfter } from '../../helpers/cleanup.js';
import { deferred, newClient, okResponse, rawServer, readRequests, rejection, startServer, text, waitFor, within, type RawRequest } from '../../helpers/client.js';

/** A handler that holds every answer until `n` requests are in flight, then answers them all. */
function barrier(n: number): { handler: RequestHandler; arrived: () => number; reset: (m: number) => void } {
  let want = n;
  let count = 0;
  let gate = deferred();
  return {
    handler: async (req) => {
      count++;
      if (count === want) gate.resolve();
      await gate.promise;
      return new Response(200, `done ${req.target}`);
    },
    arrived: () => count,
    reset: (m) => {
      want = m;
      count = 0;
      gate = deferred();
    },
  };
}

function many(c: Client, origin: string, n: number, tag: string): Promise<Response[]> {
  return Promise.all(Array.from({ length: n }, (_, i) => c.get(`${origin}/${tag}/${i}`)));
}

describe('reuse', () => {
  it('sequential requests share one connection (GET, POST, HEAD, 204, 304 mixed)', async () => {
    const s = await startServer((req) => {
      if (req.target === '/204') return new Response(204);
      if (req.target === '/304') return new Response(304);
      return new Response(200, `r ${req.method} ${req.target}`);
    });
    const c = newClient();
    for (let i = 0; i < 5; i++) expect(text(await c.get(`${s.origin}/g${i}`))).toBe(`r GET /g${i}`);
    expect(text(await c.post(`${s.origin}/p`, { body: 'x'.repeat(10000) }))).toBe('r POST /p');
    expect((await c.head(`${s.origin}/h`)).status).toBe(200);
    expect((await c.get(`${s.origin}/204`)).status).toBe(204);
    expect((await c.get(`${s.origin}/304`, { statusException: false })).status).toBe(304);
    expect(text(await c.get(`${s.origin}/last`))).toBe('r GET /last');
    expect(s.connections).toBe(1);
    expect(c.transport.connectionCount()).toBe(1);
    expect(c.transport.idleConnectionCount()).toBe(1);
  });

  it('the top-level helpers reuse a connection too', async () => {
    const s = await startServer(() => new Response(200, 'ok'));
    for (let i = 0; i < 5; i++) await HTTP.get(`${s.origin}/${i}`);
    expect(s.connections).toBe(1);
  });

  it('50 concurrent requests open 50 connections; the next 50 reuse them all', async () => {
    const b = barrier(50);
    const s = await startServer(b.handler);
    const c = newClient();
    const first = await within(many(c, s.origin, 50, 'a'), 8000, '50 concurrent requests');
    expect(first.map(text)).toEqual(Array.from({ length: 50 }, (_, i) => `done /a/${i}`));
    expect(s.connections).toBe(50);
    expect(c.transport.idleConnectionCount()).toBe(50);
    b.reset(50);
    const second = await within(many(c, s.origin, 50, 'b'), 8000, '50 more');
    expect(second.every((r) => r.status === 200)).toBe(true);
    expect(s.connections).toBe(50);
    expect(s.closedConnections).toBe(0);
  });

  it('a response body read to its end through dispatch returns the connection to the pool', async () => {
    const s = await startServer(() => new Response(200, Buffer.alloc(200_000, 1)));
    const c = newClient();
    const req = Object.assign(new Request('GET', '/full'), { url: `${s.origin}/full` });
    const res = await c.dispatch(req);
    let n = 0;
    for await (const chunk of res.body as AbstractBody) n += chunk.length;
    expect(n).toBe(200_000);
    await c.get(`${s.origin}/next`);
    expect(s.connections).toBe(1);
  });

  it('a response body closed before its end is not reused: that connection is closed', async () => {
    const s = await startServer(() => new Response(200, Buffer.alloc(2_000_000, 2)));
    const c = newClient();
    const req = Object.assign(new Request('GET', '/partial'), { url: `${s.origin}/partial` });
    const res = await c.dispatch(req);
    const body = res.body as AbstractBody;
    const buf = new Uint8Array(1000);
    expect(await body.read(buf)).toBeGreaterThan(0);
    body.close();
    await within(s.closedAt(1), 3000, 'the server to see the abandoned connection close');
    expect(c.transport.connectionCount()).toBe(0);
    const next = await c.get(`${s.origin}/after`);
    expect(next.status).toBe(200);
    expect(s.connections).toBe(2);
  });

  it('a response with Connection: close is not reused', async () => {
    let n = 0;
    const s = await startServer(() => new Response(200, `c${++n}`, { close: true }));
    const c = newClient();
    expect(text(await c.get(`${s.origin}/1`))).toBe('c1');
    expect(text(await c.get(`${s.origin}/2`))).toBe('c2');
    expect(s.connections).toBe(2);
    expect(c.transport.idleConnectionCount()).toBe(0);
  });

  /** A raw server that keeps every connection open whatever the request says, answering with `response` (a function of the request). */
  async function keepsOpen(response: (r: RawRequest) => string) {
    const heads: string[] = [];
    const raw = await rawServer((sock) =>
      readRequests(sock, (r) => {
        heads.push(r.head);
        sock.write(response(r));
      }),
    );
    return Object.assign(raw, { heads });
  }

  for (const [name, headers] of [
    ['Connection: close', { Connection: 'close' }],
    ['Connection: keep-alive, Close (a token in a list, any case)', { Connection: 'keep-alive, Close' }],
    [
      'a second Connection field with CLOSE',
      [
        ['Connection', 'keep-alive'],
        ['Connection', 'CLOSE'],
      ],
    ],
  ] as const) {
    it(`a request sent with ${name} is the last on its connection: the client closes it after the response`, async () => {
      const raw = await keepsOpen(() => okResponse('kept'));
      const c = newClient();
      const h = headers as unknown as HTTP.HeadersInit;
      expect(text(await c.get(`${raw.origin}/1`, { headers: h }))).toBe('kept');
      await within(raw.closedAt(1), 3000, 'the client to close the connection it sent close on');
      expect(c.transport.connectionCount()).toBe(0);
      expect(text(await c.get(`${raw.origin}/2`, { headers: h }))).toBe('kept');
      expect(raw.connections).toBe(2);
      // Without the token the connection is kept.
      expect(text(await c.get(`${raw.origin}/3`))).toBe('kept');
      expect(text(await c.get(`${raw.origin}/4`))).toBe('kept');
      expect(raw.connections).toBe(3);
    });
  }

  it('request.close on a dispatched Request: sent as Connection: close and the connection is not reused', async () => {
    const raw = await keepsOpen(() => okResponse('kept'));
    const c = newClient();
    for (const n of [1, 2]) {
      const req = Object.assign(new Request('GET', `/${n}`, { close: true }), { url: `${raw.origin}/${n}` });
      const res = await c.dispatch(req);
      (res.body as AbstractBody | null)?.close();
    }
    expect(raw.connections).toBe(2);
    expect(raw.heads[0]).toMatch(/\r\nConnection: close(\r\n|$)/);
  });

  it('a response with Connection: Keep-Alive, CLOSE (a token in a list, any case) is not reused', async () => {
    const raw = await keepsOpen(() => okResponse('listed', 'Connection: Keep-Alive, CLOSE\r\n'));
    const c = newClient();
    expect(text(await c.get(`${raw.origin}/1`))).toBe('listed');
    expect(text(await c.get(`${raw.origin}/2`))).toBe('listed');
    expect(raw.connections).toBe(2);
  });

  it('an HTTP/1.0 response without keep-alive is not reused; with Connection: keep-alive it is', async () => {
    const plain = await keepsOpen(() => 'HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\none');
    const c = newClient();
    expect(text(await c.get(`${plain.origin}/1`))).toBe('one');
    expect(text(await c.get(`${plain.origin}/2`))).toBe('one');
    expect(plain.connections).toBe(2);
    const kept = await keepsOpen(() => 'HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 3\r\n\r\ntwo');
    expect(text(await c.get(`${kept.origin}/1`))).toBe('two');
    expect(text(await c.get(`${kept.origin}/2`))).toBe('two');
    expect(kept.connections).toBe(1);
  });

  it('a response that arrives while the upload is still being sent: that connection is not reused (the request body was cut short)', async () => {
    // The server answers as soon as it has the head and keeps reading; a body cut short on a
    // reused connection would swallow the next request's bytes as its own.
    const raw = await rawServer((sock) =>
      readRequests(
        sock,
        () => undefined,
        () => sock.write(okResponse('early')),
      ),
    );
    const c = newClient();
    let sent = 0;
    async function* slow(): AsyncGenerator<Uint8Array> {
      for (let i = 0; i < 64; i++) {
        sent++;
        yield Buffer.alloc(16 * 1024, 0x75);
        await new Promise<void>((r) => setImmediate(r));
      }
    }
    const res = await c.post(`${raw.origin}/upload`, { body: slow() });
    expect(text(res)).toBe('early');
    expect(sent).toBeLessThan(64);
    expect(text(await c.get(`${raw.origin}/next`, { requestTimeout: 3000 }))).toBe('early');
    expect(raw.connections).toBe(2);
  });

  it('streamed uploads the server reads in full (chunked, and with a Content-Length) keep the connection', async () => {
    const s = await startServer((req) => new Response(200, `got ${(req.body as Uint8Array).length}`));
    const c = newClient();
    async function* pieces(): AsyncGenerator<Uint8Array> {
      for (let i = 0; i < 16; i++) yield Buffer.alloc(64 * 1024, 0x76);
    }
    expect(text(await c.post(`${s.origin}/chunked`, { body: pieces() }))).toBe('got 1048576');
    expect(text(await c.post(`${s.origin}/length`, { body: pieces(), headers: { 'Content-Length': '1048576' } }))).toBe('got 1048576');
    expect(text(await c.get(`${s.origin}/after`))).toBe('got 0');
    expect(s.connections).toBe(1);
  });

  it('bytes after a Content-Length body: that connection is not reused', async () => {
    const raw = await rawServer((sock) => readRequests(sock, () => sock.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA')));
    const c = newClient();
    expect(text(await c.get(`${raw.origin}/1`))).toBe('ok');
    expect(text(await c.get(`${raw.origin}/2`))).toBe('ok');
    expect(raw.connections).toBe(2);
  });

  it('closing a client with a request in flight: the request completes, then its connection is closed', async () => {
    const gate = deferred();
    const arrived = deferred();
    const s = await startServer(async () => {
      arrived.resolve();
      await gate.promise;
      return new Response(200, 'finished');
    });
    const c = newClient();
    const p = c.get(`${s.origin}/slow`);
    await within(arrived.promise, 3000, 'the request to arrive');
    c.close();
    expect(c.isOpen).toBe(false);
    gate.resolve();
    expect(text(await p)).toBe('finished');
    await within(s.closedAt(1), 3000, 'the connection to be closed after the exchange');
    expect(c.transport.connectionCount()).toBe(0);
  });

  it('two clients on one Transport share its pool', async () => {
    const s = await startServer(() => new Response(200, 'shared'));
    const t = new Transport();
    const a = newClient({ transport: t });
    const b = newClient({ transport: t });
    await a.get(`${s.origin}/a`);
    await b.get(`${s.origin}/b`);
    expect(s.connections).toBe(1);
    // Closing a client does not close a Transport it was given.
    a.close();
    await b.get(`${s.origin}/c`);
    expect(s.connections).toBe(1);
    t.closeIdleConnections();
    await within(s.closedAt(1), 3000, 'closeIdleConnections to close the socket');
    await b.get(`${s.origin}/d`);
    expect(s.connections).toBe(2);
    t.close();
  });
});

describe('servers that close idle connections', () => {
  it('the project server with idleTimeout: the next request succeeds on a fresh connection', async () => {
    const s = await startServer(() => new Response(200, 'fresh'), { idleTimeout: 100 });
    const c = newClient();
    expect(text(await c.get(`${s.origin}/1`))).toBe('fresh');
    await within(s.closedAt(1), 3000, 'the server idle timeout');
    await waitFor(() => c.transport.connectionCount() === 0, 3000, 'the pool to drop the closed connection');
    expect(text(await c.get(`${s.origin}/2`))).toBe('fresh');
    expect(s.connections).toBe(2);
  });

  it('a raw server that answers and then ends the socket shortly after', async () => {
    const raw = await rawServer((sock) => {
      readRequests(sock, () => {
        sock.write(okResponse('then-close'));
        setTimeout(() => sock.end(), 30);
      });
    });
    const c = newClient();
    expect(text(await c.get(`${raw.origin}/1`))).toBe('then-close');
    await within(raw.closedAt(1), 3000, 'the raw server to end the socket');
    await waitFor(() => c.transport.connectionCount() === 0, 3000, 'the pool to drop the ended connection');
    expect(text(await c.get(`${raw.origin}/2`))).toBe('then-close');
    expect(raw.connections).toBe(2);
  });

  /** A raw server that answers the first request of each connection and drops the connection at the second, before any byte of a response. */
  async function dropsSecond(how: 'end' | 'reset') {
    const seen: string[] = [];
    const raw = await rawServer((sock) => {
      let n = 0;
      readRequests(sock, (r) => {
        seen.push(`${r.method} ${r.target}`);
        if (++n === 1) sock.write(okResponse(`answer ${r.target}`));
        else if (how === 'end') sock.destroy();
        else sock.resetAndDestroy();
      });
    });
    return Object.assign(raw, { seen });
  }

  it('stale connection (closed by the server as the request arrives): a GET is retried once on a fresh connection', async () => {
    const raw = await dropsSecond('end');
    const c = newClient();
    expect(text(await c.get(`${raw.origin}/1`))).toBe('answer /1');
    const res = await c.get(`${raw.origin}/2`);
    expect(text(res)).toBe('answer /2');
    expect(raw.connections).toBe(2);
    expect(raw.seen).toEqual(['GET /1', 'GET /2', 'GET /2']);
  });

  it('stale connection reset (RST) by the server as the request arrives: a GET is retried once on a fresh connection', async () => {
    const raw = await dropsSecond('reset');
    const c = newClient();
    expect(text(await c.get(`${raw.origin}/1`))).toBe('answer /1');
    const res = await c.get(`${raw.origin}/2`);
    expect(text(res)).toBe('answer /2');
    expect(raw.connections).toBe(2);
  });

  it('a PUT with a string body (idempotent, replayable) is retried on a stale connection', async () => {
    const raw = await dropsSecond('end');
    const c = newClient();
    await c.get(`${raw.origin}/1`);
    expect(text(await c.put(`${raw.origin}/2`, { body: 'data' }))).toBe('answer /2');
    expect(raw.connections).toBe(2);
  });

  it('a POST on a stale connection is not retried: the error surfaces', async () => {
    const raw = await dropsSecond('end');
    const c = newClient();
    await c.get(`${raw.origin}/1`);
    const err = await rejection(c.post(`${raw.origin}/2`, { body: 'once' }));
    expect(err).toBeInstanceOf(ParseError);
    expect(raw.connections).toBe(1);
    expect(raw.seen).toEqual(['GET /1', 'POST /2']);
  });

  it('a GET with a streamed (not replayable) body is not retried on a stale connection', async () => {
    const raw = await dropsSecond('end');
    const c = newClient();
    await c.get(`${raw.origin}/1`);
    async function* once(): AsyncGenerator<string> {
      yield 'streamed';
    }
    await rejection(c.get(`${raw.origin}/2`, { body: once() }));
    expect(raw.connections).toBe(1);
  });

  it('a fresh connection closed before any response is not retried (only reused ones are)', async () => {
    const raw = await rawServer((sock) => readRequests(sock, () => sock.destroy()));
    const c = newClient();
    const err = await rejection(c.get(`${raw.origin}/x`));
    expect(err).toBeInstanceOf(ParseError);
    expect(raw.connections).toBe(1);
  });
});

describe('pool sizing', () => {
  it('maxIdlePerHost: 2 keeps two of five connections idle and closes the rest', async () => {
    const b = barrier(5);
    const s = await startServer(b.handler);
    const c = newClient({ maxIdlePerHost: 2 });
    await many(c, s.origin, 5, 'a');
    expect(s.connections).toBe(5);
    expect(c.transport.idleConnectionCount()).toBe(2);
    await waitFor(() => s.closedConnections === 3, 3000, 'three connections to close');
    b.reset(5);
    await many(c, s.origin, 5, 'b');
    expect(s.connections).toBe(8);
    expect(c.transport.idleConnectionCount()).toBe(2);
  });

  it('maxIdlePerHost: 0 never keeps a connection', async () => {
    const s = await startServer(() => new Response(200, 'x'));
    const c = newClient({ maxIdlePerHost: 0 });
    for (let i = 0; i < 3; i++) await c.get(`${s.origin}/${i}`);
    expect(s.connections).toBe(3);
    expect(c.transport.idleConnectionCount()).toBe(0);
    await waitFor(() => s.closedConnections === 3, 3000, 'every connection to close');
  });

  it('maxIdleTotal bounds idle connections across origins', async () => {
    const s1 = await startServer(() => new Response(200, 'one'));
    const s2 = await startServer(() => new Response(200, 'two'));
    const c = newClient({ maxIdleTotal: 1 });
    await c.get(`${s1.origin}/`);
    await c.get(`${s2.origin}/`);
    expect(c.transport.idleConnectionCount()).toBe(1);
    await within(s2.closedAt(1), 3000, 'the second origin connection to close');
    await c.get(`${s1.origin}/again`);
    expect(s1.connections).toBe(1);
  });

  it('pool options are validated', () => {
    expect(() => new Transport({ maxIdlePerHost: -1 })).toThrow(HTTP.ArgumentError);
    expect(() => new Transport({ maxIdleTotal: 1.5 })).toThrow(HTTP.ArgumentError);
    expect(() => new Transport({ maxLineBytes: 0 })).toThrow(HTTP.ArgumentError);
  });
});

describe("a protocol plugin's session: pooled by what it says it is", () => {
  /** A plugin whose sessions answer every request themselves; `multiplexed` as given, handed back after each exchange when `release`. */
  function fakeSessions(multiplexed: boolean | undefined, release: boolean) {
    const made: ClientSession[] = [];
    const plugin = definePlugin({
      name: 'fake-protocol',
      register(kernel) {
        kernel.hooks.client.session.tap('fake-protocol', (socket, info) => {
          let busy = false;
          let dead = false;
          const session: ClientSession = {
            protocol: 'fake',
            ...(multiplexed === undefined ? {} : { multiplexed }),
            get closed() {
              return dead;
            },
            dispatch: async (req) => {
              busy = true;
              await Promise.resolve();
              busy = false;
              if (release) info.pool!.release(session);
              return new Response(200, { request: req, body: `session ${made.indexOf(session) + 1}` });
            },
            capacity: () => (busy || dead ? 0 : 1),
            isIdle: () => !busy,
            close: async () => session.destroy(),
            destroy: () => {
              dead = true;
              socket.destroy();
            },
          };
          made.push(session);
          return session;
        });
      },
    });
    return { plugin, made };
  }

  async function threeCalls(multiplexed: boolean | undefined, release: boolean): Promise<string[]> {
    const s = await startServer(() => new Response(200, 'not reached'));
    const { plugin, made } = fakeSessions(multiplexed, release);
    const c = newClient({ kernel: closeKernelAfter(await createKernel().register(plugin).ready()) });
    const seen: string[] = [];
    for (let i = 0; i < 3; i++) seen.push(text(await c.get(`${s.origin}/`)));
    expect(made.length).toBe(new Set(seen).size);
    return seen;
  }

  it('multiplexed: false and handed back with pool.release: reused', async () => {
    expect(await threeCalls(false, true)).toEqual(['session 1', 'session 1', 'session 1']);
  });

  it('multiplexed: false and never handed back: never given to another call', async () => {
    expect(await threeCalls(false, false)).toEqual(['session 1', 'session 2', 'session 3']);
  });

  it('multiplexed: true, or absent: shared while it has capacity', async () => {
    expect(await threeCalls(true, false)).toEqual(['session 1', 'session 1', 'session 1']);
    expect(await threeCalls(undefined, false)).toEqual(['session 1', 'session 1', 'session 1']);
  });
});
