/**
 * `Stream.upgrade()`: a stream handler takes the HTTP/1.1 connection over for another
 * protocol (what `WebSockets.upgrade` builds on). The handler writes its own `101`, then
 * owns the raw socket; bytes the client sent right behind the head are handed over too.
 */
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { ArgumentError, type Stream } from '../../../kernel/index.js';
import { expectServing, rawClient, startStreamServer, waitFor, within } from '../../helpers/server.js';

const UPGRADE = 'GET /chat HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n';

/** A handler that upgrades to a line echo protocol that upper-cases what it reads. */
async function echoUpgrade(stream: Stream): Promise<void> {
  const { socket, head } = stream.upgrade();
  socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n');
  if (head.length > 0) socket.write(Buffer.from(head).toString('latin1').toUpperCase());
  socket.on('data', (c: Buffer) => {
    const text = c.toString('latin1');
    if (text.includes('BYE') || text.includes('bye')) socket.end('BYE');
    else socket.write(text.toUpperCase());
  });
  socket.resume();
  await once(socket, 'close');
}

describe('Stream.upgrade', () => {
  it('hands the socket over, with the bytes sent behind the head, and the server keeps serving', async () => {
    const { port, server, errors } = await startStreamServer(async (stream) => {
      if (stream.request.target === '/chat') return echoUpgrade(stream);
      stream.setHeader('Content-Length', '2');
      await stream.write('ok');
    });
    const c = await rawClient(port);
    c.socket.write(UPGRADE + 'early ');
    await waitFor(() => c.received.toString('latin1').includes('EARLY '), 3000, '101 and the early bytes');
    expect(c.received.toString('latin1')).toMatch(/^HTTP\/1\.1 101 Switching Protocols\r\n/);
    c.socket.write('hello');
    await waitFor(() => c.received.toString('latin1').includes('HELLO'), 3000, 'echo');
    c.socket.write('bye');
    await within(c.closed, 3000, 'close after bye');
    expect(c.received.toString('latin1').endsWith('BYE')).toBe(true);
    // The server no longer counts the upgraded connection, and keeps serving others.
    expect((await expectServing(port)).status).toBe(200);
    expect(errors).toEqual([]);
    void server;
  });

  it('a request without Upgrade taken over at once (its handler runs in the read): the bytes behind its head go with the socket', async () => {
    const { port } = await startStreamServer(async (stream) => {
      if (stream.request.target === '/take') return echoUpgrade(stream);
      stream.setHeader('Content-Length', '2');
      await stream.write('ok');
    });
    const c = await rawClient(port);
    c.socket.write('GET /take HTTP/1.1\r\nHost: x\r\n\r\nearly ');
    await waitFor(() => c.received.toString('latin1').includes('EARLY '), 3000, '101 and the early bytes');
    c.socket.write('bye');
    await waitFor(() => c.received.toString('latin1').endsWith('BYE'), 3000, 'the echo protocol ending');
  });

  it('refuses once the response has started, and the request is answered normally', async () => {
    let thrown: unknown;
    const { port } = await startStreamServer(async (stream) => {
      stream.setHeader('Content-Type', 'text/plain');
      stream.startWrite();
      try {
        stream.upgrade();
      } catch (err) {
        thrown = err;
      }
      await stream.write('no');
    });
    const c = await rawClient(port);
    c.socket.write(UPGRADE);
    const res = await c.response();
    expect(res.status).toBe(200);
    expect(thrown).toBeInstanceOf(ArgumentError);
    expect((thrown as Error).message).toMatch(/already started/);
  });

  it('onUpgraded listeners run once upgrade() handed the socket over, before the handler goes on; at once when registered after', async () => {
    const order: string[] = [];
    const { port } = await startStreamServer(async (stream) => {
      stream.onUpgraded(() => order.push(`listener (upgraded: ${stream.isUpgraded})`));
      order.push('before upgrade');
      const { socket } = stream.upgrade();
      order.push('after upgrade');
      stream.onUpgraded(() => order.push('late listener'));
      socket.end('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n');
    });
    const c = await rawClient(port);
    c.socket.write(UPGRADE);
    await within(c.closed, 3000, 'the 101 and the close');
    expect(order).toEqual(['before upgrade', 'listener (upgraded: true)', 'after upgrade', 'late listener']);
  });

  it('a listener that throws fails the upgrade: upgrade() throws its error and the socket is destroyed', async () => {
    const boom = new Error('listener failed');
    let thrown: unknown;
    const { port } = await startStreamServer(async (stream) => {
      stream.onUpgraded(() => {
        throw boom;
      });
      try {
        stream.upgrade();
      } catch (err) {
        thrown = err;
      }
    });
    const c = await rawClient(port);
    c.socket.write(UPGRADE);
    await within(c.closed, 3000, 'the connection closed');
    expect(thrown).toBe(boom);
    expect(c.received.length).toBe(0);
  });

  it('onUpgraded takes a function', async () => {
    let thrown: unknown;
    const { port } = await startStreamServer(async (stream) => {
      try {
        stream.onUpgraded('not a function' as unknown as () => void);
      } catch (err) {
        thrown = err;
      }
      stream.setHeader('Content-Length', '0');
    });
    expect((await expectServing(port)).status).toBe(200);
    expect(thrown).toBeInstanceOf(ArgumentError);
  });
});
