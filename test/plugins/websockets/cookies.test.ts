/**
 * The WebSocket handshake runs the client's `onRequest` and `onResponseHead` taps: with the
 * cookies plugin and a `cookiejar`, a `Set-Cookie` on the 101 is stored and the next handshake
 * sends it; a third-party `onRequest` tap's header reaches the server; an `onRequest` tap that
 * answers the request itself fails the upgrade. The server is bare `ws` (its 'headers' event
 * adds the Set-Cookie), so the Cookie header seen is what went on the wire.
 */
import { once } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { createKernel, definePlugin, ProtocolError, Response } from '../../../kernel/index.js';
import { cookies, CookieJar, WebSockets, websockets } from '../../../plugins/index.js';
import { onCleanup } from '../../helpers/websockets.js';

async function cookieServer(): Promise<{ url: string; seen: (string | undefined)[] }> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  onCleanup(() => new Promise<void>((r) => wss.close(() => r())));
  const seen: (string | undefined)[] = [];
  wss.on('headers', (headers: string[], req: IncomingMessage) => {
    seen.push(req.headers.cookie);
    if (req.headers['x-tap'] !== undefined) seen.push(`x-tap:${req.headers['x-tap'] as string}`);
    headers.push('Set-Cookie: sid=abc; Path=/; HttpOnly');
  });
  wss.on('connection', (ws) => ws.on('message', (m, bin) => ws.send(m, { binary: bin })));
  await once(wss, 'listening');
  return { url: `ws://127.0.0.1:${(wss.address() as { port: number }).port}/chat`, seen };
}

describe('WebSocket handshake through the client taps', () => {
  it('stores a Set-Cookie of the 101 in the cookiejar and sends it on the next handshake', async () => {
    const { url, seen } = await cookieServer();
    const kernel = await createKernel().register([cookies, websockets]).ready();
    const jar = new CookieJar();
    const talk = async (): Promise<void> =>
      WebSockets.open(
        url,
        async (ws) => {
          await ws.send('hi');
          expect(await ws.receive()).toBe('hi');
        },
        { kernel, cookiejar: jar },
      );
    await talk();
    await talk();
    expect(seen).toEqual([undefined, 'sid=abc']);
    // Without a jar nothing is sent.
    await WebSockets.open(url, async () => undefined, { kernel });
    expect(seen[2]).toBeUndefined();
  });

  it('runs a third-party onRequest tap on the handshake, and fails the upgrade when a tap answers it', async () => {
    const { url, seen } = await cookieServer();
    const tagger = definePlugin({
      name: 'tagger',
      register(k) {
        k.hooks.client.onRequest.tap('tagger', (req) => {
          if (req.target === '/answered') return new Response(200, 'from the tap');
          req.headers.set('X-Tap', 'yes');
          return undefined;
        });
      },
    });
    const kernel = await createKernel().register([tagger, websockets]).ready();
    await WebSockets.open(url, async () => undefined, { kernel });
    expect(seen).toContain('x-tap:yes');
    await expect(WebSockets.open(url.replace('/chat', '/answered'), async () => undefined, { kernel })).rejects.toBeInstanceOf(ProtocolError);
  });
});
