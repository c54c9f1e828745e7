/**
 * The retries plugin against real loopback peers: a raw TCP server that resets or closes the
 * first N connections, project servers answering 503 (with and without Retry-After), the
 * method and body rules, retryIf, trace events, the RetryBucket under 100 concurrent failing
 * requests, the deadline cap, and isRecoverable / Retry-After parsing as table tests.
 *
 * No sleeps: backoff is kept tiny with `retryDelayScale: 1` (a full-jitter wait of at most
 * 2^(attempt-1) ms), and Retry-After tests use 0 or a deadline shorter than the header.
 */
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import {
  ArgumentError,
  Client,
  ConnectError,
  DNSError,
  ParseError,
  Response,
  StatusError,
  TimeoutError,
  createKernel,
  type ClientEvent,
  type ClientOptions,
  type RetryEvent,
  type RetrySkippedEvent,
} from '../../../kernel/index.js';
import { RequestRetryError, RetryBucket, isRecoverable, parseRetryAfter, presets, retries, type RetryOptions } from '../../../plugins/index.js';
import { onCleanup, startServer } from '../../helpers/server.js';

async function makeClient(options: Omit<ClientOptions, 'kernel'> = {}, pluginOptions: RetryOptions = {}): Promise<Client> {
  const kernel = createKernel().register(retries, pluginOptions);
  await kernel.ready();
  const client = new Client({ retryDelayScale: 1, ...options, kernel });
  onCleanup(async () => {
    client.close();
    await kernel.close();
  });
  return client;
}

/**
 * A raw HTTP/1.1 server: the first `failures` connections are killed when their first bytes
 * arrive (`reset`: TCP RST; otherwise a FIN), later ones get `200 ok`. `attempts` counts
 * connections that sent bytes.
 */
