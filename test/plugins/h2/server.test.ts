/**
 * The HTTP/2 server: h2 over TLS by ALPN, h2c by prior knowledge on the HTTP/1.1 port, and
 * `Upgrade: h2c`, with request and stream handlers, the server hooks, limits, errors and the
 * close lifecycle. Peers: curl (HTTP/2 over TLS and h2c) and a bare node:http2 client session.
 */
import { describe, expect, it } from 'vitest';
import { createKernel, Response, Stage, definePlugin, ArgumentError, serve, type Stream } from '../../../kernel/index.js';
import { h2 } from '../../../plugins/h2/index.js';
import { h2c } from '../../../plugins/h2c/index.js';
import { nodeRequest, nodeSession, run, startServer, startStreamServer, waitFor, onCleanup } from '../../helpers/h2.js';

const CURL = '/usr/bin/curl';

describe('h2c on the HTTP/1.1 port', () => {
  it('serves curl --http2-prior-knowledge and HTTP/1.1 on the same port', async () => {
    const { port } = await startServer((req) => new Response(200, `${req.method} ${req.target} HTTP/${req.protoMajor} host=${req.headers.get('Host')}`));
    const a = await run(CURL, ['-sS', '--http2-prior-knowledge', '-w', '\n%{http_version}', `http://127.0.0.1:${port}/a?b=1`]);
    expect(a.stdout).toBe(`GET /a?b=1 HTTP/2 host=127.0.0.1:${port}\n2`);
    const b = await run(CURL, ['-sS', '--http1.1', '-w', '\n%{http_version}', `http://127.0.0.1:${port}/b`]);
    expect(b.stdout).toBe(`GET /b HTTP/1 host=127.0.0.1:${port}\n1.1`);
  });

  it('buffers request bodies for request handlers and answers 413 past maxBodyBytes', async () => {
    const { port } = await startServer((req) => new Response(200, `got ${(req.body as Uint8Array).length}`), { maxBodyBytes: 1000 });
    const ok = await run(CURL, ['-sS', '--http2-prior-knowledge', '--data-binary', 'x'.repeat(1000), `http://127.0.0.1:${port}/`]);
    expect(ok.stdout).toBe('got 1000');
    const big = await run(CURL, ['-sS', '--http2-prior-knowledge', '-o', '/dev/null', '-w', '%{http_code}', '--data-binary', 'x'.repeat(5000), `http://127.0.0.1:${port}/`]);
    expect(big.stdout).toBe('413');
  });

  it('allowH2c: false answers the preface with 400', async () => {
    const { port } = await startServer(() => new Response(200, 'no'), { allowH2c: false });
    const r = await run(CURL, ['-sS', '--http2-prior-knowledge', `http://127.0.0.1:${port}/`]);
    expect(r.code).not.toBe(0);
    const s = nodeSession(`http://127.0.0.1:${port}`);
    const closed = new Promise<void>((resolve) => s.once('close', () => resolve()));
    await closed;
  });

  it('upgrades HTTP/1.1 with Upgrade: h2c (curl --http2 on http://) and answers the request as stream 1', async () => {
    const { port } = await startServer((req) => new Response(200, `upgraded ${req.target} HTTP/${req.protoMajor}`));
    const r = await run(CURL, ['-sS', '--http2', '-i', `http://127.0.0.1:${port}/up`]);
    expect(r.stdout).toContain('HTTP/1.1 101 Switching Protocols');
    expect(r.stdout).toContain('HTTP/2 200');
    expect(r.stdout).toContain('upgraded /up HTTP/2');
    // A request with a body stays HTTP/1.1 (RFC 7540 §3.2 lets the server ignore the upgrade).
    const p = await run(CURL, ['-sS', '--http2', '-d', 'abc', '-w', '\n%{http_version}', `http://127.0.0.1:${port}/post`]);
    expect(p.stdout).toBe('upgraded /post HTTP/1\n1.1');
  });
});

