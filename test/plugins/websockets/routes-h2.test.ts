/**
 * WebSockets with the other plugins: a router route upgrades (its path variables reach the
 * session), on the router as a stream handler and through the router plugin; an upgrade
 * asked over HTTP/2 is refused with an ArgumentError that says why, and the h2 connection
 * keeps serving its other streams.
 */
import http2 from 'node:http2';
import { describe, expect, it } from 'vitest';
import { ArgumentError, Client, createKernel, listen, Response, type Stream, type StreamHandler } from '../../../kernel/index.js';
import { h2, h2c } from '../../../plugins/index.js';
import { Router, getParam, router as routerPlugin } from '../../../plugins/router/index.js';
import { WebSockets, websockets } from '../../../plugins/websockets/index.js';
import { onCleanup, trackServer, within } from '../../helpers/websockets.js';

/** A route that upgrades and answers one message with the room it was routed to. */
async function room(stream: Stream): Promise<void> {
  const name = getParam(stream.request, 'room');
  await WebSockets.upgrade(stream, async (ws) => {
    const m = await ws.receive();
    await ws.send(`${String(name)}: ${String(m)}`);
    await ws.receive().catch(() => undefined);
  });
}

async function roundTrip(url: string): Promise<unknown> {
  return WebSockets.open(url, async (ws) => {
    await ws.send('hi');
    const reply = await ws.receive();
    await ws.close();
    return reply;
  });
}

describe('WebSockets with the router', () => {
  it('a route of a stream Router upgrades, with its path variables', async () => {
    const router = new Router<StreamHandler>();
    router.get('/rooms/{room}', room);
    const server = await listen(router, { host: '127.0.0.1', port: 0 });
    trackServer(server);
    expect(await roundTrip(`ws://127.0.0.1:${server.port}/rooms/lobby`)).toBe('lobby: hi');
  });

  it('beside the router plugin: its request routes answer, upgrades reach the stream Router', async () => {
    const kernel = createKernel().register([routerPlugin, websockets]);
    await kernel.ready();
    onCleanup(() => kernel.close());
    kernel.route('GET', '/api/ping', () => new Response(200, 'pong'));
    // Plugin routes get a Request (the body read); an upgrade needs the stream, so the
    // server's own stream Router takes the paths the plugin has no route for.
    const streams = new Router<StreamHandler>();
    streams.get('/live/{room}', room);
    const server = await listen(streams, { host: '127.0.0.1', port: 0, kernel });
    trackServer(server);
    expect(await roundTrip(`ws://127.0.0.1:${server.port}/live/kitchen`)).toBe('kitchen: hi');
    const client = new Client();
    onCleanup(() => client.close());
    const res = await client.get(`http://127.0.0.1:${server.port}/api/ping`);
    expect([res.status, res.text()]).toEqual([200, 'pong']);
  });
});

describe('WebSockets over HTTP/2', () => {
  it('upgrade() on an HTTP/2 stream throws ArgumentError; the connection keeps serving', async () => {
    const kernel = createKernel().register([h2, h2c]);
    await kernel.ready();
    onCleanup(() => kernel.close());
    let refused: unknown;
    const server = await listen(
      async (stream) => {
        if (stream.request.target === '/ws') {
          try {
            await WebSockets.upgrade(stream, () => undefined);
          } catch (err) {
            refused = err;
            stream.setStatus(400);
            await stream.write('no WebSockets over HTTP/2');
          }
          return;
        }
        await stream.write('ok');
      },
      { host: '127.0.0.1', port: 0, kernel },
    );
    trackServer(server);
    const session = http2.connect(`http://127.0.0.1:${server.port}`);
    onCleanup(() => session.destroy());
    const get = (path: string, headers: http2.OutgoingHttpHeaders = {}) =>
      within(
        new Promise<{ status: number; body: string }>((resolve, reject) => {
          const req = session.request({ ':path': path, ...headers });
          let status = 0;
          let body = '';
          req.on('response', (h) => (status = Number(h[':status'])));
          req.setEncoding('utf8');
          req.on('data', (d: string) => (body += d));
          req.on('end', () => resolve({ status, body }));
          req.on('error', reject);
          req.end();
        }),
        5000,
        `GET ${path} over h2c`,
      );
    // What a WebSocket client sends (minus Connection/Upgrade, which HTTP/2 forbids).
    const ws = await get('/ws', { 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', 'sec-websocket-version': '13' });
    expect(ws).toEqual({ status: 400, body: 'no WebSockets over HTTP/2' });
    expect(refused).toBeInstanceOf(ArgumentError);
    expect((refused as Error).message).toMatch(/HTTP\/2|h2/);
    expect(await get('/other')).toEqual({ status: 200, body: 'ok' });
  });
});
