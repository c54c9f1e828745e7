/**
 * The kernel's entry points for clients and servers: `kernel.client(options)` (and the
 * equivalent `new Client({ kernel })`) runs the kernel's client taps; `kernel.serve` and
 * `kernel.listen` run its server taps, and `kernel.close()` closes the servers they started
 * (`server.wait()` resolves, the port refuses connections). Real loopback, port 0.
 */
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { closeAfter, closeKernelAfter, forceCloseAfter } from '../helpers/cleanup.js';
import { Client, createKernel, definePlugin, Response, type Kernel, type Request, type Server } from '../../kernel/index.js';
import { startServer, within } from '../helpers/client.js';

// ---- cleanup (test/helpers/cleanup.ts: clients, then servers, then kernels) ---------------------------

function track<T extends Kernel | Client | Server>(x: T): T {
  if (x instanceof Client) closeAfter(x);
  else if ('forceClose' in x) forceCloseAfter(x);
  else closeKernelAfter(x);
  return x;
}

// ---- plugins -----------------------------------------------------------------------------------

/** A plugin whose client.onRequest tap adds `X-Kernel-Tap` and counts the attempts it saw. */
function clientTapPlugin(seen: string[]) {
  return definePlugin({
    name: 'entrypoints-client-tap',
    register(kernel) {
      kernel.hooks.client.onRequest.tap('entrypoints-client-tap', (req) => {
        req.headers.set('X-Kernel-Tap', 'client');
        seen.push(req.target);
      });
    },
  });
}

/** A plugin with server taps: onRequest records the target, onResponseHead adds `X-Server-Tap`. */
function serverTapPlugin(seen: string[]) {
  return definePlugin({
    name: 'entrypoints-server-tap',
    register(kernel) {
      kernel.hooks.server.onRequest.tap('entrypoints-server-tap', (req) => {
        seen.push(req.target);
      });
      kernel.hooks.server.onResponseHead.tap('entrypoints-server-tap', (res) => {
        res.headers.set('X-Server-Tap', 'server');
      });
    },
  });
}

/** A server (no kernel) answering with the `X-Kernel-Tap` request header it got. */
async function headerEcho() {
  return startServer((req: Request) => new Response(200, `tap=${req.headers.get('X-Kernel-Tap') ?? '(none)'}`));
}

/** Resolves to the connect error for `port` on 127.0.0.1 (ECONNREFUSED once nothing listens), or null if it connected. */
function connectError(port: number): Promise<NodeJS.ErrnoException | null> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(null);
    });
    s.once('error', (err: NodeJS.ErrnoException) => resolve(err));
  });
}

// ---- clients -----------------------------------------------------------------------------------

describe('kernel.client()', () => {
  it('createKernel().register([...]).client() runs the kernel client taps (the server sees the header)', async () => {
    const seen: string[] = [];
    const s = await headerEcho();
    const kernel = track(createKernel().register([clientTapPlugin(seen)]));
    const client = track(kernel.client());
    expect(client).toBeInstanceOf(Client);
    expect(kernel.state).toBe('idle'); // boots on the first call
    const res = await client.get(`${s.origin}/one`);
    expect(res.text()).toBe('tap=client');
    expect(seen).toEqual(['/one']);
    expect(kernel.state).toBe('ready');
    const res2 = await client.post(`${s.origin}/two`, { body: 'x' });
    expect(res2.text()).toBe('tap=client');
    expect(seen).toEqual(['/one', '/two']);
  });

  it('kernel.client(options) keeps the other client options (defaultHeaders, statusException)', async () => {
    const seen: string[] = [];
    const s = await startServer((req) => new Response(req.target === '/missing' ? 404 : 200, `${req.headers.get('X-Kernel-Tap') ?? '-'} ${req.headers.get('X-Default') ?? '-'}`));
    const kernel = track(createKernel().register(clientTapPlugin(seen)));
    const client = track(kernel.client({ defaultHeaders: { 'X-Default': 'd' }, statusException: false }));
    const res = await client.get(`${s.origin}/missing`);
    expect(res.status).toBe(404);
    expect(res.text()).toBe('client d');
  });

  it('new Client({ kernel }) is equivalent; a Client without a kernel runs no taps', async () => {
    const seen: string[] = [];
    const s = await headerEcho();
    const kernel = track(createKernel().register([clientTapPlugin(seen)]));
    await kernel.ready();
    const a = track(new Client({ kernel }));
    const b = track(kernel.client());
    const plain = track(new Client());
    expect((await a.get(`${s.origin}/a`)).text()).toBe('tap=client');
    expect((await b.get(`${s.origin}/b`)).text()).toBe('tap=client');
    expect((await plain.get(`${s.origin}/plain`)).text()).toBe('tap=(none)');
    expect(seen).toEqual(['/a', '/b']);
  });

  it('kernel.client() also runs the taps for open()', async () => {
    const seen: string[] = [];
    const s = await headerEcho();
    const kernel = track(createKernel().register([clientTapPlugin(seen)]));
    const client = track(kernel.client());
    let body = '';
    const res = await client.open('GET', `${s.origin}/open`, async (stream) => {
      body = Buffer.from(await stream.readAll()).toString();
    });
    expect(res.status).toBe(200);
    expect(body).toBe('tap=client');
    expect(seen).toEqual(['/open']);
  });
});

// ---- servers -----------------------------------------------------------------------------------

