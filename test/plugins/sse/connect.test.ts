/**
 * sseConnect against loopback servers: reconnects with Last-Event-ID after the server's retry,
 * stops on cancel and on 204, fails on non-transient statuses, wrong content types and
 * callback errors, retries after transient statuses and broken connections.
 */
import { describe, expect, it } from 'vitest';
import { Client, ProtocolError, RequestContext, Response, StatusError, createKernel, type Request } from '../../../kernel/index.js';
import { SSEEvent, sse, sseConnect, sseStream } from '../../../plugins/sse/index.js';
import { onCleanup, startServer, within } from './helpers.js';

interface Hit {
  lastEventId: string | undefined;
  at: number;
}

/** A server whose n-th connection (0-based) is answered by `answers[n]` (the last one repeats). */
async function serverOf(answers: ((req: Request, n: number) => Response)[]): Promise<{ url: string; hits: Hit[] }> {
  const hits: Hit[] = [];
  const { port } = await startServer((req) => {
    const n = hits.length;
    hits.push({ lastEventId: req.headers.get('Last-Event-ID'), at: performance.now() });
    return answers[Math.min(n, answers.length - 1)]!(req, n);
  });
  return { url: `http://127.0.0.1:${port}/feed`, hits };
}

const events =
  (...evs: SSEEvent[]) =>
  (req: Request): Response =>
    sseStream(
      async (s) => {
        for (const e of evs) await s.write(e);
      },
      200,
      { request: req },
    );

