/**
 * The client's default responseHeaderTimeout (300 s): a server that reads the request and never
 * answers, or answers 1xx forever, cannot hold a call without limit when the caller set no
 * timeout. Real sockets on loopback; the fake clock stands in for five minutes.
 */
import type net from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Headers, Request, TimeoutError, upgradeRequest } from '../../../kernel/index.js';
import { newClient, rawServer, readRequests, waitFor } from '../../helpers/client.js';

/** A few turns of the event loop, so that what a timer started gets to happen. */
async function turns(n = 20): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise<void>((r) => setImmediate(r));
}

/** A call's outcome, observable without awaiting it. */
function watch(p: Promise<unknown>): { settled: () => boolean; error: () => unknown } {
  let done = false;
  let err: unknown = null;
  p.then(
    () => (done = true),
    (e: unknown) => {
      done = true;
      err = e;
    },
  );
  return { settled: () => done, error: () => err };
}

describe('the default responseHeaderTimeout', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a server that reads the request and never answers fails the call after 300 s, not before', async () => {
    let got = 0;
    const srv = await rawServer((sock) => readRequests(sock, () => void got++));
    const c = newClient();
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
    const call = watch(c.get(`${srv.origin}/`));
    await waitFor(() => got === 1, 3000, 'the request at the server');
    await turns();
    vi.advanceTimersByTime(299_000);
    await turns();
    expect(call.settled()).toBe(false);
    vi.advanceTimersByTime(1_100);
    await waitFor(call.settled, 3000, 'the call to fail');
    const err = call.error() as TimeoutError;
    expect(err).toBeInstanceOf(TimeoutError);
    expect(err.timeoutMs).toBe(300_000);
    expect(err.message).toContain('responseHeaderTimeout');
  });

  it('an endless stream of 102 Processing does not restart it', async () => {
    let sock: net.Socket | null = null;
    const srv = await rawServer((s) => readRequests(s, () => (sock = s)));
    const c = newClient();
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
    const call = watch(c.get(`${srv.origin}/`));
    await waitFor(() => sock !== null, 3000, 'the request at the server');
    for (let i = 0; i < 6; i++) {
      sock!.write('HTTP/1.1 102 Processing\r\n\r\n');
      await turns();
      vi.advanceTimersByTime(49_000);
      await turns();
    }
    expect(call.settled()).toBe(false);
    vi.advanceTimersByTime(7_000);
    await waitFor(call.settled, 3000, 'the call to fail');
    expect(call.error()).toBeInstanceOf(TimeoutError);
  });

  it('a responseHeaderTimeout of 0 turns it off', async () => {
    let got = 0;
    const srv = await rawServer((sock) => readRequests(sock, () => void got++));
    const c = newClient({ responseHeaderTimeout: 0 });
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
    const call = watch(c.get(`${srv.origin}/`));
    await waitFor(() => got === 1, 3000, 'the request at the server');
    vi.advanceTimersByTime(3_600_000);
    await turns();
    expect(call.settled()).toBe(false);
    vi.useRealTimers();
    srv.sockets[0]!.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
    await waitFor(call.settled, 3000, 'the response');
    expect(call.error()).toBe(null);
  });

  it('an upgrade handshake (upgradeRequest, under WebSockets.open) whose answer never comes fails after 300 s', async () => {
    let got = 0;
    const srv = await rawServer((sock) => readRequests(sock, () => void got++));
    const req = new Request('GET', '/up', {
      headers: new Headers([
        ['Connection', 'Upgrade'],
        ['Upgrade', 'echo'],
      ]),
      host: `127.0.0.1:${srv.port}`,
    });
    req.url = `${srv.origin}/up`;
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
    const call = watch(upgradeRequest(req));
    await waitFor(() => got === 1, 3000, 'the request at the server');
    await turns();
    vi.advanceTimersByTime(299_000);
    await turns();
    expect(call.settled()).toBe(false);
    vi.advanceTimersByTime(1_100);
    await waitFor(call.settled, 3000, 'the handshake to fail');
    expect(call.error()).toBeInstanceOf(TimeoutError);
  });
});
