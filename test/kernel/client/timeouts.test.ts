/**
 * Client timeouts against slow peers on loopback, each measured with performance.now():
 * connectTimeout (a port whose accept queue is full, so the connect never completes), a TLS
 * handshake that never starts, responseHeaderTimeout, readIdleTimeout, writeIdleTimeout,
 * requestTimeout and context deadlines, and expectContinueTimeout. Every timeout is small
 * (100-300 ms); the tests wait on events, never on sleeps.
 */
import { describe, expect, it } from 'vitest';
import { AbstractBody, Request, RequestContext, Response, TimeoutError } from '../../../kernel/index.js';
import { newClient, okResponse, rawServer, readRequests, rejection, since, stalledPort, startServer, text, within, type RawRequest } from '../../helpers/client.js';

/** Slack for timer-based failures on a loaded machine. */
const SLACK = 400;

function expectTimeout(err: Error, operation: string, timeoutMs: number, elapsed: number): void {
  expect(err).toBeInstanceOf(TimeoutError);
  const e = err as TimeoutError;
  expect(e.operation).toBe(operation);
  expect(e.timeoutMs).toBe(timeoutMs);
  expect(e.elapsedMs).toBeGreaterThanOrEqual(timeoutMs - 20);
  expect(e.elapsedMs).toBeLessThan(timeoutMs + SLACK);
  expect(elapsed).toBeGreaterThanOrEqual(timeoutMs - 20);
  expect(elapsed).toBeLessThan(timeoutMs + SLACK);
}

/** A raw server that reads requests and never answers. */
function silent() {
  return rawServer((sock) => readRequests(sock, () => undefined));
}

/** A raw server that sends a head (and `first` body bytes) and then stalls. */
function stallsBody(first = 'part') {
  return rawServer((sock) =>
    readRequests(sock, () => {
      sock.write(`HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n${first}`);
    }),
  );
}

describe('connectTimeout', () => {
  it('a connect that never completes fails with TimeoutError operation connect', async () => {
    const port = await stalledPort();
    const c = newClient();
    const t0 = performance.now();
    const err = await within(rejection(c.get(`http://127.0.0.1:${port}/`, { connectTimeout: 200 })), 5000, 'the connect timeout');
    expectTimeout(err, 'connect', 200, since(t0));
    expect(c.transport.connectionCount()).toBe(0);
  });

  it('the Client default connectTimeout applies; a per-call one wins', async () => {
    const port = await stalledPort();
    const c = newClient({ connectTimeout: 150 });
    let t0 = performance.now();
    let err = await within(rejection(c.get(`http://127.0.0.1:${port}/`)), 5000, 'the client default');
    expectTimeout(err, 'connect', 150, since(t0));
    t0 = performance.now();
    err = await within(rejection(c.get(`http://127.0.0.1:${port}/`, { connectTimeout: 300 })), 5000, 'the per-call value');
    expectTimeout(err, 'connect', 300, since(t0));
  });

  it('a TLS handshake that never starts fails with TimeoutError operation tls_handshake', async () => {
    // Accepts TCP and reads (so it sees the close), never speaks TLS.
    const raw = await rawServer((sock) => sock.resume());
    const c = newClient();
    const t0 = performance.now();
    const err = await within(rejection(c.get(`https://127.0.0.1:${raw.port}/`, { connectTimeout: 250 })), 5000, 'the handshake timeout');
    expectTimeout(err, 'tls_handshake', 250, since(t0));
    await within(raw.closedAt(1), 3000, 'the stalled TLS connection to be closed');
  });
});