describe('sseConnect', () => {
  it('reconnects after the server retry, sending Last-Event-ID, until its signal aborts', async () => {
    const { url, hits } = await serverOf([events(new SSEEvent('a', { id: '1', retry: 60 }), new SSEEvent('b', { id: '2' })), events(new SSEEvent('c', { id: '3' })), events(new SSEEvent('d'))]);
    const ac = new AbortController();
    const got: string[] = [];
    const opened: number[] = [];
    await within(
      sseConnect(
        url,
        (ev) => {
          got.push(`${ev.data}:${ev.id}`);
          if (ev.data === 'd') ac.abort();
        },
        { signal: ac.signal, retryDelay: 10_000, onOpen: (res) => void opened.push(res.status) },
      ),
      5000,
      'sseConnect resolves once aborted',
    );
    expect(got).toEqual(['a:1', 'b:2', 'c:3', 'd:3']);
    expect(hits.map((h) => h.lastEventId)).toEqual([undefined, '2', '3']);
    expect(opened).toEqual([200, 200, 200]);
    // The server's retry (60 ms) replaced retryDelay (10 s).
    expect(hits[1]!.at - hits[0]!.at).toBeGreaterThanOrEqual(55);
  });

  it('drops an event the stream cut off, and its id does not take effect', async () => {
    const { port } = await startServer((req) => {
      if (req.headers.get('Last-Event-ID') === undefined) {
        return new Response(200, 'id: 1\ndata: whole\n\nid: 2\ndata: cut', { headers: { 'Content-Type': 'text/event-stream' } });
      }
      return new Response(200, `data: resumed from ${req.headers.get('Last-Event-ID')}\n\n`, { headers: { 'Content-Type': 'text/event-stream' } });
    });
    const ctx = new RequestContext();
    const got: string[] = [];
    await sseConnect(
      `http://127.0.0.1:${port}/`,
      (ev) => {
        got.push(ev.data);
        if (got.length === 2) ctx.cancel();
      },
      { context: ctx, retryDelay: 1 },
    );
    expect(got).toEqual(['whole', 'resumed from 1']);
  });

  it('sends lastEventId on the first connection; a 204 ends it', async () => {
    const { url, hits } = await serverOf([() => new Response(204)]);
    await within(
      sseConnect(url, () => undefined, { lastEventId: '41' }),
      3000,
      '204 resolves',
    );
    expect(hits.map((h) => h.lastEventId)).toEqual(['41']);
  });

  it('fails with StatusError (body kept) on 404, ProtocolError on a 200 that is not an event stream', async () => {
    const a = await serverOf([() => new Response(404, 'no such feed')]);
    const err = await sseConnect(a.url, () => undefined, { retryDelay: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StatusError);
    expect((err as StatusError).status).toBe(404);
    expect((err as StatusError).response.text()).toBe('no such feed');
    expect(a.hits).toHaveLength(1);

    const b = await serverOf([() => new Response(200, '<html>', { headers: { 'Content-Type': 'text/html' } })]);
    await expect(sseConnect(b.url, () => undefined, { retryDelay: 1 })).rejects.toBeInstanceOf(ProtocolError);
  });

  it('reconnects after a transient status and a broken connection, telling onError', async () => {
    const { url, hits } = await serverOf([
      () => new Response(503, 'busy'),
      (req) =>
        sseStream(
          async (s) => {
            await s.write(new SSEEvent('partial', { id: '5' }));
            // A producer failure cuts the connection off mid-stream.
            throw new Error('backend died');
          },
          200,
          { request: req },
        ),
      events(new SSEEvent('fine')),
    ]);
    const errors: unknown[] = [];
    const ac = new AbortController();
    const got: string[] = [];
    await within(
      sseConnect(
        url,
        (ev) => {
          got.push(ev.data);
          if (ev.data === 'fine') ac.abort();
        },
        { signal: ac.signal, retryDelay: 5, onError: (e) => void errors.push(e) },
      ),
      5000,
      'recovers',
    );
    expect(got).toEqual(['partial', 'fine']);
    expect(errors).toHaveLength(2);
    expect(errors[0]).toBeInstanceOf(StatusError);
    expect((errors[0] as StatusError).status).toBe(503);
    expect(hits.map((h) => h.lastEventId)).toEqual([undefined, undefined, '5']);
  });

  it('onError can stop the reconnecting by throwing; a refused connection reaches onError', async () => {
    const { url, hits } = await serverOf([() => new Response(503, 'down')]);
    const giveUp = new Error('give up');
    let seen = 0;
    await expect(
      sseConnect(url, () => undefined, {
        retryDelay: 1,
        onError: () => {
          if (++seen === 3) throw giveUp;
        },
      }),
    ).rejects.toBe(giveUp);
    expect(hits).toHaveLength(3);

    // Port 1 on loopback: nothing listens there.
    const errors: unknown[] = [];
    await expect(
      sseConnect('http://127.0.0.1:1/', () => undefined, {
        retryDelay: 1,
        onError: (e) => {
          errors.push(e);
          throw e;
        },
      }),
    ).rejects.toBeDefined();
    expect(errors).toHaveLength(1);
    expect((errors[0] as Error).name).toBe('ConnectError');
  });

  it('a callback that throws ends it with that error, without reconnecting', async () => {
    const { url, hits } = await serverOf([events(new SSEEvent('x'), new SSEEvent('y'))]);
    const boom = new Error('stop here');
    await expect(
      sseConnect(
        url,
        () => {
          throw boom;
        },
        { retryDelay: 1 },
      ),
    ).rejects.toBe(boom);
    expect(hits).toHaveLength(1);
  });

  it('canceling while it waits to reconnect resolves at once', async () => {
    const { url } = await serverOf([events(new SSEEvent('only'))]);
    const ctx = new RequestContext();
    const p = sseConnect(
      url,
      () => {
        // The stream ends after this event; the reconnect waits 60 s unless canceled.
        setTimeout(() => ctx.cancel('done'), 20);
      },
      { context: ctx, retryDelay: 60_000 },
    );
    await within(p, 3000, 'resolves on cancel during the wait');
  });

  it("runs on a given client (its kernel's plugins apply) and leaves it open", async () => {
    const { url } = await serverOf([events(new SSEEvent('via client'))]);
    const kernel = createKernel().register(sse);
    await kernel.ready();
    const client = new Client({ kernel });
    onCleanup(async () => {
      client.close();
      await kernel.close();
    });
    const ac = new AbortController();
    const got: string[] = [];
    await sseConnect(
      url,
      (ev) => {
        got.push(ev.data);
        ac.abort();
      },
      {
        client,
        signal: ac.signal,
        sseCallback: () => {
          throw new Error('never: sseConnect parses itself');
        },
      },
    );
    expect(got).toEqual(['via client']);
    expect(client.isOpen).toBe(true);
  });

  it('checks its arguments', async () => {
    await expect(sseConnect('http://127.0.0.1:1/', 'x' as never)).rejects.toThrow(/callback must be a function/);
    await expect(sseConnect('http://127.0.0.1:1/', () => undefined, { retryDelay: -1 })).rejects.toThrow(/retryDelay/);
    await expect(sseConnect('http://127.0.0.1:1/', () => undefined, { client: {} as never })).rejects.toThrow(/client must be a Client/);
  });
});
