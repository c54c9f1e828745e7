/**
 * Trailers that may not trail (RFC 9110 §6.5.1: framing, routing, authentication, content
 * format, controls) over HTTP/2, with bare node:http2 peers on the other side: the server
 * refuses to send them (a request handler's Response before its head, a trailer added while
 * the body streams resets the stream) and drops them from request trailers; the client refuses
 * to send them before the request goes out and drops them from response trailers.
 */
import http2 from 'node:http2';
import { describe, expect, it } from 'vitest';
import { ArgumentError, CallbackBody, Request as KRequest, Response, type Request } from '../../../kernel/index.js';
import { h2Client, nodeRequest, nodeServer, nodeSession, startServer, waitFor } from '../../helpers/h2.js';

/** A body that yields `parts` then ends (unknown length); `onRead(i)` runs before part i. */
function partsBody(parts: string[], onRead: (i: number) => void = () => undefined): CallbackBody & { closedCount: number } {
  let i = 0;
  const body = new CallbackBody((dst) => {
    onRead(i);
    const p = parts[i++];
    if (p === undefined) return 0;
    dst.set(Buffer.from(p));
    return p.length;
  }) as CallbackBody & { closedCount: number };
  body.closedCount = 0;
  const close = body.close.bind(body);
  body.close = () => {
    body.closedCount++;
    close();
  };
  return body;
}

describe('h2 server: sending trailers', () => {
  it('a request handler Response with a forbidden trailer is a 500 with the error reported, before its head; its body is closed', async () => {
    const bodies: ReturnType<typeof partsBody>[] = [];
    const { port, errors } = await startServer(() => {
      const b = partsBody(['secret', '-body']);
      bodies.push(b);
      return new Response(200, b, {
        headers: { 'X-Handler': '1' },
        trailers: [
          ['X-Ok', '1'],
          ['Authorization', 'Bearer t'],
        ],
      });
    });
    const s = nodeSession(`http://127.0.0.1:${port}`);
    const r = await nodeRequest(s, { ':path': '/' });
    expect(r.status).toBe(500);
    expect(r.headers['x-handler']).toBeUndefined();
    expect(r.body.toString()).not.toContain('secret');
    expect(r.trailers).toBeNull();
    expect(errors).toHaveLength(1);
    expect(errors[0]!.error).toBeInstanceOf(ArgumentError);
    expect((errors[0]!.error as Error).message).toContain('"Authorization" cannot be sent as a trailer');
    expect(bodies[0]!.closedCount).toBeGreaterThan(0);
    // A bytes body too: the handler is wrong whatever the body.
    const s2 = await startServer(() => new Response(200, 'x', { trailers: [['Set-Cookie', 'a=1']] }));
    const r2 = await nodeRequest(nodeSession(`http://127.0.0.1:${s2.port}`), { ':path': '/' });
    expect(r2.status).toBe(500);
    expect(r2.trailers).toBeNull();
    expect(s2.errors).toHaveLength(1);
  });

  it('allowed trailers still go out', async () => {
    const { port } = await startServer(() => new Response(200, partsBody(['a', 'b']), { trailers: [['Server-Timing', 'db;dur=1']] }));
    const r = await nodeRequest(nodeSession(`http://127.0.0.1:${port}`), { ':path': '/' });
    expect(r.status).toBe(200);
    expect(r.body.toString()).toBe('ab');
    expect(r.trailers?.['server-timing']).toBe('db;dur=1');
  });

  it('a forbidden trailer added while the body streams resets the stream instead of going out', async () => {
    const { port } = await startServer(() => {
      const res: Response = new Response(
        200,
        partsBody(['a', 'b'], (i) => {
          if (i === 2) res.trailers.push('Content-Type', 'text/html');
        }),
        { trailers: [['X-Ok', '1']] },
      );
      return res;
    });
    const r = await nodeRequest(nodeSession(`http://127.0.0.1:${port}`), { ':path': '/' });
    expect(r.trailers).toBeNull();
    expect(r.rstCode).toBe(http2.constants.NGHTTP2_INTERNAL_ERROR);
  });
});