describe('responseHeaderTimeout and readIdleTimeout', () => {
  it('responseHeaderTimeout: a server that never answers', async () => {
    const raw = await silent();
    const c = newClient();
    const t0 = performance.now();
    const err = await rejection(c.get(`${raw.origin}/`, { responseHeaderTimeout: 200 }));
    expectTimeout(err, 'request', 200, since(t0));
    expect(err.message).toMatch(/responseHeaderTimeout/);
    await within(raw.closedAt(1), 3000, 'the connection to be closed');
    expect(c.transport.connectionCount()).toBe(0);
  });

  it('responseHeaderTimeout on a reused connection: a shorter one than the call before it still fires on time', async () => {
    let n = 0;
    const raw = await rawServer((s) =>
      readRequests(s, () => {
        // The first request is answered (the connection is kept), the second never.
        if (++n === 1) s.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
      }),
    );
    const c = newClient();
    expect(text(await c.get(`${raw.origin}/a`))).toBe('ok');
    const t0 = performance.now();
    const err = await within(rejection(c.get(`${raw.origin}/b`, { responseHeaderTimeout: 150 })), 3000, 'the shorter timeout');
    expectTimeout(err, 'request', 150, since(t0));
    expect(err.message).toContain('responseHeaderTimeout of 150 ms passed (GET');
    expect(raw.connections).toBe(1);
  });

  it('responseHeaderTimeout is not extended by a partial head', async () => {
    const raw = await rawServer((sock) => readRequests(sock, () => sock.write('HTTP/1.1 200 OK\r\nX-Partial: ')));
    const t0 = performance.now();
    const err = await rejection(newClient().get(`${raw.origin}/`, { responseHeaderTimeout: 200 }));
    expectTimeout(err, 'request', 200, since(t0));
  });

  it('readIdleTimeout also bounds the wait for the head when responseHeaderTimeout is unset', async () => {
    const raw = await silent();
    const t0 = performance.now();
    const err = await rejection(newClient().get(`${raw.origin}/`, { readIdleTimeout: 200 }));
    expectTimeout(err, 'request', 200, since(t0));
  });

  it('readIdleTimeout: head then a stalled body', async () => {
    const raw = await stallsBody();
    const c = newClient();
    const t0 = performance.now();
    const err = await rejection(c.get(`${raw.origin}/`, { readIdleTimeout: 200 }));
    expectTimeout(err, 'request', 200, since(t0));
    expect(err.message).toMatch(/readIdleTimeout/);
    await within(raw.closedAt(1), 3000, 'the connection to be closed');
  });

  it('readIdleTimeout through dispatch: the body read fails', async () => {
    const raw = await stallsBody('abc');
    const c = newClient();
    const req = Object.assign(new Request('GET', '/'), { url: `${raw.origin}/` });
    const t0 = performance.now();
    const res = await c.dispatch(req, { readIdleTimeout: 200 });
    const body = res.body as AbstractBody;
    const buf = new Uint8Array(100);
    expect(await body.read(buf)).toBe(3);
    const err = await rejection(body.read(buf));
    expectTimeout(err, 'request', 200, since(t0));
  });

  it('a body that keeps arriving more slowly than the total but faster than readIdleTimeout succeeds', async () => {
    const raw = await rawServer((sock) =>
      readRequests(sock, () => {
        sock.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n');
        let n = 0;
        const t = setInterval(() => {
          if (sock.destroyed) return clearInterval(t);
          if (++n <= 8) sock.write('2\r\nok\r\n');
          else {
            clearInterval(t);
            sock.write('0\r\n\r\n');
          }
        }, 50);
      }),
    );
    const t0 = performance.now();
    const res = await newClient().get(`${raw.origin}/`, { readIdleTimeout: 250 });
    expect(text(res)).toBe('ok'.repeat(8));
    expect(since(t0)).toBeGreaterThan(250);
  });

  it('the Client default responseHeaderTimeout applies; a per-call 0 turns it off', async () => {
    const s = await startServer(async () => {
      await new Promise((r) => setTimeout(r, 300));
      return new Response(200, 'late');
    });
    const c = newClient({ responseHeaderTimeout: 100 });
    const t0 = performance.now();
    const err = await rejection(c.get(`${s.origin}/`));
    expectTimeout(err, 'request', 100, since(t0));
    expect(text(await c.get(`${s.origin}/`, { responseHeaderTimeout: 0 }))).toBe('late');
  });
});

