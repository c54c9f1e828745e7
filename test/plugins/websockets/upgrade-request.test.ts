/**
 * The kernel's client upgrade (`upgradeRequest`, kernel/client/upgrade.ts) on its own, with a
 * protocol that is not WebSocket: the 101 and the bytes behind it, interim responses, refusals,
 * a lent socket that stays open, and the errors.
 */
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { ArgumentError, Headers, listen, ParseError, Request, TimeoutError, upgradeRequest, type Stream } from '../../../kernel/index.js';
import { onCleanup, trackServer, waitFor } from '../../helpers/websockets.js';

function echoRequest(port: number, upgrade = 'echo'): Request {
  const headers = new Headers([
    ['Connection', 'Upgrade'],
    ['Upgrade', upgrade],
  ]);
  const req = new Request('GET', '/chat', { headers, host: `127.0.0.1:${port}` });
  req.url = `http://127.0.0.1:${port}/chat`;
  return req;
}

async function echoServer(): Promise<number> {
  const server = await listen(
    async (stream: Stream) => {
      if (stream.message.headers.get('Upgrade') !== 'echo') {
        stream.setStatus(426);
        await stream.write('echo only');
        return;
      }
      const { socket } = stream.upgrade();
      // An interim 103 first: the client must skip it and return the 101.
      socket.write('HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\nHTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\nwelcome');
      socket.on('data', (c: Buffer) => socket.write(c.toString('latin1').toUpperCase()));
      socket.resume();
      await new Promise((r) => socket.once('close', r));
    },
    { port: 0 },
  );
  trackServer(server);
  return server.port;
}

describe('upgradeRequest', () => {
  it('returns the 101, the paused socket and the bytes behind the head', async () => {
    const port = await echoServer();
    const { response, socket, head } = await upgradeRequest(echoRequest(port));
    onCleanup(() => socket.destroy());
    expect(response.status).toBe(101);
    expect(response.headers.get('Upgrade')).toBe('echo');
    let got = Buffer.from(head).toString('latin1');
    socket.on('data', (c: Buffer) => (got += c.toString('latin1')));
    socket.resume();
    socket.write('hi');
    await waitFor(() => got.includes('HI'), 3000, 'the echo');
    expect(got.startsWith('welcome')).toBe(true);
  });

  it('returns another status as it is, with the socket for the caller to close', async () => {
    const port = await echoServer();
    const { response, socket } = await upgradeRequest(echoRequest(port, 'other'));
    socket.destroy();
    expect(response.status).toBe(426);
  });

  it('works over a lent socket and leaves it open on failure', async () => {
    const sockets = new Set<net.Socket>();
    const s = net.createServer((c) => {
      sockets.add(c);
      c.on('error', () => {});
    });
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    onCleanup(() => {
      for (const c of sockets) c.destroy();
      return new Promise<void>((r) => s.close(() => r()));
    });
    const port = (s.address() as net.AddressInfo).port;
    const lent = net.connect({ host: '127.0.0.1', port });
    onCleanup(() => lent.destroy());
    await new Promise((r) => lent.once('connect', r));
    const err = await upgradeRequest(echoRequest(port), { socket: lent, responseHeaderTimeout: 100, timeoutOperation: 'websocket handshake' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as TimeoutError).operation).toBe('websocket handshake');
    expect(lent.destroyed).toBe(false);
    expect(lent.listenerCount('data')).toBe(0);
  });

  it('refuses a request without Upgrade, and reports a connection closed before the head', async () => {
    const req = echoRequest(1);
    req.headers.delete('Upgrade');
    await expect(upgradeRequest(req)).rejects.toBeInstanceOf(ArgumentError);
    const accepted = new Set<net.Socket>();
    const s = net.createServer((c) => {
      accepted.add(c);
      c.on('close', () => accepted.delete(c));
      c.resume();
      c.end('HTTP/1.1 10');
    });
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    onCleanup(() => new Promise<void>((r) => s.close(() => r())));
    const err = await upgradeRequest(echoRequest((s.address() as net.AddressInfo).port)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ParseError);
    // The connection was ours: it is closed.
    await waitFor(() => accepted.size === 0, 3000, 'the connection to close');
  });
});
