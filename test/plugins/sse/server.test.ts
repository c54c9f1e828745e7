/**
 * sseStream and SSEStream on a real loopback server, read by node:http and curl: headers, each
 * event sent as written, the wire form, maxLen, the three call forms, clients that go away,
 * producers that fail, HEAD, and backpressure.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import http2 from 'node:http2';
import { describe, expect, it } from 'vitest';
import { ArgumentError, CanceledError, Response, serve, streamHandler, type Request } from '../../../kernel/index.js';
import { SSEEvent, SSEEventTooLargeError, SSEStream, sseStream, type SSEResponse } from '../../../plugins/sse/index.js';
import { destroyAfter, forceCloseAfter } from '../../helpers/cleanup.js';
import { h2Kernel } from '../../helpers/h2.js';
import { gate, onCleanup, readSSE, startServer, startStreamServer, waitFor, within } from './helpers.js';

describe('sseStream on the server', () => {
  it('answers with the event-stream headers and sends each event as it is written', async () => {
    const g = gate();
    let afterGate = false;
    const { port } = await startServer((req) =>
      sseStream(
        async (s) => {
          await s.write(new SSEEvent('first', { id: '1' }));
          // The client must have the first event before the producer goes on.
          await g.promise;
          afterGate = true;
          await s.write(new SSEEvent('second', { id: '2', event: 'update' }));
        },
        200,
        { request: req },
      ),
    );
    const r = await readSSE(port);
    expect(r.res.statusCode).toBe(200);
    expect(r.res.headers['content-type']).toBe('text/event-stream');
    expect(r.res.headers['cache-control']).toBe('no-cache');
    expect(r.res.headers['transfer-encoding']).toBe('chunked');
    expect(r.res.headers['content-length']).toBeUndefined();
    const first = await within(r.next(), 3000, 'first event before the producer continues');
    expect(afterGate).toBe(false);
    expect(first).toMatchObject({ data: 'first', id: '1', event: null });
    g.open();
    expect(await within(r.next(), 3000, 'second event')).toMatchObject({ data: 'second', id: '2', event: 'update' });
    await within(r.ended, 3000, 'the response ends when the producer returns');
    expect(r.raw()).toBe('id: 1\ndata: first\n\nevent: update\nid: 2\ndata: second\n\n');
  });

  it('works the same on a stream server (listen with streamHandler), one chunk per write', async () => {
    const g = gate();
    let failure: unknown = null;
    const stopped = gate();
    const { port } = await startStreamServer(
      streamHandler((req) =>
        sseStream(
          async (s) => {
            await s.write(new SSEEvent('one'));
            await g.promise;
            try {
              for (;;) {
                await s.write(new SSEEvent('more'));
                await new Promise((r) => setTimeout(r, 5));
              }
            } catch (err) {
              failure = err;
              stopped.open();
            }
          },
          200,
          { request: req },
        ),
      ),
    );
    const r = await readSSE(port);
    expect(r.res.headers['content-type']).toBe('text/event-stream');
    expect((await within(r.next(), 3000, 'first event while the producer waits')).data).toBe('one');
    g.open();
    expect((await within(r.next(), 3000, 'next')).data).toBe('more');
    r.destroy();
    await within(stopped.promise, 3000, 'producer stopped by the disconnect');
    expect(failure).toBeInstanceOf(CanceledError);
  });

  it('curl -N sees each event as written, and the exact wire form', async () => {
    const g = gate();
    const { port } = await startServer((req) =>
      sseStream(
        async (s) => {
          await s.write(new SSEEvent('line one\nline two', { event: 'multi', id: 'a', retry: 2500 }));
          await g.promise;
          await s.comment('heartbeat');
          await s.write(new SSEEvent('{"n":2}'));
        },
        { request: req },
      ),
    );
    const curl = spawn('/usr/bin/curl', ['-sS', '-N', '--http1.1', `http://127.0.0.1:${port}/events`], { stdio: ['ignore', 'pipe', 'pipe'] });
    onCleanup(() => {
      if (curl.exitCode === null) curl.kill();
    });
    let out = '';
    let wake: (() => void) | null = null;
    curl.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      wake?.();
    });
    const exited = new Promise<number | null>((r) => curl.on('exit', r));
    await within(
      (async () => {
        while (!out.endsWith('\n\n')) await new Promise<void>((r) => (wake = r));
      })(),
      5000,
      'curl printed the first event while the producer waits',
    );
    expect(out).toBe('event: multi\nid: a\nretry: 2500\ndata: line one\ndata: line two\n\n');
    g.open();
    expect(await within(exited, 5000, 'curl exits when the stream ends')).toBe(0);
    expect(out).toBe('event: multi\nid: a\nretry: 2500\ndata: line one\ndata: line two\n\n: heartbeat\ndata: {"n":2}\n\n');
  });

  it('an event over maxLen is refused whole; the stream goes on', async () => {
    const seen: unknown[] = [];
    const { port } = await startServer((req) =>
      sseStream(
        async (s) => {
          await s.write(new SSEEvent('small'));
          // 'data: ' + 40 bytes + '\n' = 47 > 32
          await s.write(new SSEEvent('x'.repeat(40))).catch((e: unknown) => seen.push(e));
          await s.write(new SSEEvent('after'));
        },
        200,
        { maxLen: 32, request: req },
      ),
    );
    const r = await readSSE(port);
    await within(r.ended, 3000, 'end');
    expect(r.raw()).toBe('data: small\n\ndata: after\n\n');
    expect(seen).toHaveLength(1);
    expect(seen[0]).toBeInstanceOf(SSEEventTooLargeError);
    expect(seen[0]).toMatchObject({ maxLen: 32, size: 47, side: 'write' });
  });

  it('sseStream(status): the handler keeps the stream and ends it with close()', async () => {
    let stream: SSEStream | null = null;
    const { port } = await startServer(() => {
      const res = sseStream(201, { headers: { 'X-Feed': 'yes' } });
      stream = res.body;
      return res;
    });
    const r = await readSSE(port);
    expect(r.res.statusCode).toBe(201);
    expect(r.res.headers['x-feed']).toBe('yes');
    await waitFor(() => stream !== null);
    const s = stream as unknown as SSEStream;
    await s.write(new SSEEvent('pushed later'));
    expect((await within(r.next(), 3000, 'event')).data).toBe('pushed later');
    s.close();
    await within(r.ended, 3000, 'close(stream) ends the response');
    await expect(s.write(new SSEEvent('too late'))).rejects.toBeInstanceOf(CanceledError);
    expect(s.closed).toBe(true);
    expect(s.ctx.canceled).toBe(true);
  });

  it('sseStream(response, fn) and sseStream(fn, response) set up an existing Response', async () => {
    const { port } = await startServer((req) => {
      const res = new Response(200, null, { headers: { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-store' }, request: req });
      const s = sseStream(res, async (st) => {
        await st.write(new SSEEvent('from response form'));
      });
      expect(s).toBe(res.body);
      return res;
    });
    const r = await readSSE(port);
    // Headers the caller chose are kept (a media type with parameters, its own caching).
    expect(r.res.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(r.res.headers['cache-control']).toBe('no-store');
    await within(r.ended, 3000, 'end');
    expect(r.events.map((e) => e.data)).toEqual(['from response form']);

    const existing = new SSEStream({ maxLen: 100 });
    const res2 = new Response(200, existing);
    expect(sseStream(async () => undefined, res2)).toBe(existing);
    expect(res2.headers.get('Content-Type')).toBe('text/event-stream');
    expect(() => sseStream(new Response(200, 'body'))).toThrow(ArgumentError);
  });

  it('a client that goes away cancels the stream: writes reject, stream.ctx and req.ctx are canceled, the server goes on', async () => {
    let request: Request | null = null;
    let written = 0;
    let failure: unknown = null;
    let producerCtxCanceled = false;
    const done = gate();
    const { port } = await startServer((req) => {
      if (req.target === '/ping') return new Response(200, 'pong');
      request = req;
      return sseStream(
        async (s) => {
          try {
            for (;;) {
              await s.write(new SSEEvent(`tick ${written}`));
              written++;
              await new Promise((r) => setTimeout(r, 5));
            }
          } catch (err) {
            failure = err;
            producerCtxCanceled = s.ctx.canceled && s.ctx.signal.aborted;
          } finally {
            done.open();
          }
        },
        200,
        { request: req },
      );
    });
    const r = await readSSE(port);
    await within(r.next(), 3000, 'an event');
    await within(r.next(), 3000, 'another event');
    const before = written;
    r.destroy();
    await within(done.promise, 3000, 'the producer stops after the disconnect');
    expect(failure).toBeInstanceOf(CanceledError);
    expect(String((failure as Error).message)).toMatch(/client closed the connection/);
    expect(producerCtxCanceled).toBe(true);
    expect((request as unknown as Request).ctx.canceled).toBe(true);
    // It stopped at once: at most the write in flight when the socket closed.
    expect(written - before).toBeLessThanOrEqual(2);
    const ping = await fetch(`http://127.0.0.1:${port}/ping`);
    expect(await ping.text()).toBe('pong');
  });

  it('without the request linked, the producer still stops within two writes of a disconnect', async () => {
    const done = gate();
    let failure: unknown = null;
    let writesAfter = 0;
    let disconnected = false;
    const { port } = await startServer(() =>
      sseStream(async (s) => {
        try {
          for (let i = 0; ; i++) {
            await s.write(new SSEEvent(`n ${i}`));
            if (disconnected) writesAfter++;
            await new Promise((r) => setTimeout(r, 10));
          }
        } catch (err) {
          failure = err;
        } finally {
          done.open();
        }
      }),
    );
    const r = await readSSE(port);
    await within(r.next(), 3000, 'an event');
    const closed = new Promise((ok) => r.res.socket!.once('close', ok));
    r.destroy();
    await closed;
    disconnected = true;
    await within(done.promise, 3000, 'the producer stops');
    expect(failure).toBeInstanceOf(CanceledError);
    expect(writesAfter).toBeLessThanOrEqual(2);
  });

  it('a producer that throws: the server reports it and cuts the response off', async () => {
    const boom = new Error('producer broke');
    const started = await startServer((req) =>
      sseStream(
        async (s) => {
          await s.write(new SSEEvent('before'));
          // Queued but not yet sent when the producer throws: still delivered, then the cut.
          void s.write(new SSEEvent('queued'));
          throw boom;
        },
        200,
        { request: req },
      ),
    );
    const r = await readSSE(started.port);
    await expect(within(r.ended, 3000, 'cut off')).rejects.toThrow();
    expect(r.events.map((e) => e.data)).toEqual(['before', 'queued']);
    await waitFor(() => started.errors.length > 0);
    expect(started.errors[0]!.error).toBe(boom);
  });

  it('HEAD gets the headers, no body, and the producer is stopped', async () => {
    let failure: unknown = null;
    const done = gate();
    const { port } = await startServer((req) =>
      sseStream(
        async (s) => {
          await s.write(new SSEEvent('x')).catch((e: unknown) => (failure = e));
          done.open();
        },
        200,
        { request: req },
      ),
    );
    const r = await readSSE(port, '/', 'HEAD');
    expect(r.res.headers['content-type']).toBe('text/event-stream');
    await within(r.ended, 3000, 'end');
    await within(done.promise, 3000, 'producer ran');
    expect(r.raw()).toBe('');
    expect(failure).toBeInstanceOf(CanceledError);
  });

  it('checks its arguments', () => {
    expect(() => sseStream('x' as unknown as number, {})).toThrow(/status must be a number/);
    expect(() => sseStream(200, { body: 'x' } as never)).toThrow(/do not pass body/);
    expect(() => sseStream(200, { maxLen: 0 })).toThrow(/maxLen must be/);
    expect(() => sseStream(new Response(200), 'f' as never)).toThrow(/fn must be a function/);
    const res: SSEResponse = sseStream();
    expect(res.status).toBe(200);
    expect(res.contentLength).toBe(-1);
    return expect(res.body.write({ data: 'x' } as never)).rejects.toThrow(/takes an SSEEvent/);
  });
});

describe('SSEStream as a body', () => {
  it('reads what was written since the last read, and waits for more', async () => {
    const s = new SSEStream();
    const buf = new Uint8Array(1024);
    const pending = s.read(buf);
    await s.write(new SSEEvent('a'));
    expect(Buffer.from(buf.subarray(0, await pending)).toString()).toBe('data: a\n\n');
    void s.write(new SSEEvent('b'));
    void s.write(new SSEEvent('c'));
    expect(Buffer.from(buf.subarray(0, await s.read(buf))).toString()).toBe('data: b\n\ndata: c\n\n');
    s.close();
    expect(await s.read(buf)).toBe(0);
  });

  it('iterates as one chunk per wake-up, copied, and ends after close()', async () => {
    const s = new SSEStream();
    const it = s[Symbol.asyncIterator]();
    const first = it.next();
    void s.write(new SSEEvent('a'));
    expect(Buffer.from((await first).value as Uint8Array).toString()).toBe('data: a\n\n');
    const ev = new SSEEvent('b');
    void s.write(ev);
    void s.write(ev);
    const chunk = (await it.next()).value as Uint8Array;
    expect(Buffer.from(chunk).toString()).toBe('data: b\n\ndata: b\n\n');
    chunk.fill(0); // the caller may keep and change it: the shared event bytes stay intact
    void s.write(ev);
    expect(Buffer.from((await it.next()).value as Uint8Array).toString()).toBe('data: b\n\n');
    s.close();
    expect((await it.next()).done).toBe(true);
  });

  it('holds a producer back past 16 KiB until the server reads, and splits large events across reads', async () => {
    const s = new SSEStream();
    const big = new SSEEvent('y'.repeat(10 * 1024));
    await s.write(big); // 10 KiB queued: below the mark
    let second = false;
    const p = s.write(big).then(() => (second = true)); // 20 KiB: waits
    await new Promise((r) => setImmediate(r));
    expect(second).toBe(false);
    const buf = new Uint8Array(4 * 1024);
    let got = 0;
    while (!second) {
      got += await s.read(buf);
      await new Promise((r) => setImmediate(r));
    }
    await p;
    s.close();
    for (let n = await s.read(buf); n > 0; n = await s.read(buf)) got += n;
    expect(got).toBe(2 * (10 * 1024 + 'data: \n\n'.length));
  });

  it('follow(ctx): a canceled context drops queued events and rejects waiting writes', async () => {
    const { RequestContext } = await import('../../../kernel/index.js');
    const ctx = new RequestContext();
    const s = new SSEStream();
    s.follow(ctx);
    const first = s.write(new SSEEvent('z'.repeat(20 * 1024)));
    const waiting = s.write(new SSEEvent('w'));
    ctx.cancel('gone');
    await expect(first).rejects.toBeInstanceOf(CanceledError);
    await expect(waiting).rejects.toThrow(/gone/);
    expect(await s.read(new Uint8Array(16))).toBe(0);
    expect(s.ctx.reason).toBe('gone');
  });
});

describe('sseStream and the server closing', () => {
  it('server.forceClose() cuts an open event stream at once: the client sees the end, the producer is canceled', async () => {
    const first = gate();
    let stream: SSEStream | null = null;
    const { server, port } = await startServer((req) =>
      sseStream(
        async (s) => {
          stream = s;
          await s.write(new SSEEvent('first'));
          first.open();
          await new Promise((resolve) => s.ctx.signal.addEventListener('abort', resolve));
        },
        200,
        { request: req },
      ),
    );
    const r = await readSSE(port);
    await first.promise;
    expect(await within(r.next(), 3000, 'the first event')).toMatchObject({ data: 'first' });
    await within(server.forceClose(), 3000, 'forceClose');
    await expect(within(r.ended, 3000, 'the client to see the end')).rejects.toThrow();
    expect(stream!.ctx.canceled).toBe(true);
  });

  for (const follows of [true, false]) {
    it(`server.close() ends an open event stream cleanly once closeGracePeriod is over (request given: ${follows})`, async () => {
      const GRACE = 250;
      const first = gate();
      let stream: SSEStream | null = null;
      const { server, port } = await startServer(
        (req) =>
          sseStream(
            async (s) => {
              stream = s;
              await s.write(new SSEEvent('first'));
              first.open();
              await new Promise((resolve) => s.ctx.signal.addEventListener('abort', resolve));
              // Later writes are refused: the producer stops.
              await s.write(new SSEEvent('too late')).catch(() => undefined);
            },
            200,
            follows ? { request: req } : {},
          ),
        { closeGracePeriod: GRACE },
      );
      const r = await readSSE(port);
      await first.promise;
      expect(await within(r.next(), 3000, 'the first event')).toMatchObject({ data: 'first' });
      const started = performance.now();
      const closing = server.close();
      await within(r.ended, 3000, 'the stream to end cleanly');
      expect(performance.now() - started).toBeGreaterThanOrEqual(GRACE - 1);
      expect(r.raw()).toBe('data: first\n\n');
      expect(stream!.ctx.canceled).toBe(true);
      await within(closing, 3000, 'close()');
      expect(server.connectionCount).toBe(0);
    });
  }

  it('server.close() ends an event stream over HTTP/2 cleanly (END_STREAM, not a reset) once closeGracePeriod is over', async () => {
    const GRACE = 250;
    const first = gate();
    const server = await serve(
      (req) =>
        sseStream(
          async (s) => {
            await s.write(new SSEEvent('first'));
            first.open();
            await new Promise((resolve) => s.ctx.signal.addEventListener('abort', resolve));
          },
          200,
          { request: req },
        ),
      { host: '127.0.0.1', port: 0, kernel: await h2Kernel(), closeGracePeriod: GRACE },
    );
    forceCloseAfter(server);
    // node:http2 as the client, over h2c with prior knowledge.
    const session = destroyAfter(http2.connect(`http://127.0.0.1:${server.port}`));
    session.on('error', () => {});
    const req = session.request({ ':path': '/' });
    req.setEncoding('utf8');
    let body = '';
    req.on('data', (c: string) => (body += c));
    const ended = new Promise<void>((resolve, reject) => {
      req.on('end', resolve);
      req.on('error', reject);
    });
    await first.promise;
    while (!body.includes('\n\n')) await within(once(req, 'data'), 3000, 'the first event');
    const started = performance.now();
    const closing = server.close();
    await within(ended, 3000, 'the stream to end');
    expect(performance.now() - started).toBeGreaterThanOrEqual(GRACE - 1);
    expect(body).toBe('data: first\n\n');
    expect(req.rstCode).toBe(http2.constants.NGHTTP2_NO_ERROR);
    session.close();
    await within(closing, 3000, 'close()');
  });
});