describe('writeIdleTimeout', () => {
  /** A raw server that accepts and never reads. */
  function neverReads() {
    return rawServer((sock) => sock.pause());
  }

  it('a streamed upload to a server that never reads fails with TimeoutError', async () => {
    const raw = await neverReads();
    const chunk = Buffer.alloc(65536, 'u');
    let produced = 0;
    async function* big(): AsyncGenerator<Uint8Array> {
      for (let i = 0; i < 4096; i++) {
        produced += chunk.length;
        yield chunk;
      }
    }
    const c = newClient();
    const t0 = performance.now();
    const err = await within(rejection(c.post(`${raw.origin}/up`, { body: big(), writeIdleTimeout: 200 })), 8000, 'the write timeout');
    const elapsed = since(t0);
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as TimeoutError).operation).toBe('request');
    expect((err as TimeoutError).timeoutMs).toBe(200);
    expect(err.message).toMatch(/writeIdleTimeout/);
    expect(elapsed).toBeGreaterThanOrEqual(180);
    // It stopped writing: far less than the whole 256 MiB was produced.
    expect(produced).toBeLessThan(256 * 1024 * 1024);
    expect(c.transport.connectionCount()).toBe(0);
    // The server starts reading now: it sees the rest of what was sent, then the close.
    raw.sockets[0]!.resume();
    await within(raw.closedAt(1), 3000, 'the connection to be closed');
  });

  it('a large in-memory upload to a server that never reads fails with TimeoutError', async () => {
    const raw = await neverReads();
    const t0 = performance.now();
    const err = await within(rejection(newClient().put(`${raw.origin}/up`, { body: Buffer.alloc(48 * 1024 * 1024, 1), writeIdleTimeout: 200 })), 8000, 'the write timeout');
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as TimeoutError).timeoutMs).toBe(200);
    expect(since(t0)).toBeGreaterThanOrEqual(180);
  });

  it('once an in-memory upload is fully written, a slow answer is not a write timeout', async () => {
    // 16 MiB body (more than one socket write takes at once): the server reads it all, then takes 400 ms to answer.
    const s = await startServer(async (req) => {
      await new Promise((r) => setTimeout(r, 400));
      return new Response(200, `got ${(req.body as Uint8Array).length}`);
    });
    const res = await newClient().post(`${s.origin}/up`, { body: Buffer.alloc(16 * 1024 * 1024, 2), writeIdleTimeout: 150 });
    expect(text(res)).toBe(`got ${16 * 1024 * 1024}`);
  });

  it('once a streamed upload is fully written, a slow answer is not a write timeout', async () => {
    const s = await startServer(async (req) => {
      await new Promise((r) => setTimeout(r, 400));
      return new Response(200, `got ${(req.body as Uint8Array).length}`);
    });
    async function* body(): AsyncGenerator<Uint8Array> {
      for (let i = 0; i < 16; i++) yield Buffer.alloc(65536, 3);
    }
    const res = await newClient().post(`${s.origin}/up`, { body: body(), writeIdleTimeout: 150 });
    expect(text(res)).toBe(`got ${16 * 65536}`);
  });
});