describe('h2 server: reading trailers', () => {
  it('drops forbidden fields from the request trailers a handler sees', async () => {
    const seen: [string, string][][] = [];
    const { port } = await startServer((req: Request) => {
      seen.push(req.trailers.toArray());
      return new Response(200, `${req.host}|${req.headers.get('Content-Type') ?? ''}`);
    });
    const s = nodeSession(`http://127.0.0.1:${port}`);
    const r = await new Promise<string>((resolve, reject) => {
      const st = s.request({ ':method': 'POST', ':path': '/' }, { waitForTrailers: true });
      st.on('wantTrailers', () => st.sendTrailers({ 'x-sum': '3', 'content-type': 'text/html', authorization: 'Basic eA==', 'set-cookie': 's=1', 'cache-control': 'no-store' }));
      const chunks: Buffer[] = [];
      st.on('data', (c: Buffer) => chunks.push(c));
      st.on('end', () => resolve(Buffer.concat(chunks).toString()));
      st.on('error', reject);
      st.end('abc');
    });
    expect(r).toBe(`127.0.0.1:${port}|`);
    expect(seen).toEqual([[['X-Sum', '3']]]);
  });
});

describe('h2 client: trailers', () => {
  it('drops forbidden fields from the response trailers it reads', async () => {
    const { port } = await nodeServer((stream) => {
      stream.respond({ ':status': 200, 'content-type': 'text/plain' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'x-sum': '5', 'content-type': 'text/html', 'set-cookie': 's=1', 'content-encoding': 'gzip', 'www-authenticate': 'Basic' }));
      stream.end('hello');
    });
    const c = await h2Client();
    const res = await c.get(`http://127.0.0.1:${port}/`, { http2PriorKnowledge: true });
    expect(Buffer.from(res.body as Uint8Array).toString()).toBe('hello');
    expect(res.trailers.toArray()).toEqual([['X-Sum', '5']]);
    expect(res.headers.get('Content-Type')).toBe('text/plain');
  });

  it('refuses request trailers that may not trail before anything is sent; its streamed body is closed', async () => {
    let streams = 0;
    const { port } = await nodeServer((stream) => {
      streams++;
      stream.respond({ ':status': 200 });
      stream.end('ok');
    });
    const c = await h2Client();
    const body = partsBody(['a', 'b']);
    const req = new KRequest('POST', '/', {
      body,
      trailers: [
        ['X-Ok', '1'],
        ['Host', 'evil.example'],
      ],
    });
    req.url = `http://127.0.0.1:${port}/`;
    const err = await c.dispatch(req, { http2PriorKnowledge: true }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ArgumentError);
    expect((err as Error).message).toContain('"Host" cannot be sent as a trailer');
    expect(body.closedCount).toBeGreaterThan(0);
    // The connection is still good for the next request, and the refused one never reached the server.
    const ok = await c.get(`http://127.0.0.1:${port}/`, { http2PriorKnowledge: true });
    expect(Buffer.from(ok.body as Uint8Array).toString()).toBe('ok');
    expect(streams).toBe(1);
  });

  it('a forbidden trailer a streamed body adds while it is sent fails the call instead of going out', async () => {
    const got: (http2.IncomingHttpHeaders | null)[] = [];
    const { port } = await nodeServer((stream) => {
      let t: http2.IncomingHttpHeaders | null = null;
      stream.on('trailers', (h) => (t = h));
      stream.on('error', () => undefined);
      stream.on('close', () => got.push(t));
      stream.resume();
    });
    const c = await h2Client();
    const req: KRequest = new KRequest('POST', '/', {
      body: partsBody(['a', 'b'], (i) => {
        if (i === 2) req.trailers.push('Content-Length', '99');
      }),
      trailers: [['X-Ok', '1']],
    });
    req.url = `http://127.0.0.1:${port}/`;
    await expect(c.dispatch(req, { http2PriorKnowledge: true })).rejects.toThrow(/"Content-Length" cannot be sent as a trailer/);
    await waitFor(() => got.length > 0, 5000, 'the server stream to close');
    expect(got).toEqual([null]);
  });
});