describe('request headers over HTTP/2', () => {
  it('reach the handler in canonical spelling, in order, without pseudo-headers, however late it reads them', async () => {
    const seen: [string, string][][] = [];
    const { port } = await startServer(async (req) => {
      // Read after the stream's own tick is over, and from a request with a body.
      await new Promise<void>((r) => setImmediate(r));
      seen.push([...req.headers]);
      return new Response(200, `${req.headers.get('x-one')}|${req.headers.getAll('X-Multi').join(',')}|${req.headers.get('Host')}`);
    });
    const s = nodeSession(`http://127.0.0.1:${port}`);
    const a = await nodeRequest(s, { ':method': 'GET', ':path': '/a', 'x-one': '1', 'x-multi': ['a', 'b'], 'user-agent': 'ua' });
    expect(a.body.toString()).toBe(`1|a,b|127.0.0.1:${port}`);
    const b = await nodeRequest(s, { ':method': 'POST', ':path': '/b', host: 'given', 'content-type': 'text/plain' }, 'body');
    expect(b.body.toString()).toBe('undefined||given');
    s.close();
    expect(seen[0]).toEqual([
      ['X-One', '1'],
      ['X-Multi', 'a'],
      ['X-Multi', 'b'],
      ['User-Agent', 'ua'],
      ['Host', `127.0.0.1:${port}`],
    ]);
    expect(seen[1]).toEqual([
      ['Host', 'given'],
      ['Content-Type', 'text/plain'],
    ]);
  });
});

describe('the date field', () => {
  it('is sent as an IMF-fixdate, and a Date the handler set is kept', async () => {
    const { port } = await startServer((req) => (req.target === '/own' ? new Response(200, 'x', { headers: { Date: 'Sun, 06 Nov 1994 08:49:37 GMT' } }) : new Response(200, 'x')));
    const s = nodeSession(`http://127.0.0.1:${port}`);
    const a = await nodeRequest(s, { ':path': '/' });
    expect(String(a.headers.date)).toMatch(/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/);
    expect(Math.abs(Date.parse(String(a.headers.date)) - Date.now())).toBeLessThan(5000);
    const b = await nodeRequest(s, { ':path': '/own' });
    expect(b.headers.date).toBe('Sun, 06 Nov 1994 08:49:37 GMT');
  });
});

describe('h2 over TLS by ALPN', () => {
  it('negotiates h2 with curl --http2 and falls back to HTTP/1.1 for clients without it', async () => {
    const { port } = await startServer((req) => new Response(200, `HTTP/${req.protoMajor}`), { secure: true });
    const a = await run(CURL, ['-sS', '-k', '--http2', '-w', ' %{http_version}', `https://127.0.0.1:${port}/`]);
    expect(a.stdout).toBe('HTTP/2 2');
    const b = await run(CURL, ['-sS', '-k', '--http1.1', '-w', ' %{http_version}', `https://127.0.0.1:${port}/`]);
    expect(b.stdout).toBe('HTTP/1 1.1');
  });

  it('respects an ALPNProtocols list the caller gave: no h2 unless listed', async () => {
    const { port } = await startServer((req) => new Response(200, `HTTP/${req.protoMajor}`), { secure: true, tls: { ALPNProtocols: ['http/1.1'] } });
    const a = await run(CURL, ['-sS', '-k', '--http2', `https://127.0.0.1:${port}/`]);
    expect(a.stdout).toBe('HTTP/1');
    const listed = await startServer((req) => new Response(200, `HTTP/${req.protoMajor}`), { secure: true, tls: { ALPNProtocols: ['h2', 'http/1.1'] } });
    const b = await run(CURL, ['-sS', '-k', '--http2', `https://127.0.0.1:${listed.port}/`]);
    expect(b.stdout).toBe('HTTP/2');
  });

  it('ignores allowH2c on a TLS listener', async () => {
    const { port } = await startServer((req) => new Response(200, `HTTP/${req.protoMajor}`), { secure: true, allowH2c: false });
    const a = await run(CURL, ['-sS', '-k', '--http2', `https://127.0.0.1:${port}/`]);
    expect(a.stdout).toBe('HTTP/2');
  });

  it('without the h2 plugin a TLS server does not offer h2 even when ALPNProtocols lists it', async () => {
    const bare = await createKernel().ready();
    const s = await serve((req) => new Response(200, `HTTP/${req.protoMajor}`), {
      kernel: bare,
      port: 0,
      tls: { key: (await import('../../helpers/h2.js')).cert.key, cert: (await import('../../helpers/h2.js')).cert.cert, ALPNProtocols: ['h2', 'http/1.1'] },
    });
    onCleanup(() => s.forceClose());
    const a = await run(CURL, ['-sS', '-k', '--http2', `https://127.0.0.1:${s.port}/`]);
    expect(a.stdout).toBe('HTTP/1');
  });
});

