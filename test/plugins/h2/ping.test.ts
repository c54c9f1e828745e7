/**
 * The client's idle ping: with the h2 plugin's `pingIntervalMs`/`pingTimeoutMs`, an idle
 * session sends PING frames (the server sees them) and stays pooled while they are answered;
 * a peer that stops answering (a relay that stops forwarding, like a NAT that dropped the
 * mapping) is found by the ping, and the session leaves the pool: the next call connects anew.
 */
import http2 from 'node:http2';
import { describe, expect, it } from 'vitest';
import { ArgumentError, Client, createKernel } from '../../../kernel/index.js';
import { h2 } from '../../../plugins/h2/index.js';
import { h2c } from '../../../plugins/h2c/index.js';
import { onCleanup, relay, waitFor } from '../../helpers/h2.js';

/** A bare node:http2 h2c server counting the pings it gets. */
async function pingCountingServer(): Promise<{ port: number; pings: () => number }> {
  const server = http2.createServer();
  const sessions: http2.ServerHttp2Session[] = [];
  let pings = 0;
  server.on('session', (s) => {
    sessions.push(s);
    s.on('ping', () => pings++);
    s.on('error', () => undefined);
  });
  server.on('stream', (st) => {
    st.respond({ ':status': 200 });
    st.end('ok');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  onCleanup(
    () =>
      new Promise<void>((r) => {
        for (const s of sessions) s.destroy();
        server.close(() => r());
      }),
  );
  return { port: (server.address() as { port: number }).port, pings: () => pings };
}

describe('idle ping', () => {
  it('pings an idle session, keeps it while answered, and drops it from the pool when the peer stops answering', async () => {
    const kernel = await createKernel().register(h2, { pingIntervalMs: 30, pingTimeoutMs: 150 }).register(h2c).ready();
    const srv = await pingCountingServer();
    const r = await relay(srv.port);
    const c = new Client({ kernel, http2PriorKnowledge: true });
    onCleanup(() => c.close());
    const url = `http://127.0.0.1:${r.port}/`;
    expect(Buffer.from((await c.get(url)).body as Uint8Array).toString()).toBe('ok');
    expect(c.transport.connectionCount()).toBe(1);
    // Idle: pings go out and are answered; the session stays pooled and is reused.
    await waitFor(() => srv.pings() >= 2, 3000, 'two pings at the server');
    expect(c.transport.connectionCount()).toBe(1);
    await c.get(url);
    expect(r.accepted()).toBe(1);
    // The path goes dark: the next ping goes unanswered and the session leaves the pool.
    r.freeze();
    await waitFor(() => c.transport.connectionCount() === 0, 3000, 'the unanswered session to leave the pool');
    // The next call connects anew (a fresh relay connection).
    expect(Buffer.from((await c.get(url)).body as Uint8Array).toString()).toBe('ok');
    expect(r.accepted()).toBe(2);
  });

  it('rejects ping options that are not positive numbers (the kernel fails to boot, naming the option)', async () => {
    for (const bad of [{ pingIntervalMs: 0 }, { pingTimeoutMs: -1 }, { pingTimeoutMs: Number.NaN }]) {
      const err = await createKernel()
        .register(h2, bad)
        .ready()
        .then(
          () => null,
          (e: unknown) => e,
        );
      expect((err as { cause?: unknown }).cause).toBeInstanceOf(ArgumentError);
      expect(String((err as { cause: Error }).cause.message)).toMatch(/ping(Interval|Timeout)Ms must be a positive number/);
    }
  });
});