describe('writeIdleTimeout measures inactivity, not the whole upload', () => {
  const BODY = 16 * 1024 * 1024;

  /**
   * A raw server that reads an upload in two bursts: it stalls 250 ms, reads 4 MiB, stalls
   * 250 ms again, then reads the rest and answers. The longest gap (250 ms) is below the
   * client's writeIdleTimeout (400 ms); the whole upload takes longer (> 500 ms).
   */
  function stopAndGo() {
    return rawServer((sock) => {
      let got = 0;
      let stage = 0;
      const timers: NodeJS.Timeout[] = [];
      sock.once('close', () => timers.forEach(clearTimeout));
      sock.on('data', (d: Buffer) => {
        got += d.length;
        if (stage === 0 && got > 4 * 1024 * 1024) {
          stage = 1;
          sock.pause();
          timers.push(setTimeout(() => sock.resume(), 250));
        }
        if (stage === 1 && got >= BODY) {
          stage = 2;
          sock.write(okResponse(`got all`));
        }
      });
      sock.pause();
      timers.push(setTimeout(() => sock.resume(), 250));
    });
  }

  it('a streamed upload with pauses shorter than writeIdleTimeout succeeds', async () => {
    const raw = await stopAndGo();
    const piece = Buffer.alloc(65536, 5);
    async function* body(): AsyncGenerator<Uint8Array> {
      for (let i = 0; i < BODY / piece.length; i++) yield piece;
    }
    const t0 = performance.now();
    const res = await newClient().post(`${raw.origin}/up`, { body: body(), writeIdleTimeout: 400 });
    expect(text(res)).toBe('got all');
    expect(since(t0)).toBeGreaterThan(480);
  });

  it('an in-memory upload with pauses shorter than writeIdleTimeout succeeds', async () => {
    const raw = await stopAndGo();
    const t0 = performance.now();
    const res = await newClient().post(`${raw.origin}/up`, { body: Buffer.alloc(BODY, 6), writeIdleTimeout: 400 });
    expect(text(res)).toBe('got all');
    expect(since(t0)).toBeGreaterThan(480);
  });
});

describe('requestTimeout and deadlines', () => {
  it('requestTimeout: a server that never answers fails with TimeoutError operation request', async () => {
    const raw = await silent();
    const c = newClient();
    const t0 = performance.now();
    const err = await rejection(c.get(`${raw.origin}/`, { requestTimeout: 200 }));
    expectTimeout(err, 'request', 200, since(t0));
    await within(raw.closedAt(1), 3000, 'the connection to be closed');
  });

  it('requestTimeout covers the body too', async () => {
    const raw = await stallsBody();
    const t0 = performance.now();
    const err = await rejection(newClient().get(`${raw.origin}/`, { requestTimeout: 250 }));
    expectTimeout(err, 'request', 250, since(t0));
  });

  it('requestTimeout covers a connect that never completes', async () => {
    const port = await stalledPort();
    const t0 = performance.now();
    const err = await within(rejection(newClient().get(`http://127.0.0.1:${port}/`, { requestTimeout: 200 })), 1500, 'the request deadline');
    expect(err).toBeInstanceOf(TimeoutError);
    expect(since(t0)).toBeLessThan(200 + SLACK);
  });

  it('the Client default requestTimeout applies', async () => {
    const raw = await silent();
    const c = newClient({ requestTimeout: 150 });
    const t0 = performance.now();
    const err = await rejection(c.get(`${raw.origin}/`));
    expectTimeout(err, 'request', 150, since(t0));
  });

  it('a context deadline fails the call with TimeoutError operation request', async () => {
    const raw = await silent();
    const ctx = new RequestContext({ deadline: performance.now() + 200 });
    const t0 = performance.now();
    const err = await rejection(newClient().get(`${raw.origin}/`, { context: ctx }));
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as TimeoutError).operation).toBe('request');
    expect(since(t0)).toBeGreaterThanOrEqual(180);
    expect(since(t0)).toBeLessThan(200 + SLACK);
  });

  it('an already expired context fails at once without connecting', async () => {
    const raw = await silent();
    const ctx = new RequestContext({ deadline: performance.now() - 1 });
    const err = await rejection(newClient().get(`${raw.origin}/`, { context: ctx }));
    expect(err).toBeInstanceOf(TimeoutError);
    expect(raw.connections).toBe(0);
  });

  it('a requestTimeout longer than the exchange does not fire later on a reused connection', async () => {
    const s = await startServer(() => new Response(200, 'quick'));
    const c = newClient();
    expect(text(await c.get(`${s.origin}/1`, { requestTimeout: 100 }))).toBe('quick');
    // Wait past the first call's deadline on the server side by a slow second answer.
    const slow = await startServer(async () => {
      await new Promise((r) => setTimeout(r, 250));
      return new Response(200, 'slow');
    });
    expect(text(await c.get(`${slow.origin}/2`))).toBe('slow');
    expect(text(await c.get(`${s.origin}/3`))).toBe('quick');
    expect(s.connections).toBe(1);
  });
});

