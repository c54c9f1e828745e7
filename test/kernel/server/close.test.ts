/**
 * The server's close() and forceClose() with connections that would otherwise outlive them:
 * upgraded sockets (taken by stream.upgrade(), counted until they close), streamed response
 * bodies that never end, handlers that never return; `closeGracePeriod` (validated like every
 * server option) bounds a graceful close, and a close with nothing long-lived stays prompt.
 */
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { ArgumentError, Response, Server, type StreamHandler } from '../../../kernel/index.js';
import { Endless } from '../../helpers/bodies.js';
import { rawClient, startServer, startStreamServer, within, type RawClient } from '../../helpers/server.js';

const GRACE = 250;

/** Resolves once the bytes `c` received contain `text`. */
async function until(c: RawClient, text: string, what: string): Promise<void> {
  const has = (): boolean => c.received.toString('latin1').includes(text);
  await within(
    (async () => {
      while (!has()) await once(c.socket, 'data');
    })(),
    3000,
    what,
  );
}

/** A stream handler that upgrades to a raw echo protocol; `upgraded` resolves once it did. */
function rawEcho(): { handler: StreamHandler; upgraded: Promise<void> } {
  let done!: () => void;
  const upgraded = new Promise<void>((r) => (done = r));
  const handler: StreamHandler = (stream) => {
    const { socket } = stream.upgrade();
    socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: raw\r\n\r\n');
    socket.on('data', (d: Buffer) => socket.write(d));
    socket.resume();
    done();
  };
  return { handler, upgraded };
}

const UPGRADE = 'GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: raw\r\n\r\n';

describe('closeGracePeriod', () => {
  it('is validated like every server option, and unknown keys are still refused', () => {
    const handler = (): Response => new Response(200);
    for (const bad of [-1, Number.NaN, Infinity, '10', null]) {
      expect(() => new Server({ handler, closeGracePeriod: bad as number })).toThrow(ArgumentError);
    }
    expect(() => new Server({ handler, closeGracePeriod: -1 })).toThrow(/closeGracePeriod must be a number of milliseconds >= 0/);
    expect(() => new Server({ handler, closeGrace: 5 } as never)).toThrow(/unknown server option "closeGrace"/);
    expect(new Server({ handler, closeGracePeriod: 0 }).opts.closeGracePeriod).toBe(0);
    expect(new Server({ handler }).opts.closeGracePeriod).toBe(10_000);
  });
});

describe('close() and forceClose() with long-lived connections', () => {
  it('close() with nothing long-lived is prompt: idle keep-alive connections close at once', async () => {
    const { server, port } = await startServer(() => new Response(200, 'ok'), { closeGracePeriod: 60_000 });
    const c = await rawClient(port);
    await c.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    expect((await c.response()).text).toBe('ok');
    await within(server.close(), 2000, 'close() without waiting for the grace period');
    await c.untilClosed(2000);
  });

  it('an upgraded socket stays counted: forceClose() drops it at once', async () => {
    const echo = rawEcho();
    const { server, port } = await startStreamServer(echo.handler);
    const c = await rawClient(port);
    await c.write(UPGRADE);
    await within(echo.upgraded, 3000, 'the upgrade');
    expect(server.connectionCount).toBe(1);
    await within(server.forceClose(), 3000, 'forceClose');
    await c.untilClosed(2000);
    expect(server.connectionCount).toBe(0);
  });

  it('close() lets an upgraded socket go on for the grace period, then drops it (no owner said how to end it)', async () => {
    const echo = rawEcho();
    const { server, port } = await startStreamServer(echo.handler, { closeGracePeriod: GRACE });
    const c = await rawClient(port);
    await c.write(UPGRADE);
    await within(echo.upgraded, 3000, 'the upgrade');
    await until(c, '\r\n\r\n', 'the 101');
    const started = performance.now();
    const closing = server.close();
    // Still served during the grace period.
    await c.write('still here');
    await until(c, 'still here', 'the echo during the grace period');
    await within(closing, 3000, 'close()');
    expect(performance.now() - started).toBeGreaterThanOrEqual(GRACE - 1);
    await c.untilClosed(2000);
  });

  it('close() ends a streamed response body that never ends, cleanly, once the grace period is over', async () => {
    const { server, port } = await startServer(() => new Response(200, new Endless('first;')), { closeGracePeriod: GRACE });
    const c = await rawClient(port);
    await c.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await until(c, 'first;', 'the first chunk');
    const started = performance.now();
    const closing = server.close();
    const got = (await c.untilClosed(3000)).toString('latin1');
    expect(performance.now() - started).toBeGreaterThanOrEqual(GRACE - 1);
    // The chunked body ended with its last chunk: a clean end, not a cut.
    expect(got.endsWith('first;\r\n0\r\n\r\n')).toBe(true);
    await within(closing, 3000, 'close()');
  });

  it('close() drops a request whose handler never returns once the grace period is over', async () => {
    let entered!: () => void;
    const inHandler = new Promise<void>((r) => (entered = r));
    const { server, port } = await startServer(() => (entered(), new Promise<Response>(() => {})), { closeGracePeriod: GRACE });
    const c = await rawClient(port);
    await c.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await within(inHandler, 3000, 'the handler');
    const started = performance.now();
    const closing = server.close();
    const bytes = await c.untilClosed(3000);
    expect(bytes.length).toBe(0);
    await within(closing, 3000, 'close()');
    expect(performance.now() - started).toBeGreaterThanOrEqual(GRACE - 1);
  });
});