describe('stream handlers over HTTP/2', () => {
  it('sends the head at the first write, then the body and trailers; peerAddr works', async () => {
    const { port } = await startStreamServer(async (st) => {
      const req = await st.startRead();
      const body = Buffer.from(await st.readAll()).toString();
      st.setStatus(201);
      st.setHeader('X-Protocol', st.protocol);
      st.setHeader('X-Peer', String(st.peerAddr()));
      st.addTrailer('X-Checksum', 'abc');
      await st.write(`${req.method} ${body}`);
      expect(() => st.setHeader('X-Late', '1')).toThrow(ArgumentError);
      await st.write(' more');
      await st.closeWrite();
    });
    const s = nodeSession(`http://127.0.0.1:${port}`);
    const r = await nodeRequest(s, { ':method': 'POST', ':path': '/' }, 'data');
    expect(r.status).toBe(201);
    expect(r.headers['x-protocol']).toBe('h2');
    expect(String(r.headers['x-peer'])).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(r.body.toString()).toBe('POST data more');
    expect(r.trailers?.['x-checksum']).toBe('abc');
  });

  it('a handler that throws before the head gets 500; after the head only its stream is reset', async () => {
    const { port, errors } = await startStreamServer(async (st) => {
      if (st.request.target === '/early') throw new Error('early');
      if (st.request.target === '/late') {
        await st.write('partial');
        throw new Error('late');
      }
      await st.write('fine');
    });
    const s = nodeSession(`http://127.0.0.1:${port}`);
    const [early, late, fine] = await Promise.all([nodeRequest(s, { ':path': '/early' }), nodeRequest(s, { ':path': '/late' }), nodeRequest(s, { ':path': '/fine' })]);
    expect(early.status).toBe(500);
    expect(late.rstCode).toBe(2); // INTERNAL_ERROR: this stream only
    expect(fine.status).toBe(200);
    expect(fine.body.toString()).toBe('fine');
    expect(s.closed || s.destroyed).toBe(false);
    expect(errors.map((e) => (e.error as Error).message).sort()).toEqual(['early', 'late']);
  });

  it('Stream.upgrade() over HTTP/2 throws ArgumentError', async () => {
    let thrown: unknown = null;
    const { port } = await startStreamServer(async (st: Stream) => {
      try {
        st.upgrade();
      } catch (err) {
        thrown = err;
      }
      await st.write('ok');
    });
    const s = nodeSession(`http://127.0.0.1:${port}`);
    const r = await nodeRequest(s, { ':path': '/' });
    expect(r.body.toString()).toBe('ok');
    expect(thrown).toBeInstanceOf(ArgumentError);
  });

  it('closeWrite(body) answers with its content-length and the body, over h2c, h2 and the h2c upgrade; HEAD gets the length only', async () => {
    for (const secure of [false, true]) {
      const { port, errors } = await startStreamServer(
        async (st) => {
          st.setHeader('Content-Type', 'text/plain');
          await st.closeWrite('héllo');
        },
        { secure },
      );
      const s = nodeSession(`${secure ? 'https' : 'http'}://127.0.0.1:${port}`);
      const r = await nodeRequest(s, { ':path': '/' });
      expect([r.status, r.headers['content-length'], r.headers['content-type'], r.body.toString(), r.trailers, r.rstCode]).toEqual([200, '6', 'text/plain', 'héllo', null, 0]);
      const head = await nodeRequest(s, { ':method': 'HEAD', ':path': '/' });
      expect([head.status, head.headers['content-length'], head.body.length]).toEqual([200, '6', 0]);
      if (!secure) {
        const up = await run(CURL, ['-sS', '--http2', '-i', `http://127.0.0.1:${port}/up`]);
        expect(up.stdout).toContain('HTTP/2 200');
        expect(up.stdout).toMatch(/content-length: 6\r\n/);
        expect(up.stdout.endsWith('héllo')).toBe(true);
      }
      expect(errors).toEqual([]);
    }
  });

  it('HEAD and 204 end the stream with the head', async () => {
    const { port } = await startStreamServer(async (st) => {
      st.setHeader('Content-Length', '10');
      if (st.request.target === '/204') st.setStatus(204);
      await st.closeWrite();
    });
    const s = nodeSession(`http://127.0.0.1:${port}`);
    const head = await nodeRequest(s, { ':method': 'HEAD', ':path': '/' });
    expect(head.status).toBe(200);
    expect(head.headers['content-length']).toBe('10');
    const nc = await nodeRequest(s, { ':path': '/204' });
    expect(nc.status).toBe(204);
    expect(nc.headers['content-length']).toBeUndefined();
  });
});

