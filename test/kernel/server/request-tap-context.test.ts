/**
 * A `server.onRequest` tap made with `tapAsync` that calls back inside an async context
 * (`AsyncLocalStorage.run`, as a tracing plugin does with its span's context): the rest of the
 * exchange (later taps, the request or stream handler) runs inside that context, whichever path
 * the exchange takes (a request without a body, one whose body is read first, a stream handler).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { describe, expect, it } from 'vitest';
import { createKernel, definePlugin, Response, Stage, type AnyPlugin, type Kernel } from '../../../kernel/index.js';
import { h2 } from '../../../plugins/h2/index.js';
import { h2c } from '../../../plugins/h2c/index.js';
import { closeAfter, onCleanup } from '../../helpers/cleanup.js';
import { startServer, startStreamServer } from '../../helpers/server.js';

const als = new AsyncLocalStorage<string>();

/** A ready kernel whose one `server.onRequest` tap calls back inside `als.run(<target>)`, with `more` plugins. */
async function contextKernel(...more: AnyPlugin[]): Promise<Kernel> {
  const plugin = definePlugin({
    name: 'context-tap',
    register(kernel) {
      kernel.hooks.server.onRequest.tapAsync({ name: 'context-tap', stage: Stage.FIRST }, (req, _ex, cb) => {
        // A tick first, as a tap that waits would: the callback still carries the context on.
        setImmediate(() => als.run(`ctx ${req.target}`, () => cb()));
      });
    },
  });
  const kernel = createKernel().register([...more, plugin]);
  await kernel.ready();
  onCleanup(() => kernel.close());
  return kernel;
}

describe('server.onRequest: a tapAsync callback carries its async context into the handler', () => {
  it('request handler, request without a body', async () => {
    const kernel = await contextKernel();
    const { port } = await startServer(() => new Response(200, String(als.getStore())), { kernel });
    const client = closeAfter(kernel.client());
    const res = await client.request('GET', `http://127.0.0.1:${port}/a`);
    expect(res.text()).toBe('ctx /a');
  });

  it('request handler, request whose body is read before the taps (HTTP/2)', async () => {
    // HTTP/1.1 collects a body before the exchange starts; an HTTP/2 stream's body is read by
    // the exchange, before the taps run.
    const kernel = await contextKernel(h2, h2c);
    const { port } = await startServer(
      async (req) => {
        await Promise.resolve();
        return new Response(200, `${String(als.getStore())} ${Buffer.from(req.body as Uint8Array).toString()}`);
      },
      { kernel },
    );
    const client = closeAfter(kernel.client());
    const res = await client.request('POST', `http://127.0.0.1:${port}/b`, { body: 'payload', httpVersion: 'h2' });
    expect(res.protoMajor).toBe(2);
    expect(res.text()).toBe('ctx /b payload');
  });

  it('stream handler', async () => {
    const kernel = await contextKernel();
    const { port } = await startStreamServer(
      async (s) => {
        const req = await s.startRead();
        await s.readAll();
        await s.write(`${String(als.getStore())} ${req.target}`);
      },
      { kernel },
    );
    const client = closeAfter(kernel.client());
    const res = await client.request('POST', `http://127.0.0.1:${port}/c`, { body: 'x' });
    expect(res.text()).toBe('ctx /c /c');
  });

  it('stream handler (HTTP/2)', async () => {
    const kernel = await contextKernel(h2, h2c);
    const { port } = await startStreamServer(
      async (s) => {
        const req = await s.startRead();
        await s.readAll();
        await s.write(`${String(als.getStore())} ${req.target}`);
      },
      { kernel },
    );
    const client = closeAfter(kernel.client());
    const res = await client.request('POST', `http://127.0.0.1:${port}/d`, { body: 'x', httpVersion: 'h2' });
    expect(res.text()).toBe('ctx /d /d');
  });
});