async function flakyServer(failures: number, mode: 'reset' | 'close' = 'reset'): Promise<{ url: string; attempts: () => number }> {
  let attempts = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((sock) => {
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
    sock.on('error', () => undefined);
    let buf = '';
    sock.on('data', (d) => {
      if (buf === '') attempts++;
      buf += d.toString('latin1');
      if (attempts <= failures) {
        if (mode === 'reset') sock.resetAndDestroy();
        else sock.destroy();
        return;
      }
      if (buf.includes('\r\n\r\n')) {
        buf = '';
        sock.end('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onCleanup(
    () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  );
  const port = (server.address() as net.AddressInfo).port;
  return { url: `http://127.0.0.1:${port}/`, attempts: () => attempts };
}

/** A project server answering `statuses[i]` to the i-th request (the last one repeats). */
async function statusServer(statuses: number[], headers: Record<string, string> = {}): Promise<{ url: string; attempts: () => number; methods: string[] }> {
  const methods: string[] = [];
  const { port } = await startServer((req) => {
    methods.push(req.method);
    const status = statuses[Math.min(methods.length - 1, statuses.length - 1)]!;
    return new Response(status, status === 200 ? 'ok' : 'busy', { headers: status === 200 ? {} : headers });
  });
  return { url: `http://127.0.0.1:${port}/`, attempts: () => methods.length, methods };
}

function traced(): { events: ClientEvent[]; trace: (e: ClientEvent) => void } {
  const events: ClientEvent[] = [];
  return { events, trace: (e) => events.push(e) };
}

describe('retries: request-path failures', () => {
  it.each([0, 1, 3])('a server resetting the first %i connections: GET succeeds after N+1 attempts', async (n) => {
    const s = await flakyServer(n);
    const client = await makeClient();
    const res = await client.get(s.url);
    expect(res.status).toBe(200);
    expect(res.text()).toBe('ok');
    expect(s.attempts()).toBe(n + 1);
  });

  it('a connection closed before any response byte (FIN) is retried too', async () => {
    const s = await flakyServer(2, 'close');
    const client = await makeClient();
    const res = await client.get(s.url);
    expect(res.status).toBe(200);
    expect(s.attempts()).toBe(3);
  });

  it('more failures than retries: the last error is thrown after retries+1 attempts', async () => {
    const s = await flakyServer(100);
    const client = await makeClient({ retries: 2 });
    await expect(client.get(s.url)).rejects.toSatisfy((e) => isRecoverable(e));
    expect(s.attempts()).toBe(3);
  });

  it('POST is not retried by default, and is with retryNonIdempotent', async () => {
    const s = await flakyServer(1);
    const client = await makeClient();
    const { events, trace } = traced();
    await expect(client.post(s.url, { body: 'x', trace })).rejects.toBeInstanceOf(Error);
    expect(s.attempts()).toBe(1);
    const skipped = events.filter((e) => e.type === 'RetrySkippedEvent') as RetrySkippedEvent[];
    expect(skipped).toHaveLength(1);
    expect(skipped[0]!.reason).toMatch(/not idempotent/);

    const s2 = await flakyServer(1);
    const res = await client.post(s2.url, { body: 'x', retryNonIdempotent: true });
    expect(res.status).toBe(200);
    expect(s2.attempts()).toBe(2);
  });

  it('a streamed body is not retried', async () => {
    const s = await flakyServer(1);
    const client = await makeClient();
    async function* gen(): AsyncGenerator<Uint8Array> {
      yield Buffer.from('abc');
    }
    const { events, trace } = traced();
    await expect(client.put(s.url, { body: gen(), trace })).rejects.toBeInstanceOf(Error);
    expect(s.attempts()).toBe(1);
    expect((events.find((e) => e.type === 'RetrySkippedEvent') as RetrySkippedEvent).reason).toMatch(/not replayable/);
  });

  it('retry: false per call disables retries (and emits nothing)', async () => {
    const s = await flakyServer(1);
    const client = await makeClient();
    const { events, trace } = traced();
    await expect(client.get(s.url, { retry: false, trace })).rejects.toBeInstanceOf(Error);
    expect(s.attempts()).toBe(1);
    expect(events.some((e) => e.type === 'RetryEvent' || e.type === 'RetrySkippedEvent')).toBe(false);
  });

  it('a refused connection is retried (ConnectError ECONNREFUSED), up to retries', async () => {
    const probe = net.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as net.AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const client = await makeClient({ retries: 2 });
    const { events, trace } = traced();
    const err = await client.get(`http://127.0.0.1:${port}/`, { trace }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect(events.filter((e) => e.type === 'RetryEvent')).toHaveLength(2);
    expect((events.find((e) => e.type === 'RetrySkippedEvent') as RetrySkippedEvent).reason).toMatch(/exhausted/);
  });
});

describe('retries: responses', () => {
  it('503 with Retry-After: 0 is retried and the final 200 returned; RetryEvents in the trace', async () => {
    const s = await statusServer([503, 503, 200], { 'Retry-After': '0' });
    const client = await makeClient({ retryDelayScale: 10_000 }); // Retry-After wins over backoff
    const { events, trace } = traced();
    const res = await client.get(s.url, { trace });
    expect(res.status).toBe(200);
    expect(res.text()).toBe('ok');
    expect(s.attempts()).toBe(3);
    const retryEvents = events.filter((e) => e.type === 'RetryEvent') as RetryEvent[];
    expect(retryEvents.map((e) => [e.attempt, e.status, e.delayMs])).toEqual([
      [1, 503, 0],
      [2, 503, 0],
    ]);
  });

  it.each([408, 429, 500, 502, 503, 504])('%i is retried', async (status) => {
    const s = await statusServer([status, 200]);
    const client = await makeClient();
    expect((await client.get(s.url)).status).toBe(200);
    expect(s.attempts()).toBe(2);
  });

  it.each([400, 404, 501])('%i is not retried', async (status) => {
    const s = await statusServer([status, 200]);
    const client = await makeClient();
    await expect(client.get(s.url)).rejects.toBeInstanceOf(StatusError);
    expect(s.attempts()).toBe(1);
  });

  it('503 every time: after `retries` retries the 503 is returned (StatusError); retries+1 attempts', async () => {
    for (const n of [0, 2, 4]) {
      const s = await statusServer([503]);
      const client = await makeClient({ retries: n });
      const err = await client.get(s.url).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StatusError);
      expect((err as StatusError).status).toBe(503);
      expect(s.attempts()).toBe(n + 1);
    }
    const s = await statusServer([503]);
    const client = await makeClient();
    const res = await client.get(s.url, { statusException: false });
    expect(res.status).toBe(503);
    expect(res.text()).toBe('busy');
    expect(s.attempts()).toBe(5); // default retries: 4
  });

  it('deadline cap: requestTimeout shorter than Retry-After → no retry, RetrySkippedEvent', async () => {
    const s = await statusServer([503, 200], { 'Retry-After': '30' });
    const client = await makeClient();
    const { events, trace } = traced();
    const res = await client.get(s.url, { requestTimeout: 2000, statusException: false, trace });
    expect(res.status).toBe(503);
    expect(s.attempts()).toBe(1);
    const skipped = events.filter((e) => e.type === 'RetrySkippedEvent') as RetrySkippedEvent[];
    expect(skipped).toHaveLength(1);
    expect(skipped[0]!.reason).toMatch(/deadline/);
    expect(skipped[0]!.status).toBe(503);
  });

  it('respectRetryAfter: false ignores the header (backoff instead)', async () => {
    const s = await statusServer([503, 200], { 'Retry-After': '30' });
    const client = await makeClient();
    const res = await client.get(s.url, { requestTimeout: 5000, respectRetryAfter: false });
    expect(res.status).toBe(200);
    expect(s.attempts()).toBe(2);
  });

  it('Retry-After beyond retryMaxDelay is capped at it', async () => {
    const s = await statusServer([503, 200], { 'Retry-After': '3600' });
    const client = await makeClient({ retryMaxDelay: 1 });
    const { events, trace } = traced();
    expect((await client.get(s.url, { trace })).status).toBe(200);
    expect((events.find((e) => e.type === 'RetryEvent') as RetryEvent).delayMs).toBe(1);
  });
});

describe('retries: retryIf', () => {
  it('true retries what the built-in rules would not (a 404, a POST)', async () => {
    const s = await statusServer([404, 200]);
    const client = await makeClient();
    const seen: unknown[] = [];
    const res = await client.post(s.url, {
      body: 'x',
      retryIf: (attempt, err, _req, resp) => {
        seen.push([attempt, err, resp?.status]);
        return resp?.status === 404 ? true : undefined;
      },
    });
    expect(res.status).toBe(200);
    expect(s.methods).toEqual(['POST', 'POST']);
    expect(seen).toEqual([
      [1, undefined, 404],
      [2, undefined, 200],
    ]);
  });

  it('false stops a retry the built-in rules would make', async () => {
    const s = await statusServer([503, 200]);
    const client = await makeClient();
    const { events, trace } = traced();
    await expect(client.get(s.url, { retryIf: () => false, trace })).rejects.toBeInstanceOf(StatusError);
    expect(s.attempts()).toBe(1);
    expect((events.find((e) => e.type === 'RetrySkippedEvent') as RetrySkippedEvent).reason).toMatch(/retryIf/);
  });

  it('undefined defers to the built-in rules; request-path failures arrive as RequestRetryError', async () => {
    const s = await flakyServer(1);
    const client = await makeClient();
    const errs: unknown[] = [];
    const res = await client.get(s.url, {
      retryIf: (_a, err) => {
        errs.push(err);
        return undefined;
      },
    });
    expect(res.status).toBe(200);
    expect(s.attempts()).toBe(2);
    expect(errs).toHaveLength(2);
    expect(errs[0]).toBeInstanceOf(RequestRetryError);
    expect((errs[0] as RequestRetryError).err).toBeInstanceOf(Error);
    expect(isRecoverable((errs[0] as RequestRetryError).err)).toBe(true);
    expect(errs[1]).toBeUndefined();
  });

  it('true does not replay a streamed body, nor pass the retries limit', async () => {
    const s = await statusServer([503]);
    const client = await makeClient({ retries: 1 });
    await expect(client.get(s.url, { retryIf: () => true })).rejects.toBeInstanceOf(StatusError);
    expect(s.attempts()).toBe(2);
    const s2 = await statusServer([503]);
    async function* gen(): AsyncGenerator<Uint8Array> {
      yield Buffer.from('abc');
    }
    await expect(client.put(s2.url, { body: gen(), retryIf: () => true })).rejects.toBeInstanceOf(StatusError);
    expect(s2.attempts()).toBe(1);
  });
});

describe('retries: RetryBucket', () => {
  it('acquire/release per host', () => {
    const b = new RetryBucket({ capacity: 25 });
    expect(b.acquire('a:1')).toBe(true);
    expect(b.acquire('a:1')).toBe(true);
    expect(b.acquire('a:1')).toBe(false);
    expect(b.available('a:1')).toBe(5);
    expect(b.acquire('a:1', 5)).toBe(true);
    expect(b.acquire('b:1')).toBe(true); // another partition
    b.release('a:1', 100);
    expect(b.available('a:1')).toBe(25); // never above capacity
    expect(new RetryBucket().capacity).toBe(500);
    expect(() => new RetryBucket({ capacity: -1 })).toThrow(ArgumentError);
  });

  it('bounds retries under 100 concurrent failing requests (shared by two clients)', async () => {
    const s = await flakyServer(Infinity);
    const bucket = new RetryBucket({ capacity: 50 });
    const a = await makeClient({ retryBucket: bucket });
    const b = await makeClient({ retryBucket: bucket });
    const { events, trace } = traced();
    const results = await Promise.allSettled(Array.from({ length: 100 }, (_, i) => (i % 2 === 0 ? a : b).get(s.url, { trace })));
    expect(results.every((r) => r.status === 'rejected')).toBe(true);
    expect(s.attempts()).toBeLessThanOrEqual(100 + 50 / 10);
    expect(s.attempts()).toBeGreaterThan(100);
    expect(events.filter((e) => e.type === 'RetryEvent')).toHaveLength(5);
    expect((events.filter((e) => e.type === 'RetrySkippedEvent') as RetrySkippedEvent[]).some((e) => /bucket/.test(e.reason))).toBe(true);
  });

  it('a success refunds the tokens the call took; a retryable response costs 5', async () => {
    const s = await statusServer([503, 503, 200]);
    const bucket = new RetryBucket({ capacity: 100 });
    const client = await makeClient({ retryBucket: bucket });
    const host = new URL(s.url).host;
    const { events, trace } = traced();
    await client.get(s.url, {
      trace: (e) => {
        if (e.type === 'RetryEvent') expect(bucket.available(host)).toBeLessThan(100);
        trace(e);
      },
    });
    expect(events.filter((e) => e.type === 'RetryEvent')).toHaveLength(2);
    expect(bucket.available(host)).toBe(100);

    const f = await flakyServer(Infinity);
    await expect(client.get(f.url, { retries: 2 })).rejects.toBeInstanceOf(Error);
    expect(bucket.available(new URL(f.url).host)).toBe(80); // 2 retries after failures, no refund

    const s2 = await statusServer([503]);
    await client.get(s2.url, { retries: 3, statusException: false });
    expect(bucket.available(new URL(s2.url).host)).toBe(85); // 3 × 5, no refund
  });
});

describe('retries: isRecoverable and Retry-After', () => {
  const errno = (code: string): Error => Object.assign(new Error(code), { code });
  it.each<[string, unknown, boolean]>([
    ['ECONNRESET socket error', errno('ECONNRESET'), true],
    ['EPIPE socket error', errno('EPIPE'), true],
    ['ConnectError ECONNREFUSED', new ConnectError('127.0.0.1:1', errno('ECONNREFUSED')), true],
    ['ConnectError EHOSTUNREACH', new ConnectError('10.0.0.1:1', errno('EHOSTUNREACH')), false],
    ['DNSError EAI_AGAIN', new DNSError('x.test', errno('EAI_AGAIN')), true],
    ['DNSError ENOTFOUND', new DNSError('x.test', errno('ENOTFOUND')), false],
    ['ParseError before any byte', new ParseError('connection closed before any response byte arrived'), true],
    ['ParseError inside the head', new ParseError('connection closed inside the response head'), false],
    ['TimeoutError', new TimeoutError('request', 10), false],
    ['RequestRetryError of a reset', new RequestRetryError(errno('ECONNRESET')), true],
    ['RequestRetryError of a timeout', new RequestRetryError(new TimeoutError('connect')), false],
    ['a plain Error', new Error('x'), false],
    ['a string', 'ECONNRESET', false],
    ['null', null, false],
    ...[408, 429, 500, 502, 503, 504].map((s): [string, unknown, boolean] => [`status ${s}`, s, true]),
    ...[200, 301, 400, 404, 501, 505].map((s): [string, unknown, boolean] => [`status ${s}`, s, false]),
    ['Response 503', new Response(503), true],
    ['Response 200', new Response(200), false],
  ])('%s → %s', (_name, input, expected) => {
    expect(isRecoverable(input)).toBe(expected);
  });

  const now = Date.parse('Wed, 21 Oct 2026 07:28:00 GMT');
  it.each<[string | undefined, number | undefined]>([
    ['0', 0],
    ['120', 120_000],
    [' 5 ', 5000],
    ['Wed, 21 Oct 2026 07:28:30 GMT', 30_000],
    ['Wednesday, 21-Oct-26 07:29:00 GMT', 60_000],
    ['Wed Oct 21 07:28:10 2026', 10_000], // asctime: no zone, UTC by definition
    ['Tue, 20 Oct 2026 07:28:00 GMT', 0], // past
    ['-1', undefined],
    ['1.5', undefined],
    ['soon', undefined],
    [undefined, undefined],
  ])('Retry-After %j → %j ms', (value, expected) => {
    expect(parseRetryAfter(value, now)).toBe(expected);
  });

  it('an HTTP-date Retry-After in the past retries at once', async () => {
    const s = await statusServer([503, 200], { 'Retry-After': new Date(Date.now() - 60_000).toUTCString() });
    const client = await makeClient({ retryDelayScale: 10_000 });
    const { events, trace } = traced();
    expect((await client.get(s.url, { trace })).status).toBe(200);
    expect((events.find((e) => e.type === 'RetryEvent') as RetryEvent).delayMs).toBe(0);
  });
});

describe('retries: registration', () => {
  it('is in presets.defaults; bad options are ArgumentErrors', async () => {
    expect(presets.defaults).toContain(retries);
    const k = createKernel().register(retries, { retries: -1 });
    await expect(k.ready()).rejects.toBeInstanceOf(Error);
    const k2 = createKernel().register(retries, { retryBucket: {} as RetryBucket });
    await expect(k2.ready()).rejects.toThrow(/retryBucket/);
  });

  it('plugin defaults apply under client options', async () => {
    const s = await statusServer([503]);
    const client = await makeClient({}, { retries: 1 });
    await expect(client.get(s.url)).rejects.toBeInstanceOf(StatusError);
    expect(s.attempts()).toBe(2);
  });
});

describe('a server that hangs', () => {
  /** Accepts, never answers the first `hangs` requests, then answers 200. */
  async function hangingServer(hangs: number): Promise<{ url: string; attempts: () => number }> {
    let attempts = 0;
    const sockets = new Set<net.Socket>();
    const server = net.createServer((sock) => {
      sockets.add(sock);
      sock.on('close', () => sockets.delete(sock));
      sock.on('error', () => undefined);
      let buf = '';
      sock.on('data', (d) => {
        buf += d.toString('latin1');
        if (!buf.includes('\r\n\r\n')) return;
        buf = '';
        attempts++;
        if (attempts > hangs) sock.end('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    onCleanup(
      () =>
        new Promise<void>((resolve) => {
          for (const s of sockets) s.destroy();
          server.close(() => resolve());
        }),
    );
    return { url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/`, attempts: () => attempts };
  }

  it('a timeout is not recoverable: one attempt, TimeoutError', async () => {
    const s = await hangingServer(1);
    const client = await makeClient({}, { retryDelayScale: 1 });
    const err = await client.get(s.url, { responseHeaderTimeout: 100 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TimeoutError);
    expect(s.attempts()).toBe(1);
  });

  it('retryIf can retry a timeout: the second attempt succeeds', async () => {
    const s = await hangingServer(1);
    const client = await makeClient({}, { retryDelayScale: 1 });
    const seen: unknown[] = [];
    const res = await client.get(s.url, {
      responseHeaderTimeout: 100,
      retryIf: (_attempt, err) => {
        seen.push(err);
        return err instanceof RequestRetryError && err.err instanceof TimeoutError ? true : undefined;
      },
    });
    expect(res.status).toBe(200);
    expect(s.attempts()).toBe(2);
    expect(seen[0]).toBeInstanceOf(RequestRetryError);
  });
});