describe('server hooks over HTTP/2', () => {
  const seen: string[] = [];
  const probe = definePlugin({
    name: 'probe',
    register(kernel) {
      kernel.hooks.server.onRequest.tap({ name: 'probe', stage: Stage.FIRST }, (req, ex) => {
        seen.push(`req ${ex.protocol} ${req.target}`);
        ex.setHeader('X-Seen', 'yes');
        if (req.target === '/hooked') return new Response(203, 'from hook');
        return undefined;
      });
      kernel.hooks.server.onResponseHead.tap('probe', (res) => {
        res.headers.set('X-Head', String(res.status));
      });
    },
  });

  it('runs onRequest (which may answer) and onResponseHead, in request and stream handler modes', async () => {
    const kernel = await createKernel().register(h2).register(h2c).register(probe).ready();
    const shared = new Response(200, 'shared');
    const { port } = await startServer(() => shared, { kernel });
    const s = nodeSession(`http://127.0.0.1:${port}`);
    const a = await nodeRequest(s, { ':path': '/plain' });
    expect(a.body.toString()).toBe('shared');
    expect(a.headers['x-seen']).toBe('yes');
    expect(a.headers['x-head']).toBe('200');
    expect(shared.headers.has('X-Head')).toBe(false); // taps saw a copy
    const b = await nodeRequest(s, { ':path': '/hooked' });
    expect(b.status).toBe(203);
    expect(b.body.toString()).toBe('from hook');
    const st = await startStreamServer(async (x) => void (await x.write('streamed')), { kernel });
    const s2 = nodeSession(`http://127.0.0.1:${st.port}`);
    const c = await nodeRequest(s2, { ':path': '/hooked' });
    expect(c.status).toBe(203);
    expect(c.headers['x-head']).toBe('203');
    expect(seen).toEqual(['req h2 /plain', 'req h2 /hooked', 'req h2 /hooked']);
  });
});

describe('close lifecycle', () => {
  it('close() sends GOAWAY and lets the streams in flight finish', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started = 0;
    const { server, port } = await startServer(async () => {
      started++;
      await gate;
      return new Response(200, 'finished');
    });
    const s = nodeSession(`http://127.0.0.1:${port}`);
    let goaway = false;
    s.on('goaway', () => (goaway = true));
    const inflight = nodeRequest(s, { ':path': '/' });
    await waitFor(() => started === 1);
    const closed = server.close();
    await waitFor(() => goaway, 5000, 'GOAWAY');
    release();
    const r = await inflight;
    expect(r.status).toBe(200);
    expect(r.body.toString()).toBe('finished');
    await closed;
    expect(server.connectionCount).toBe(0);
  });

  it('forceClose() drops the streams in flight', async () => {
    let started = 0;
    const { server, port } = await startServer(async () => {
      started++;
      await new Promise(() => undefined);
      return new Response(200);
    });
    const s = nodeSession(`http://127.0.0.1:${port}`);
    const inflight = nodeRequest(s, { ':path': '/' });
    await waitFor(() => started === 1);
    await server.forceClose();
    const r = await inflight;
    expect(r.status).toBe(0);
    expect(server.connectionCount).toBe(0);
  });
});
