/**
 * `sseCallback` on client calls through the sse plugin, against switchyard servers and a
 * hand-written node:http server: events as they arrive, the body afterwards, responses left
 * alone, async and failing callbacks, maxLen, cancellation, decompression underneath.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { ArgumentError, CanceledError, Client, Response, StatusError, createKernel, type Kernel } from '../../../kernel/index.js';
import { decompression } from '../../../plugins/decompression/index.js';
import { SSEEvent, SSEEventTooLargeError, sse, sseStream } from '../../../plugins/sse/index.js';
import { gate, onCleanup, startServer, waitFor, within } from './helpers.js';
import type {} from '../../../plugins/options.js';

async function boot(plugins: Parameters<Kernel['register']>[0] = [sse]): Promise<Client> {
  const kernel = createKernel().register(plugins);
  await kernel.ready();
  const client = new Client({ kernel });
  onCleanup(async () => {
    client.close();
    await kernel.close();
  });
  return client;
}

/** A node:http server (not ours) on port 0, closed after the test. */
async function nodeServer(handler: http.RequestListener): Promise<{ url: string; seen: http.IncomingHttpHeaders[] }> {
  const seen: http.IncomingHttpHeaders[] = [];
  const server = http.createServer((req, res) => {
    seen.push(req.headers);
    handler(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  onCleanup(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, seen };
}

describe('sseCallback', () => {
  it('calls back with each event as it arrives; the call resolves at the end with an empty body', async () => {
    const g = gate();
    const { port } = await startServer((req) =>
      sseStream(
        async (s) => {
          await s.write(new SSEEvent('one', { id: '1' }));
          await g.promise;
          await s.write(new SSEEvent('two', { event: 'e', retry: 100 }));
        },
        200,
        { request: req },
      ),
    );
    const client = await boot();
    const got: SSEEvent[] = [];
    const call = client.request('GET', `http://127.0.0.1:${port}/`, {
      sseCallback: (ev, res) => {
        expect(res.status).toBe(200);
        got.push(ev);
      },
    });
    await within(
      waitFor(() => got.length === 1),
      3000,
      'the first event while the server waits',
    );
    expect(got[0]).toMatchObject({ data: 'one', id: '1', event: null, retry: null });
    g.open();
    const res = await within(call, 3000, 'the call resolves when the stream ends');
    expect(got.map((e) => [e.data, e.event, e.id, e.retry])).toEqual([
      ['one', null, '1', null],
      ['two', 'e', '1', 100],
    ]);
    expect(res.status).toBe(200);
    expect(res.body).toBeInstanceOf(Uint8Array);
    expect((res.body as Uint8Array).length).toBe(0);
    expect(res.headers.get('Content-Type')).toBe('text/event-stream');
  });

  it('parses a node:http stream written in odd pieces: BOM, CRLF and CR, comments, split lines, partial tail dropped', async () => {
    const { url, seen } = await nodeServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'Text/Event-Stream; charset=utf-8' });
      const pieces = ['\ufeff: hello\r\n', 'data: a', 'b\r', '\ndata: c\r\n\r', '\nid: 7\nevent: x\ndata', ': d\n\n', 'data: never dispatched\n'];
      let i = 0;
      const next = (): void => {
        if (i === pieces.length) {
          res.end();
          return;
        }
        res.write(pieces[i++]);
        setTimeout(next, 2);
      };
      next();
    });
    const client = await boot();
    const got: SSEEvent[] = [];
    await client.request('GET', url, { sseCallback: (ev) => void got.push(ev) });
    expect(got.map((e) => ({ data: e.data, id: e.id, event: e.event }))).toEqual([
      { data: 'ab\nc', id: null, event: null },
      { data: 'd', id: '7', event: 'x' },
    ]);
    expect(seen[0]!.accept).toBe('text/event-stream');
  });

  it('keeps a caller Accept header, and leaves other responses alone', async () => {
    const { url, seen } = await nodeServer((req, res) => {
      if (req.url === '/404') {
        res.writeHead(404, { 'Content-Type': 'text/event-stream' });
        res.end('data: not for you\n\n');
        return;
      }
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"ok":true}');
    });
    const client = await boot();
    const got: SSEEvent[] = [];
    const res = await client.request('GET', url, { headers: { Accept: 'application/json' }, sseCallback: (ev) => void got.push(ev) });
    expect(seen[0]!.accept).toBe('application/json');
    expect(res.json()).toEqual({ ok: true });
    await expect(client.request('GET', `${url}404`, { sseCallback: (ev) => void got.push(ev) })).rejects.toBeInstanceOf(StatusError);
    expect(got).toEqual([]);
  });

  it('awaits an async callback before the next event', async () => {
    const { port } = await startServer((req) =>
      sseStream(
        async (s) => {
          for (let i = 0; i < 5; i++) await s.write(new SSEEvent(String(i)));
        },
        200,
        { request: req },
      ),
    );
    const client = await boot();
    let active = 0;
    let overlap = false;
    const order: string[] = [];
    await client.request('GET', `http://127.0.0.1:${port}/`, {
      sseCallback: async (ev) => {
        active++;
        if (active > 1) overlap = true;
        await new Promise((r) => setTimeout(r, 5));
        order.push(ev.data);
        active--;
      },
    });
    expect(overlap).toBe(false);
    expect(order).toEqual(['0', '1', '2', '3', '4']);
  });

  it('a callback that throws fails the call and closes the connection: the server producer stops', async () => {
    let producerFailure: unknown = null;
    const stopped = gate();
    const { port } = await startServer((req) =>
      sseStream(
        async (s) => {
          try {
            for (let i = 0; ; i++) {
              await s.write(new SSEEvent(String(i)));
              await new Promise((r) => setTimeout(r, 5));
            }
          } catch (err) {
            producerFailure = err;
            stopped.open();
          }
        },
        200,
        { request: req },
      ),
    );
    const client = await boot();
    const boom = new Error('enough');
    await expect(
      client.request('GET', `http://127.0.0.1:${port}/`, {
        sseCallback: (ev) => {
          if (ev.data === '2') throw boom;
        },
      }),
    ).rejects.toBe(boom);
    await within(stopped.promise, 3000, 'the producer sees the disconnect');
    expect(producerFailure).toBeInstanceOf(CanceledError);
  });

  it('sseMaxLen bounds one event (and the plugin option sets the default)', async () => {
    const { port } = await startServer((req) =>
      sseStream(
        async (s) => {
          await s.write(new SSEEvent('short'));
          await s.write(new SSEEvent('l'.repeat(200)));
        },
        200,
        { request: req },
      ),
    );
    const client = await boot();
    const got: string[] = [];
    const err = await client.request('GET', `http://127.0.0.1:${port}/`, { sseMaxLen: 100, sseCallback: (ev) => void got.push(ev.data) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SSEEventTooLargeError);
    expect(err).toMatchObject({ maxLen: 100, side: 'parse' });
    expect(got).toEqual(['short']);

    const kernel = createKernel().register(sse, { maxLen: 50 });
    await kernel.ready();
    const c2 = new Client({ kernel });
    onCleanup(async () => {
      c2.close();
      await kernel.close();
    });
    await expect(c2.request('GET', `http://127.0.0.1:${port}/`, { sseCallback: () => undefined })).rejects.toMatchObject({ maxLen: 50 });
  });

  it('refuses bad options before sending anything', async () => {
    let requests = 0;
    const { port } = await startServer(() => {
      requests++;
      return new Response(200, 'x');
    });
    const client = await boot();
    const { Writable } = await import('node:stream');
    const sink = new Writable({ write: (_c, _e, cb) => cb() });
    await expect(client.request('GET', `http://127.0.0.1:${port}/`, { sseCallback: () => undefined, responseStream: sink })).rejects.toThrow(/cannot be combined with responseStream/);
    await expect(client.request('GET', `http://127.0.0.1:${port}/`, { sseCallback: 'no' as never })).rejects.toBeInstanceOf(ArgumentError);
    await expect(client.request('GET', `http://127.0.0.1:${port}/`, { sseCallback: () => undefined, sseMaxLen: -1 })).rejects.toThrow(/sseMaxLen must be/);
    expect(requests).toBe(0);
  });

  it('canceling the call (signal) mid-stream rejects with CanceledError and stops the server producer', async () => {
    const stopped = gate();
    const { port } = await startServer((req) =>
      sseStream(
        async (s) => {
          try {
            for (;;) {
              await s.write(new SSEEvent('tick'));
              await new Promise((r) => setTimeout(r, 5));
            }
          } catch {
            stopped.open();
          }
        },
        200,
        { request: req },
      ),
    );
    const client = await boot();
    const ac = new AbortController();
    let n = 0;
    const call = client.request('GET', `http://127.0.0.1:${port}/`, {
      signal: ac.signal,
      sseCallback: () => {
        if (++n === 3) ac.abort();
      },
    });
    await expect(call).rejects.toBeInstanceOf(CanceledError);
    await within(stopped.promise, 3000, 'producer stopped');
  });

  it('parses after the decompression plugin decoded a gzip event stream', async () => {
    const { url } = await nodeServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Content-Encoding': 'gzip' });
      const gz = zlib.createGzip();
      gz.pipe(res);
      gz.write('data: zipped 1\n\n');
      gz.flush(() => {
        gz.end('data: zipped 2\n\n');
      });
    });
    const client = await boot([decompression, sse]);
    const got: string[] = [];
    await client.request('GET', url, { sseCallback: (ev) => void got.push(ev.data) });
    expect(got).toEqual(['zipped 1', 'zipped 2']);
  });

  it('is refused, naming the plugin, by a client whose kernel lacks the plugin (it would be ignored)', async () => {
    const { port } = await startServer((req) => sseStream(async (s) => s.write(new SSEEvent('raw')), 200, { request: req }));
    const client = await boot([]);
    let called = false;
    await expect(client.request('GET', `http://127.0.0.1:${port}/`, { sseCallback: () => void (called = true) })).rejects.toThrow(
      /^request\("GET", …\): sseCallback needs the sse plugin, which this client's kernel does not have/,
    );
    expect(called).toBe(false);
  });
});