describe('kernel.serve() and kernel.listen()', () => {
  it('kernel.serve runs the server taps; kernel.close() closes the server (wait() resolves, the port refuses)', async () => {
    const seen: string[] = [];
    const kernel = track(createKernel().register([serverTapPlugin(seen)]));
    const server = track(await kernel.serve((req) => new Response(200, `served ${req.target}`), { host: '127.0.0.1', port: 0 }));
    expect(kernel.state).toBe('ready'); // serve booted it
    expect(server.listening).toBe(true);
    const port = server.port;
    expect(port).toBeGreaterThan(0);
    const client = track(new Client());
    const res = await client.get(`http://127.0.0.1:${port}/hello`);
    expect(res.text()).toBe('served /hello');
    expect(res.headers.get('X-Server-Tap')).toBe('server');
    expect(seen).toEqual(['/hello']);
    // The client keeps that connection alive in its pool: close must still finish.
    let waited = false;
    const waiting = server.wait().then(() => (waited = true));
    expect(waited).toBe(false);
    await within(kernel.close(), 5000, 'kernel.close() with a served server');
    await within(waiting, 5000, 'server.wait() after kernel.close()');
    expect(server.listening).toBe(false);
    const err = await connectError(port);
    expect(err?.code).toBe('ECONNREFUSED');
  });

  it('kernel.listen runs the server taps for a stream handler; kernel.close() closes it', async () => {
    const seen: string[] = [];
    const kernel = track(createKernel().register(serverTapPlugin(seen)));
    await kernel.ready();
    const server = track(
      await kernel.listen(
        async (stream) => {
          const req = await stream.startRead();
          const body = Buffer.from(await stream.readAll()).toString();
          await stream.write(`stream ${req.target} ${body}`);
        },
        { host: '127.0.0.1', port: 0 },
      ),
    );
    const port = server.port;
    const client = track(new Client());
    const res = await client.post(`http://127.0.0.1:${port}/s`, { body: 'payload' });
    expect(res.text()).toBe('stream /s payload');
    expect(res.headers.get('X-Server-Tap')).toBe('server');
    expect(seen).toEqual(['/s']);
    await within(kernel.close(), 5000, 'kernel.close() with a listening server');
    await within(server.wait(), 5000, 'server.wait() after kernel.close()');
    expect(server.listening).toBe(false);
    expect((await connectError(port))?.code).toBe('ECONNREFUSED');
  });

  it('one kernel.close() closes every server it started, and the kernel client taps and server taps meet', async () => {
    const clientSeen: string[] = [];
    const serverSeen: string[] = [];
    const kernel = track(createKernel().register([clientTapPlugin(clientSeen), serverTapPlugin(serverSeen)]));
    const a = track(await kernel.serve((req) => new Response(200, `A ${req.headers.get('X-Kernel-Tap') ?? '-'}`), { host: '127.0.0.1', port: 0 }));
    const b = track(
      await kernel.listen(
        async (stream) => {
          const req = await stream.startRead();
          await stream.write(`B ${req.headers.get('X-Kernel-Tap') ?? '-'}`);
        },
        { host: '127.0.0.1', port: 0 },
      ),
    );
    const client = track(kernel.client());
    const ra = await client.get(`http://127.0.0.1:${a.port}/a`);
    const rb = await client.get(`http://127.0.0.1:${b.port}/b`);
    expect([ra.text(), rb.text()]).toEqual(['A client', 'B client']);
    expect([ra.headers.get('X-Server-Tap'), rb.headers.get('X-Server-Tap')]).toEqual(['server', 'server']);
    expect(clientSeen).toEqual(['/a', '/b']);
    expect(serverSeen).toEqual(['/a', '/b']);
    await within(kernel.close(), 5000, 'kernel.close() with two servers');
    await within(Promise.all([a.wait(), b.wait()]), 5000, 'both servers to stop');
    expect([a.listening, b.listening]).toEqual([false, false]);
    const errs = await Promise.all([connectError(a.port), connectError(b.port)]);
    expect(errs.map((e) => e?.code)).toEqual(['ECONNREFUSED', 'ECONNREFUSED']);
  });

  it('a server closed by hand before kernel.close() does not make kernel.close() fail', async () => {
    const kernel = track(createKernel());
    const server = track(await kernel.serve(() => new Response(200, 'x'), { host: '127.0.0.1', port: 0 }));
    await server.close();
    await within(kernel.close(), 5000, 'kernel.close() after the server closed itself');
    expect(kernel.state).toBe('closed');
  });

  it('kernel.close() waits for a request in flight, which completes', async () => {
    const kernel = track(createKernel());
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const inHandler = new Promise<void>((r) => (entered = r));
    const server = track(
      await kernel.serve(
        async () => {
          entered();
          await gate;
          return new Response(200, 'finished');
        },
        { host: '127.0.0.1', port: 0 },
      ),
    );
    const client = track(new Client());
    const pending = client.get(`http://127.0.0.1:${server.port}/slow`);
    await within(inHandler, 5000, 'the handler to start');
    let closed = false;
    const closing = kernel.close().then(() => (closed = true));
    // Not accepting any more, but the request in flight still runs.
    expect(closed).toBe(false);
    release();
    const res = await within(pending, 5000, 'the in-flight request');
    expect(res.text()).toBe('finished');
    await within(closing, 5000, 'kernel.close() after the in-flight request');
    expect((await connectError(server.port))?.code).toBe('ECONNREFUSED');
  });
});
