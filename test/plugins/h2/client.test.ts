/**
 * The HTTP/2 client: ALPN over TLS and h2c prior knowledge against the project's server and a
 * bare node:http2 server, the pool multiplexing one session per origin (a second one when the
 * first is full), GOAWAY replacement with unprocessed requests retried, timeouts, cancellation,
 * `open` streaming, trailers, and the client plugins (redirects, decompression, cookies).
 */
import http2 from 'node:http2';
import { gzipSync } from 'node:zlib';
import { describe, expect, it, vi } from 'vitest';
import { ArgumentError, createKernel, Response, TimeoutError, CanceledError, Client, ProtocolError, Request as KRequest, type Request } from '../../../kernel/index.js';
import { h2, H2ResponseBody, HTTP2Settings } from '../../../plugins/h2/index.js';
import { h2c } from '../../../plugins/h2c/index.js';
import { cookies, CookieJar, decompression, redirects } from '../../../plugins/index.js';
import { cert, h2Client, nodeServer, onCleanup, startServer, startStreamServer, waitFor } from '../../helpers/h2.js';

function text(res: Response): string {
  return Buffer.from(res.body as Uint8Array).toString();
}

describe('negotiation', () => {
  it('speaks h2 over TLS by ALPN, and HTTP/1.1 with preferHttp2: false or httpVersion h1', async () => {
    const { port } = await startServer((req) => new Response(200, `HTTP/${req.protoMajor}`), { secure: true });
    const c = await h2Client();
    const r = await c.get(`https://127.0.0.1:${port}/`);
    expect(r.protoMajor).toBe(2);
    expect(text(r)).toBe('HTTP/2');
    expect(text(await c.get(`https://127.0.0.1:${port}/`, { httpVersion: 'h1' }))).toBe('HTTP/1');
    const no = await h2Client({ preferHttp2: false });
    expect(text(await no.get(`https://127.0.0.1:${port}/`))).toBe('HTTP/1');
  });

  it('http2PriorKnowledge speaks h2c to plain http:// origins; without it the client uses HTTP/1.1', async () => {
    const { port } = await startServer((req) => new Response(200, `HTTP/${req.protoMajor}`));
    const c = await h2Client();
    expect(text(await c.get(`http://127.0.0.1:${port}/`, { http2PriorKnowledge: true }))).toBe('HTTP/2');
    expect(text(await c.get(`http://127.0.0.1:${port}/`, { httpVersion: 'h2' }))).toBe('HTTP/2');
    expect(text(await c.get(`http://127.0.0.1:${port}/`))).toBe('HTTP/1');
  });

  it('maxHeaderBytes bounds the response header block', async () => {
    const { port } = await nodeServer((st) => {
      st.respond({ ':status': 200, 'x-big': 'a'.repeat(5000) });
      st.end('ok');
    });
    const c = await h2Client();
    const err = await c.get(`http://127.0.0.1:${port}/`, { http2PriorKnowledge: true, maxHeaderBytes: 2048 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProtocolError);
    expect((err as ProtocolError).limit).toBe('maxHeaderBytes');
    expect(text(await c.get(`http://127.0.0.1:${port}/`, { http2PriorKnowledge: true }))).toBe('ok');
  });

  it('sends lowercase names, :authority from Host, no pseudo-headers as ordinary headers', async () => {
    let seen: http2.IncomingHttpHeaders = {};
    const { port } = await nodeServer((st, h) => {
      seen = h;
      st.respond({ ':status': 200, 'X-Reply': 'Yes' });
      st.end('ok');
    });
    const c = await h2Client();
    const r = await c.get(`http://127.0.0.1:${port}/p?q=1`, { http2PriorKnowledge: true, headers: { 'X-Custom-Header': 'v', Connection: 'keep-alive', Host: 'example.test' } });
    expect(seen[':authority']).toBe('example.test');
    expect(seen[':path']).toBe('/p?q=1');
    expect(seen['x-custom-header']).toBe('v');
    expect(seen.connection).toBeUndefined();
    expect(r.headers.get('X-Reply')).toBe('Yes');
    expect([...r.headers].some(([k]) => k.startsWith(':'))).toBe(false);
    expect([...r.headers].map(([k]) => k)).toContain('X-Reply'); // canonical form
    const r2 = await c.get(`http://127.0.0.1:${port}/`, { http2PriorKnowledge: true });
    expect(seen[':authority']).toBe(`127.0.0.1:${port}`);
    expect(r2.status).toBe(200);
  });
});

describe('request framing', () => {
  it('framing headers that contradict the body are an ArgumentError before a stream is opened; consistent ones give the content-length', async () => {
    const seen: http2.IncomingHttpHeaders[] = [];
    const { port } = await nodeServer((st, h) => {
      seen.push(h);
      st.respond({ ':status': 200 });
      st.resume();
      st.on('end', () => st.end('ok'));
    });
    const c = await h2Client();
    const url = `http://127.0.0.1:${port}/`;
    const o = { http2PriorKnowledge: true } as const;
    async function* parts(): AsyncGenerator<string> {
      yield 'abc';
    }
    const bad: [string, Promise<unknown>, RegExp][] = [
      ['a Content-Length shorter than the body', c.post(url, { ...o, body: 'hello', headers: { 'Content-Length': '3' } }), /Content-Length header 3 does not match the body length 5/],
      ['a Content-Length that is not a number', c.post(url, { ...o, body: parts(), headers: { 'Content-Length': 'abc' } }), /invalid Content-Length header/],
      ['Content-Length with Transfer-Encoding', c.post(url, { ...o, body: 'hello', headers: { 'Content-Length': '5', 'Transfer-Encoding': 'chunked' } }), /both Content-Length and Transfer-Encoding/],
    ];
    for (const [name, call, message] of bad) {
      const err = await call.catch((e: unknown) => e);
      expect(err, name).toBeInstanceOf(ArgumentError);
      expect((err as Error).message, name).toMatch(message);
    }
    expect(seen).toHaveLength(0);
    await c.post(url, { ...o, body: 'hello', headers: { 'Content-Length': '5' } });
    await c.post(url, { ...o, body: parts(), headers: { 'Content-Length': '3' } });
    await c.post(url, { ...o, body: parts() });
    await c.get(url, o);
    await c.post(url, o);
    expect(seen.map((h) => h['content-length'])).toEqual(['5', '3', undefined, undefined, '0']);
  });
});

describe('pool', () => {
  it('multiplexes 100 concurrent requests over one connection', async () => {
    const peers = new Set<string>();
    const { port, server } = await startStreamServer(
      async (st) => {
        peers.add(String(st.peerAddr()));
        await new Promise((r) => setTimeout(r, 20));
        await st.write('x');
      },
      { secure: true },
    );
    const c = await h2Client();
    const all = await Promise.all(Array.from({ length: 100 }, () => c.get(`https://127.0.0.1:${port}/`)));
    expect(all.every((r) => r.status === 200 && r.protoMajor === 2)).toBe(true);
    expect(peers.size).toBe(1);
    expect(server.connectionCount).toBe(1);
    expect(c.transport.connectionCount()).toBe(1);
  });

  it('opens another session when the first has no free stream (the server allows 4)', async () => {
    const peers = new Set<string>();
    let running = 0;
    let most = 0;
    const { port } = await startStreamServer(
      async (st) => {
        peers.add(String(st.peerAddr()));
        running++;
        most = Math.max(most, running);
        await new Promise((r) => setTimeout(r, 50));
        running--;
        await st.write('x');
      },
      { maxConcurrentStreams: 4 },
    );
    const c = await h2Client();
    // First learn the server's limit, then go wide.
    await c.get(`http://127.0.0.1:${port}/`, { http2PriorKnowledge: true });
    const all = await Promise.all(Array.from({ length: 12 }, () => c.get(`http://127.0.0.1:${port}/`, { http2PriorKnowledge: true })));
    expect(all.every((r) => r.status === 200)).toBe(true);
    expect(peers.size).toBe(3);
    expect(most).toBeLessThanOrEqual(12);
  });

  it('reuses the session across calls and drops it once the server closes it', async () => {
    const peers: string[] = [];
    const { port, server } = await startStreamServer(async (st) => {
      peers.push(String(st.peerAddr()));
      await st.write('x');
    });
    const c = await h2Client();
    await c.get(`http://127.0.0.1:${port}/`, { http2PriorKnowledge: true });
    await c.get(`http://127.0.0.1:${port}/`, { http2PriorKnowledge: true });
    expect(new Set(peers).size).toBe(1);
    await server.close(); // GOAWAY; the session goes
    await waitFor(() => c.transport.connectionCount() === 0, 3000, 'the client to drop the session');
  });

  it('after GOAWAY, requests the server did not process are retried on a new session (POST too)', async () => {
    let first = true;
    const bodies: string[] = [];
    const { port, sessions } = await nodeServer((st) => {
      st.on('error', () => undefined); // streams refused by the GOAWAY
      const chunks: Buffer[] = [];
      st.on('data', (c: Buffer) => chunks.push(c));
      st.on('end', () => {
        if (first && st.id === 1) {
          first = false;
          bodies.push(Buffer.concat(chunks).toString());
          // Answer stream 1, then tell the client nothing after it was processed.
          st.respond({ ':status': 200 });
          st.end('one');
          st.session!.goaway(0, 1);
          return;
        }
        if (sessions.indexOf(st.session as http2.ServerHttp2Session) === 1) bodies.push(Buffer.concat(chunks).toString());
        if (st.destroyed) return;
        st.respond({ ':status': 200 });
        st.end(`session ${sessions.indexOf(st.session as http2.ServerHttp2Session)}`);
      });
    });
    const c = await h2Client();
    const url = `http://127.0.0.1:${port}/`;
    const results = await Promise.all([
      c.post(url, { http2PriorKnowledge: true, body: 'a' }),
      c.post(url, { http2PriorKnowledge: true, body: 'b' }),
      c.post(url, { http2PriorKnowledge: true, body: 'c' }),
    ]);
    const texts = results.map(text);
    expect(texts.filter((t) => t === 'one')).toHaveLength(1);
    expect(texts.filter((t) => t === 'session 1')).toHaveLength(2);
    expect(bodies.sort()).toEqual(['a', 'b', 'c']);
    expect(sessions).toHaveLength(2);
  });
});

describe('exchange features', () => {
  it('uploads a streamed body, receives trailers, and applies http2Settings windows', async () => {
    const { port } = await startStreamServer(async (st) => {
      const body = await st.readAll();
      st.addTrailer('X-Len', String(body.length));
      await st.write(Buffer.alloc(300_000, 1));
      await st.closeWrite();
    });
    const c = await h2Client({ http2Settings: new HTTP2Settings({ initialWindowSize: 1 << 20, connectionWindowSize: 1 << 22 }) });
    async function* gen(): AsyncGenerator<Uint8Array> {
      for (let i = 0; i < 10; i++) yield Buffer.alloc(100_000, 2);
    }
    const r = await c.put(`http://127.0.0.1:${port}/`, { http2PriorKnowledge: true, body: gen() });
    expect((r.body as Uint8Array).length).toBe(300_000);
    // A buffered response carries the trailers itself (its body is bytes now).
    expect(r.trailers.get('X-Len')).toBe('1000000');
    const req = new KRequest('POST', '/', { body: Buffer.alloc(5) });
    req.url = `http://127.0.0.1:${port}/`;
    const d = await c.dispatch(req, { http2PriorKnowledge: true });
    const body = d.body as H2ResponseBody;
    expect((await body.readRest()).length).toBe(300_000);
    expect(body.trailers().get('X-Len')).toBe('5');
  });

  it('responseHeaderTimeout and cancellation reset only their stream', async () => {
    const { port, server } = await startServer(async (req: Request) => {
      if (req.target === '/slow') await new Promise((r) => setTimeout(r, 2000));
      return new Response(200, 'ok');
    });
    const c = await h2Client();
    const url = `http://127.0.0.1:${port}`;
    await c.get(`${url}/`, { http2PriorKnowledge: true });
    const t0 = performance.now();
    await expect(c.get(`${url}/slow`, { http2PriorKnowledge: true, responseHeaderTimeout: 100 })).rejects.toBeInstanceOf(TimeoutError);
    expect(performance.now() - t0).toBeLessThan(1500);
    const ac = new AbortController();
    const p = c.get(`${url}/slow`, { http2PriorKnowledge: true, signal: ac.signal });
    setTimeout(() => ac.abort(), 50);
    await expect(p).rejects.toBeInstanceOf(CanceledError);
    // The session survived both.
    expect(text(await c.get(`${url}/`, { http2PriorKnowledge: true }))).toBe('ok');
    expect(server.connectionCount).toBe(1);
  });

  it('responseHeaderTimeout on a busy session: each waiting stream times out at its own time, a shorter one started later first, the others answered', async () => {
    const { port, sessions } = await nodeServer((st, h) => {
      st.on('error', () => undefined);
      // '/hang' never gets a head; anything else is answered at once.
      if (h[':path'] !== '/hang') {
        st.respond({ ':status': 200 });
        st.end('ok');
      }
    });
    const c = await h2Client({ http2PriorKnowledge: true });
    const url = `http://127.0.0.1:${port}`;
    expect(text(await c.get(`${url}/`))).toBe('ok');
    const ac = new AbortController();
    const long = c.get(`${url}/hang`, { responseHeaderTimeout: 30_000, signal: ac.signal });
    long.catch(() => undefined);
    const t0 = performance.now();
    const short = c.get(`${url}/hang`, { responseHeaderTimeout: 150 });
    const pair = [c.get(`${url}/hang`, { responseHeaderTimeout: 200 }), c.get(`${url}/hang`, { responseHeaderTimeout: 200 })];
    const errs: { what: string; at: number }[] = [];
    const seen = (what: string) => (e: unknown) => {
      expect(e).toBeInstanceOf(TimeoutError);
      errs.push({ what, at: performance.now() - t0 });
      expect((e as Error).message).toContain(`responseHeaderTimeout of ${what === 'short' ? 150 : 200} ms passed (GET ${url}/hang)`);
    };
    expect(text(await c.get(`${url}/answered`))).toBe('ok');
    await Promise.all([short.then(() => expect.fail('answered'), seen('short')), ...pair.map((p) => p.then(() => expect.fail('answered'), seen('pair')))]);
    expect(errs.map((e) => e.what)).toEqual(['short', 'pair', 'pair']);
    expect(errs[0]!.at).toBeGreaterThanOrEqual(140);
    expect(errs[0]!.at).toBeLessThan(1500);
    expect(errs[2]!.at).toBeGreaterThanOrEqual(190);
    expect(errs[2]!.at).toBeLessThan(1500);
    // The long wait is still on, the session still serves.
    expect(text(await c.get(`${url}/after`))).toBe('ok');
    ac.abort();
    await expect(long).rejects.toBeInstanceOf(CanceledError);
    expect(sessions).toHaveLength(1);
  });

  /** Waits on event-loop turns, not timers (the clock is fake), until `cond` holds. */
  async function turnsUntil(cond: () => boolean, what: string): Promise<void> {
    for (let i = 0; i < 100_000 && !cond(); i++) await new Promise<void>((r) => setImmediate(r));
    if (!cond()) throw new Error(`gave up waiting for ${what}`);
  }

  it('the default responseHeaderTimeout (300 s) runs on the timers: a stream that never gets its head fails after 300 s of a fake clock, not before', async () => {
    let hung = 0;
    const { port } = await nodeServer((st, h) => {
      st.on('error', () => undefined);
      if (h[':path'] === '/hang') hung++;
      else {
        st.respond({ ':status': 200 });
        st.end('ok');
      }
    });
    const c = await h2Client({ http2PriorKnowledge: true });
    const url = `http://127.0.0.1:${port}`;
    // The session's timers are made on the fake clock, as with a fresh connection over HTTP/1.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
    try {
      expect(text(await c.get(`${url}/`))).toBe('ok');
      let err: unknown = null;
      let settled = false;
      c.get(`${url}/hang`).then(
        () => (settled = true),
        (e: unknown) => {
          settled = true;
          err = e;
        },
      );
      await turnsUntil(() => hung === 1, 'the stream at the server');
      vi.advanceTimersByTime(299_000);
      for (let i = 0; i < 20; i++) await new Promise<void>((r) => setImmediate(r));
      expect(settled).toBe(false);
      vi.advanceTimersByTime(1_100);
      await turnsUntil(() => settled, 'the call to fail');
      expect(err).toBeInstanceOf(TimeoutError);
      expect((err as TimeoutError).timeoutMs).toBe(300_000);
      expect((err as Error).message).toContain('responseHeaderTimeout');
    } finally {
      vi.useRealTimers();
    }
  });

  it('Expect: 100-continue holds the body for the 100, sends it after expectContinueTimeout without one, and never after a final answer', async () => {
    const log: string[] = [];
    const { port } = await nodeServer((st, h) => {
      st.on('error', () => undefined);
      const path = h[':path'];
      let got = 0;
      st.on('data', (c: Buffer) => {
        if (got === 0) log.push(`${path} data`);
        got += c.length;
      });
      if (path === '/417') {
        log.push('/417 refused');
        st.respond({ ':status': 417 });
        st.end();
        return;
      }
      st.on('end', () => {
        st.respond({ ':status': 200 });
        st.end(String(got));
      });
      if (path === '/continue') {
        setTimeout(() => {
          log.push('/continue 100');
          st.additionalHeaders({ ':status': 100 });
        }, 150);
      }
    });
    const c = await h2Client();
    const url = `http://127.0.0.1:${port}`;
    const body = Buffer.alloc(50_000, 7);
    const headers = { Expect: '100-continue' };
    // The server's 100 comes after 150 ms, well before the 5 s timeout: the body follows it.
    let t0 = performance.now();
    const a = await c.post(`${url}/continue`, headers, body, { http2PriorKnowledge: true, expectContinueTimeout: 5000 });
    expect(text(a)).toBe('50000');
    expect(performance.now() - t0).toBeLessThan(3000);
    expect(log.slice(0, 2)).toEqual(['/continue 100', '/continue data']);
    // No 100 at all: the body goes after expectContinueTimeout.
    t0 = performance.now();
    const b = await c.post(`${url}/silent`, headers, body, { http2PriorKnowledge: true, expectContinueTimeout: 200 });
    expect(text(b)).toBe('50000');
    expect(performance.now() - t0).toBeGreaterThanOrEqual(190);
    // A final answer first: the body is never sent, the stream ends without an error.
    const r = await c.post(`${url}/417`, headers, body, { http2PriorKnowledge: true, expectContinueTimeout: 5000, statusException: false });
    expect(r.status).toBe(417);
    // The session goes on.
    expect(text(await c.post(`${url}/silent`, null, 'x', { http2PriorKnowledge: true }))).toBe('1');
    expect(log).not.toContain('/417 data');
    // The project's own h2 server answers 100 as it starts reading the body.
    const own = await startServer((req) => new Response(200, String((req.body as Uint8Array).length)));
    t0 = performance.now();
    expect(text(await c.post(`http://127.0.0.1:${own.port}/`, headers, body, { http2PriorKnowledge: true, expectContinueTimeout: 5000 }))).toBe('50000');
    expect(performance.now() - t0).toBeLessThan(3000);
  });

  it('canceling a buffered call mid-body rejects it with CanceledError and resets only its stream', async () => {
    let reset = 0;
    const { port } = await nodeServer((st, h) => {
      st.on('error', () => undefined);
      st.on('close', () => {
        if (st.rstCode === http2.constants.NGHTTP2_CANCEL) reset++;
      });
      st.respond({ ':status': 200 });
      if (h[':path'] === '/slow') st.write('partial');
      else st.end('whole');
    });
    const plain = new Client({ http2PriorKnowledge: true, kernel: await createKernel().register(h2).register(h2c).ready() });
    onCleanup(() => plain.close());
    const url = `http://127.0.0.1:${port}`;
    const ac = new AbortController();
    const p = plain.get(`${url}/slow`, { signal: ac.signal });
    await waitFor(() => plain.transport.connectionCount() === 1);
    setTimeout(() => ac.abort(), 30);
    await expect(p).rejects.toBeInstanceOf(CanceledError);
    await waitFor(() => reset === 1);
    expect(text(await plain.get(`${url}/`))).toBe('whole');
    expect(plain.transport.connectionCount()).toBe(1);
  });

  it('a buffered call (answered once the body is complete) fails when the server resets mid-body; dispatch still streams the head first', async () => {
    const { port } = await nodeServer((st, h) => {
      st.on('error', () => undefined);
      st.respond({ ':status': 200, 'content-length': '100' });
      st.write('partial');
      if (h[':path'] === '/reset') setTimeout(() => st.close(http2.constants.NGHTTP2_INTERNAL_ERROR), 20);
      else setTimeout(() => st.end('x'.repeat(93)), 50);
    });
    const c = await h2Client();
    const url = `http://127.0.0.1:${port}`;
    // A plain client (no per-attempt hooks): the fast path, body buffered inside the exchange.
    const plain = new Client({ http2PriorKnowledge: true, kernel: await createKernel().register(h2).register(h2c).ready() });
    onCleanup(() => plain.close());
    await expect(plain.get(`${url}/reset`)).rejects.toThrow(/reset the HTTP\/2 stream before the response body ended \(\w+, code \d+\)/);
    const ok = await plain.get(`${url}/`);
    expect(text(ok)).toBe('partial' + 'x'.repeat(93));
    // dispatch() resolves at the head, the body still arriving.
    const res = await c.dispatch(Object.assign(new KRequest('GET', '/'), { url: `${url}/` }), { http2PriorKnowledge: true });
    expect(res.body).toBeInstanceOf(H2ResponseBody);
    expect((res.body as H2ResponseBody).complete).toBe(false);
    (res.body as H2ResponseBody).close();
  });

  it('open() streams the request and the response over HTTP/2', async () => {
    const { port } = await startStreamServer(
      async (st) => {
        for await (const chunk of st) await st.write(Buffer.from(chunk).toString().toUpperCase());
        await st.closeWrite();
      },
      { secure: true },
    );
    const c = await h2Client();
    const res = await c.open(
      'POST',
      `https://127.0.0.1:${port}/echo`,
      async (stream) => {
        await stream.write('hello ');
        await stream.write('world');
        await stream.closeWrite();
        const head = await stream.startRead();
        expect(head.protoMajor).toBe(2);
        const parts: string[] = [];
        for await (const c of stream) parts.push(Buffer.from(c).toString());
        expect(parts.join('')).toBe('HELLO WORLD');
      },
      { headers: { 'Transfer-Encoding': 'chunked' } },
    );
    expect(res.status).toBe(200);
  });

  it('redirects, decompression and cookies work the same over HTTP/2', async () => {
    const kernel = await createKernel().register(h2).register(h2c).register(cookies).register(redirects).register(decompression).ready();
    const { port } = await startServer(
      (req) => {
        if (req.target === '/start') return new Response(302, '', { headers: { Location: '/next', 'Set-Cookie': 'sid=42; Path=/' } });
        return new Response(200, gzipSync(Buffer.from(`cookie=${req.headers.get('Cookie')} HTTP/${req.protoMajor}`)), { headers: { 'Content-Encoding': 'gzip' } });
      },
      { secure: true },
    );
    const c = new Client({ kernel, tlsConfig: { ca: cert.cert }, cookiejar: new CookieJar() });
    onCleanup(() => c.close());
    const r = await c.get(`https://127.0.0.1:${port}/start`);
    expect(r.url).toBe(`https://127.0.0.1:${port}/next`);
    expect(text(r)).toBe('cookie=sid=42 HTTP/2');
  });
});

describe('trace and retries over HTTP/2', () => {
  it('emits the same trace events and retries a 503 with the retries plugin', async () => {
    const { retries } = await import('../../../plugins/index.js');
    const kernel = await createKernel().register(h2).register(h2c).register(retries).ready();
    let calls = 0;
    const { port } = await startServer(() => (++calls === 1 ? new Response(503, 'busy') : new Response(200, 'ok')));
    const c = new Client({ kernel });
    onCleanup(() => c.close());
    const events: string[] = [];
    const r = await c.get(`http://127.0.0.1:${port}/`, { http2PriorKnowledge: true, trace: (e) => events.push(e.constructor.name) });
    expect(text(r)).toBe('ok');
    expect(r.protoMajor).toBe(2);
    expect(events).toEqual(['RequestEvent', 'ResponseHeadEvent', 'RetryEvent', 'RequestEvent', 'ResponseHeadEvent', 'DoneEvent']);
  });
});