describe('expectContinueTimeout', () => {
  /** A raw server that records when the head and the body of each request arrive; `mode` decides what it does on the head. */
  async function continueServer(mode: 'silent' | 'continue' | 'reject') {
    const times: { head: number; body: number; req: RawRequest | null } = { head: 0, body: 0, req: null };
    const raw = await rawServer((sock) =>
      readRequests(
        sock,
        (r) => {
          times.body = performance.now();
          times.req = r;
          sock.write(okResponse(`body ${r.body.length}`));
        },
        (h) => {
          times.head = performance.now();
          if (mode === 'continue' && h.headers.get('expect') === '100-continue') sock.write('HTTP/1.1 100 Continue\r\n\r\n');
          if (mode === 'reject') sock.write('HTTP/1.1 417 Expectation Failed\r\nContent-Length: 0\r\n\r\n');
        },
      ),
    );
    return Object.assign(raw, { times });
  }

  it('without a 100 Continue the body goes after expectContinueTimeout', async () => {
    const raw = await continueServer('silent');
    const res = await newClient().post(`${raw.origin}/e`, { Expect: '100-continue' }, 'payload!', { expectContinueTimeout: 200 });
    expect(text(res)).toBe('body 8');
    const waited = raw.times.body - raw.times.head;
    expect(waited).toBeGreaterThanOrEqual(180);
    expect(waited).toBeLessThan(200 + SLACK);
    expect(raw.times.req!.headers.get('expect')).toBe('100-continue');
  });

  it('a streamed body waits the same way', async () => {
    const raw = await continueServer('silent');
    async function* body(): AsyncGenerator<string> {
      yield 'stream';
      yield 'ed';
    }
    const res = await newClient().post(`${raw.origin}/e`, { headers: { Expect: '100-continue' }, body: body(), expectContinueTimeout: 150 });
    expect(text(res)).toBe('body 8');
    expect(raw.times.body - raw.times.head).toBeGreaterThanOrEqual(130);
  });

  it('a 100 Continue releases the body at once', async () => {
    const raw = await continueServer('continue');
    const res = await newClient().post(`${raw.origin}/e`, { Expect: '100-continue' }, 'payload!', { expectContinueTimeout: 5000 });
    expect(text(res)).toBe('body 8');
    expect(raw.times.body - raw.times.head).toBeLessThan(1000);
  });

  it('a final answer instead of 100 Continue: the body is not sent and the response is returned', async () => {
    const raw = await continueServer('reject');
    const t0 = performance.now();
    const res = await newClient().post(`${raw.origin}/e`, { Expect: '100-continue' }, 'payload!', { expectContinueTimeout: 5000, statusException: false });
    expect(res.status).toBe(417);
    expect(since(t0)).toBeLessThan(1000);
    expect(raw.times.body).toBe(0);
  });

  it('the project server answers 100 Continue itself: the upload goes at once', async () => {
    const s = await startServer((req) => new Response(200, `n=${(req.body as Uint8Array).length}`));
    const t0 = performance.now();
    const res = await newClient().post(`${s.origin}/e`, { Expect: '100-continue' }, Buffer.alloc(100_000, 1), { expectContinueTimeout: 3000 });
    expect(text(res)).toBe('n=100000');
    expect(since(t0)).toBeLessThan(1500);
  });
});
