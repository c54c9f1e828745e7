/**
 * The diagnostics_channel channels: what each publishes and in which order, subscribed by name
 * with `diagnostics_channel.subscribe` as a user would, over real loopback connections:
 * HTTP/1.1, h2c and TLS h2, client and server, retries and redirects through their plugins,
 * the TracingChannels' event order (and their error path), and that nothing is made or
 * published for a channel nobody subscribes to.
 */
import diagnosticsChannel from 'node:diagnostics_channel';
import { afterEach, describe, expect, it } from 'vitest';
import { channelNames, channels, Client, createKernel, Response, type Request } from '../../kernel/index.js';
import { observedWire } from '../../kernel/server/observed-wire.js';
import { redirects, retries } from '../../plugins/index.js';
import { closeAfter, closeKernelAfter } from '../helpers/cleanup.js';
import { text } from '../helpers/client.js';
import { startServer as startH1, startStreamServer as startH1Stream } from '../helpers/server.js';
import { h2Client, run, startServer as startH2, startStreamServer as startH2Stream } from '../helpers/h2.js';

/** One message as a subscriber got it: the channel's short name and the message. */
interface Seen {
  name: string;
  msg: Record<string, unknown>;
}

const unsubscribes: (() => void)[] = [];

afterEach(() => {
  for (const u of unsubscribes.splice(0)) u();
});

/** Subscribes to each plain channel in `names` (full channel names), recording into `out` with the prefix `switchyard:` dropped. */
function record(names: string[], out: Seen[]): void {
  for (const name of names) {
    const fn = (msg: unknown): void => {
      out.push({ name: name.slice('switchyard:'.length), msg: msg as Record<string, unknown> });
    };
    diagnosticsChannel.subscribe(name, fn);
    unsubscribes.push(() => diagnosticsChannel.unsubscribe(name, fn));
  }
}

/** Subscribes to the TracingChannel `name`, recording `tracing:<event>` into `out`. */
function recordTrace(name: string, out: Seen[]): void {
  const tc = diagnosticsChannel.tracingChannel(name);
  const push = (ev: string) => (ctx: object) => void out.push({ name: `${name.slice('switchyard:'.length)}:${ev}`, msg: { ...(ctx as Record<string, unknown>) } });
  const handlers = { start: push('start'), end: push('end'), asyncStart: push('asyncStart'), asyncEnd: push('asyncEnd'), error: push('error') };
  tc.subscribe(handlers);
  unsubscribes.push(() => tc.unsubscribe(handlers));
}

const SERVER_PLAIN = [
  channelNames.serverConnection,
  channelNames.serverRequestStart,
  channelNames.serverResponseHeaders,
  channelNames.serverResponseFinish,
  channelNames.serverError,
  channelNames.serverUpgrade,
];
const CLIENT_PLAIN = [
  channelNames.clientRequestCreate,
  channelNames.clientRequestHeaders,
  channelNames.clientResponseHeaders,
  channelNames.clientResponseEnd,
  channelNames.clientRequestError,
  channelNames.clientRetry,
  channelNames.clientRedirect,
  channelNames.clientConnectionOpen,
  channelNames.clientConnectionReuse,
];

/** The messages of a server's exchange, in order (connection first when it was new). */
function names(seen: Seen[], prefix: string): string[] {
  return seen.filter((s) => s.name.startsWith(prefix)).map((s) => s.name);
}

/** Waits until `cond()` holds, checking after each macrotask (bounded). */
async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    if (cond()) return;
    await new Promise<void>((r) => setImmediate(r));
  }
  throw new Error(`timed out waiting for ${what}`);
}

function find(seen: Seen[], name: string): Record<string, unknown> {
  const s = seen.find((x) => x.name === name);
  if (s === undefined) throw new Error(`no ${name} message among ${seen.map((x) => x.name).join(', ')}`);
  return s.msg;
}

describe('the channels', () => {
  it('are created once, under their documented names, and frozen', () => {
    expect(Object.isFrozen(channels)).toBe(true);
    expect(channels.serverRequestStart).toBe(diagnosticsChannel.channel('switchyard:server:request:start'));
    expect(channels.clientRetry).toBe(diagnosticsChannel.channel('switchyard:client:retry'));
    expect(channels.clientRequest.start).toBe(diagnosticsChannel.channel('tracing:switchyard:client:request:start'));
    expect(channels.serverRequest.asyncEnd).toBe(diagnosticsChannel.channel('tracing:switchyard:server:request:asyncEnd'));
    for (const [key, name] of Object.entries(channelNames)) expect(name.startsWith('switchyard:'), key).toBe(true);
  });
});

describe('server channels', () => {
  it('HTTP/1.1: connection, request:start, the trace, response:headers and response:finish, in order, with their fields', async () => {
    const seen: Seen[] = [];
    record(SERVER_PLAIN, seen);
    recordTrace(channelNames.serverRequest, seen);
    const { server, port } = await startH1(() => new Response(200, 'hello', { headers: { 'X-A': '1' } }));
    const c = closeAfter(new Client());
    const res = await c.get(`http://127.0.0.1:${port}/path?q=1`);
    expect(res.status).toBe(200);
    await until(() => seen.some((s) => s.name === 'server:request:asyncEnd'), 'asyncEnd');
    expect(names(seen, 'server')).toEqual([
      'server:connection',
      'server:request:start',
      'server:request:start', // the trace's start, inside which the handler runs
      'server:response:headers',
      'server:response:finish',
      'server:request:end',
      'server:request:asyncStart',
      'server:request:asyncEnd',
    ]);
    const conn = find(seen, 'server:connection');
    expect(conn.server).toBe(server.info);
    expect(typeof (conn.socket as { remotePort: number }).remotePort).toBe('number');
    const start = seen.find((s) => s.name === 'server:request:start')!.msg;
    expect((start.request as Request).target).toBe('/path?q=1');
    expect(start.server).toBe(server.info);
    const head = find(seen, 'server:response:headers');
    expect(head.request).toBe(start.request);
    expect((head.response as Response).status).toBe(200);
    expect((head.response as Response).headers.get('X-A')).toBe('1');
    const fin = find(seen, 'server:response:finish');
    expect(fin.bytes).toBe(5);
    expect(fin.response).toBe(head.response);
    expect(typeof fin.elapsedMs).toBe('number');
    expect(fin.elapsedMs as number).toBeGreaterThanOrEqual(0);
    const asyncEnd = find(seen, 'server:request:asyncEnd');
    expect(asyncEnd.request).toBe(start.request);
    expect(asyncEnd.result).toBe(head.response);
    expect(asyncEnd.error).toBeUndefined();
  });

  it('the trace runs the handler inside start.runStores, so a store bound to start is the handler context', async () => {
    const { AsyncLocalStorage } = await import('node:async_hooks');
    const als = new AsyncLocalStorage<string>();
    const tc = diagnosticsChannel.tracingChannel(channelNames.serverRequest);
    tc.start.bindStore(als, (ctx) => `span for ${(ctx as { request: Request }).request.target}`);
    unsubscribes.push(() => tc.start.unbindStore(als));
    const { port } = await startH1(async () => {
      await new Promise((r) => setImmediate(r));
      return new Response(200, als.getStore() ?? 'none');
    });
    const c = closeAfter(new Client());
    expect(text(await c.get(`http://127.0.0.1:${port}/x`))).toBe('span for /x');
  });

  it('a handler that throws: server:error, then the trace publishes error before asyncStart, with the 500 as result', async () => {
    const seen: Seen[] = [];
    record(SERVER_PLAIN, seen);
    recordTrace(channelNames.serverRequest, seen);
    const boom = new Error('boom');
    const { port } = await startH1(() => {
      throw boom;
    });
    const c = closeAfter(new Client());
    expect((await c.get(`http://127.0.0.1:${port}/`, { statusException: false })).status).toBe(500);
    await until(() => seen.some((s) => s.name === 'server:request:asyncEnd'), 'asyncEnd');
    expect(names(seen, 'server').filter((n) => n !== 'server:connection')).toEqual([
      'server:request:start',
      'server:request:start',
      'server:error',
      'server:response:headers',
      'server:response:finish',
      'server:request:end',
      'server:request:error',
      'server:request:asyncStart',
      'server:request:asyncEnd',
    ]);
    expect(find(seen, 'server:error').error).toBe(boom);
    expect(find(seen, 'server:request:error').error).toBe(boom);
    expect((find(seen, 'server:request:asyncEnd').result as Response).status).toBe(500);
  });

  it('a streamed (chunked) body: response:finish counts the payload, not the chunk framing', async () => {
    const seen: Seen[] = [];
    record([channelNames.serverResponseFinish], seen);
    const { port } = await startH1Stream(async (stream) => {
      await stream.write('abc');
      await stream.write('defgh');
      await stream.closeWrite();
    });
    const c = closeAfter(new Client());
    expect(text(await c.get(`http://127.0.0.1:${port}/`))).toBe('abcdefgh');
    await until(() => seen.length === 1, 'finish');
    expect(find(seen, 'server:response:finish').bytes).toBe(8);
  });

  it("the connection's own answer (413 for a declared body over maxBodyBytes) is observed too: start, head, finish", async () => {
    const seen: Seen[] = [];
    record(SERVER_PLAIN, seen);
    const { port } = await startH1(() => new Response(200, 'never'), { maxBodyBytes: 10 });
    const c = closeAfter(new Client());
    const res = await c.post(`http://127.0.0.1:${port}/up`, { body: 'x'.repeat(100), statusException: false });
    expect(res.status).toBe(413);
    await until(() => seen.some((s) => s.name === 'server:response:finish'), 'finish');
    expect(names(seen, 'server').filter((n) => n !== 'server:connection')).toEqual(['server:request:start', 'server:response:headers', 'server:response:finish']);
    expect((find(seen, 'server:response:finish').response as Response).status).toBe(413);
    expect(find(seen, 'server:response:finish').bytes).toBeGreaterThan(0);
  });

  it('upgrade: a stream handler taking the socket publishes server:upgrade with the protocol asked for', async () => {
    const seen: Seen[] = [];
    record([channelNames.serverUpgrade], seen);
    const { port } = await startH1Stream((stream) => {
      const { socket } = stream.upgrade();
      socket.end('HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: testproto\r\n\r\n');
    });
    const net = await import('node:net');
    const sock = net.connect(port, '127.0.0.1');
    sock.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: testproto\r\n\r\n');
    await new Promise<void>((resolve) => sock.once('data', () => resolve()));
    sock.destroy();
    expect(seen.map((s) => s.name)).toEqual(['server:upgrade']);
    expect(seen[0]!.msg.protocol).toBe('testproto');
    expect((seen[0]!.msg.request as Request).target).toBe('/');
  });

  it('upgrade: an onUpgrade tap claiming the connection (h2c, from curl) publishes server:upgrade, then the request runs over HTTP/2', async () => {
    const seen: Seen[] = [];
    record([channelNames.serverUpgrade, channelNames.serverRequestStart], seen);
    const { port } = await startH2(() => new Response(200, 'upgraded'));
    const r = await run('curl', ['-s', '--http2', `http://127.0.0.1:${port}/up`]);
    expect(r.stdout).toBe('upgraded');
    // Published once the tap returned: h2c runs the upgraded request (stream 1) inside it, so that request starts first.
    expect(seen.map((s) => s.name)).toEqual(['server:request:start', 'server:upgrade']);
    expect(find(seen, 'server:upgrade').protocol).toBe('h2c');
    expect((find(seen, 'server:upgrade').request as Request).protoMajor).toBe(1);
    expect((find(seen, 'server:request:start').request as Request).protoMajor).toBe(2);
  });

  for (const secure of [false, true]) {
    it(`HTTP/2 (${secure ? 'TLS h2' : 'h2c'}): the same messages through the same pipeline, request and stream handlers`, async () => {
      const seen: Seen[] = [];
      record(SERVER_PLAIN, seen);
      recordTrace(channelNames.serverRequest, seen);
      const a = await startH2(() => new Response(201, 'made'), { secure });
      const b = await startH2Stream(
        async (stream) => {
          stream.setStatus(202);
          await stream.closeWrite('streamed');
        },
        { secure },
      );
      const c = await h2Client();
      const scheme = secure ? 'https' : 'http';
      const opts = secure ? {} : { httpVersion: 'h2' as const };
      const r1 = await c.get(`${scheme}://127.0.0.1:${a.port}/a`, opts);
      expect(r1.protoMajor).toBe(2);
      await until(() => seen.filter((s) => s.name === 'server:request:asyncEnd').length === 1, 'first asyncEnd');
      const r2 = await c.get(`${scheme}://127.0.0.1:${b.port}/b`, opts);
      expect(r2.status).toBe(202);
      await until(() => seen.filter((s) => s.name === 'server:request:asyncEnd').length === 2, 'second asyncEnd');
      const perExchange = names(seen, 'server').filter((n) => n !== 'server:connection');
      const one = ['server:request:start', 'server:request:start', 'server:response:headers', 'server:response:finish', 'server:request:end', 'server:request:asyncStart', 'server:request:asyncEnd'];
      // The order within an exchange; a stream handler's end may come before its response (it awaits).
      expect(perExchange.slice(0, 7)).toEqual(one);
      expect([...perExchange.slice(7)].sort()).toEqual([...one].sort());
      const heads = seen.filter((s) => s.name === 'server:response:headers').map((s) => (s.msg.response as Response).status);
      expect(heads).toEqual([201, 202]);
      const fins = seen.filter((s) => s.name === 'server:response:finish').map((s) => s.msg.bytes);
      expect(fins).toEqual([4, 8]);
      const start = seen.find((s) => s.name === 'server:request:start')!.msg;
      expect((start.request as Request).protoMajor).toBe(2);
      expect(seen.filter((s) => s.name === 'server:connection')).toHaveLength(2);
    });
  }

  it('unsubscribed: no observing wire is made, and a subscriber added later sees only later exchanges', async () => {
    const observedInHandler: boolean[] = [];
    const { port } = await startH1((req) => {
      observedInHandler.push(observedWire(req) !== undefined);
      return new Response(200, 'ok');
    });
    const c = closeAfter(new Client());
    await c.get(`http://127.0.0.1:${port}/1`);
    const seen: Seen[] = [];
    record([channelNames.serverRequestStart], seen);
    await c.get(`http://127.0.0.1:${port}/2`);
    for (const u of unsubscribes.splice(0)) u();
    await c.get(`http://127.0.0.1:${port}/3`);
    expect(observedInHandler).toEqual([false, true, false]);
    expect(seen.map((s) => (s.msg.request as Request).target)).toEqual(['/2']);
  });
});

describe('client channels', () => {
  it('HTTP/1.1: the trace, create, connection:open, request:headers, response:headers, response:end, then connection:reuse', async () => {
    const seen: Seen[] = [];
    record(CLIENT_PLAIN, seen);
    recordTrace(channelNames.clientRequest, seen);
    const { port } = await startH1(() => new Response(200, 'hello'));
    const c = closeAfter(new Client());
    const url = `http://127.0.0.1:${port}/one`;
    const res = await c.get(url);
    expect(names(seen, 'client')).toEqual([
      'client:request:start',
      'client:request:create',
      'client:request:end',
      'client:connection:open',
      'client:request:headers',
      'client:response:headers',
      'client:response:end',
      'client:request:asyncStart',
      'client:request:asyncEnd',
    ]);
    const start = find(seen, 'client:request:start');
    expect(start.url).toBe(url);
    const create = find(seen, 'client:request:create');
    expect(create).toMatchObject({ url, attempt: 1 });
    const open = find(seen, 'client:connection:open');
    expect(open).toMatchObject({ origin: `http://127.0.0.1:${port}`, protocol: 'http/1.1', remoteAddress: '127.0.0.1', remotePort: port, localAddress: '127.0.0.1' });
    expect(open.connectMs as number).toBeGreaterThanOrEqual(0);
    const sent = find(seen, 'client:request:headers');
    expect(sent.request).toBe(create.request);
    expect(sent.connection).toMatchObject({ protocol: 'http/1.1', reused: false, remoteAddress: '127.0.0.1', remotePort: port, localPort: open.localPort });
    const head = find(seen, 'client:response:headers');
    expect(head.response).toBe(res);
    expect(head.elapsedMs as number).toBeGreaterThanOrEqual(0);
    const end = find(seen, 'client:response:end');
    expect(end).toMatchObject({ bytes: 5 });
    expect(end.elapsedMs as number).toBeGreaterThanOrEqual(head.elapsedMs as number);
    expect(find(seen, 'client:request:asyncEnd').result).toBe(res);

    seen.length = 0;
    await c.get(`http://127.0.0.1:${port}/two`);
    expect(names(seen, 'client:connection')).toEqual(['client:connection:reuse']);
    expect(find(seen, 'client:connection:reuse')).toEqual({ origin: `http://127.0.0.1:${port}`, protocol: 'http/1.1' });
    expect(find(seen, 'client:request:headers').connection).toMatchObject({ reused: true });
  });

  it('a subscriber may add a header at request:create: it is sent', async () => {
    const fn = (m: unknown): void => (m as { request: Request }).request.headers.set('X-Traced', 'yes');
    diagnosticsChannel.subscribe(channelNames.clientRequestCreate, fn);
    unsubscribes.push(() => diagnosticsChannel.unsubscribe(channelNames.clientRequestCreate, fn));
    const { port } = await startH1((req) => new Response(200, req.headers.get('X-Traced') ?? 'absent'));
    const c = closeAfter(new Client());
    expect(text(await c.get(`http://127.0.0.1:${port}/`))).toBe('yes');
  });

  it('a failed call: request:error, and the trace publishes error before asyncStart', async () => {
    const seen: Seen[] = [];
    record(CLIENT_PLAIN, seen);
    recordTrace(channelNames.clientRequest, seen);
    const net = await import('node:net');
    // A port nobody listens on: bind one, then close it.
    const srv = net.createServer();
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    const port = (srv.address() as { port: number }).port;
    await new Promise<void>((r) => srv.close(() => r()));
    const c = closeAfter(new Client());
    const err = await c.get(`http://127.0.0.1:${port}/`).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(Error);
    expect(names(seen, 'client')).toEqual([
      'client:request:start',
      'client:request:create',
      'client:request:end',
      'client:request:error',
      'client:request:error',
      'client:request:asyncStart',
      'client:request:asyncEnd',
    ]);
    const errors = seen.filter((s) => s.name === 'client:request:error');
    expect(errors[0]!.msg.error).toBe(err); // the channel
    expect(errors[1]!.msg.error).toBe(err); // the trace's error event
  });

  it('retries (plugin): a 503 is retried; client:retry between the two attempts', async () => {
    const k = closeKernelAfter(createKernel().register(retries));
    await k.ready();
    let n = 0;
    const { port } = await startH1(() => (n++ === 0 ? new Response(503, 'busy', { headers: { 'Retry-After': '0' } }) : new Response(200, 'ok')));
    const seen: Seen[] = [];
    record(CLIENT_PLAIN, seen);
    const c = closeAfter(k.client());
    expect((await c.get(`http://127.0.0.1:${port}/`)).status).toBe(200);
    expect(names(seen, 'client').filter((x) => !x.startsWith('client:connection'))).toEqual([
      'client:request:create',
      'client:request:headers',
      'client:response:headers',
      'client:response:end',
      'client:retry',
      'client:request:create',
      'client:request:headers',
      'client:response:headers',
      'client:response:end',
    ]);
    const retry = find(seen, 'client:retry');
    expect(retry).toMatchObject({ attempt: 1, delayMs: 0, status: 503, error: null });
    expect(retry.reason).toContain('503');
    expect(seen.filter((s) => s.name === 'client:request:create').map((s) => s.msg.attempt)).toEqual([1, 2]);
  });

  it('redirects (plugin): client:redirect names the Location followed and the hop', async () => {
    const k = closeKernelAfter(createKernel().register(redirects));
    await k.ready();
    const { port } = await startH1((req) => (req.target === '/old' ? new Response(302, '', { headers: { Location: '/new' } }) : new Response(200, 'here')));
    const seen: Seen[] = [];
    record(CLIENT_PLAIN, seen);
    const c = closeAfter(k.client());
    expect(text(await c.get(`http://127.0.0.1:${port}/old`))).toBe('here');
    const redirect = find(seen, 'client:redirect');
    expect(redirect).toMatchObject({ location: `http://127.0.0.1:${port}/new`, hop: 1 });
    expect((redirect.response as Response).status).toBe(302);
    expect((redirect.request as Request).url).toBe(`http://127.0.0.1:${port}/old`);
    const creates = seen.filter((s) => s.name === 'client:request:create').map((s) => s.msg.url);
    expect(creates).toEqual([`http://127.0.0.1:${port}/old`, `http://127.0.0.1:${port}/new`]);
    // The redirect is published after its head and before the next hop is created.
    const order = names(seen, 'client').filter((x) => !x.startsWith('client:connection'));
    expect(order.indexOf('client:redirect')).toBe(order.lastIndexOf('client:response:headers') - 3);
  });

  for (const secure of [false, true]) {
    it(`HTTP/2 (${secure ? 'TLS h2' : 'h2c'}): connection fields say h2; a second request shares the connection`, async () => {
      const { port } = await startH2(() => new Response(200, 'over h2'), { secure });
      const seen: Seen[] = [];
      record(CLIENT_PLAIN, seen);
      const c = await h2Client();
      const scheme = secure ? 'https' : 'http';
      const opts = secure ? {} : { httpVersion: 'h2' as const };
      expect((await c.get(`${scheme}://127.0.0.1:${port}/`, opts)).protoMajor).toBe(2);
      expect(names(seen, 'client')).toEqual(['client:request:create', 'client:connection:open', 'client:request:headers', 'client:response:headers', 'client:response:end']);
      expect(find(seen, 'client:connection:open')).toMatchObject({ origin: `${scheme}://127.0.0.1:${port}`, protocol: 'h2', remoteAddress: '127.0.0.1', remotePort: port });
      expect(find(seen, 'client:request:headers').connection).toMatchObject({ protocol: 'h2', reused: false, remoteAddress: '127.0.0.1', remotePort: port });
      expect(find(seen, 'client:response:end').bytes).toBe(7);
      seen.length = 0;
      await c.get(`${scheme}://127.0.0.1:${port}/`, opts);
      expect(find(seen, 'client:connection:reuse')).toEqual({ origin: `${scheme}://127.0.0.1:${port}`, protocol: 'h2' });
      expect(find(seen, 'client:request:headers').connection).toMatchObject({ protocol: 'h2', reused: true });
    });
  }

  it('dispatch (streamed body): response:end comes when the body arrived, with the wire bytes', async () => {
    const { port } = await startH1Stream(async (stream) => {
      await stream.write('x'.repeat(1000));
      await stream.closeWrite('y'.repeat(24));
    });
    const seen: Seen[] = [];
    record([channelNames.clientResponseEnd], seen);
    const c = closeAfter(new Client());
    const { Request: Req } = await import('../../kernel/index.js');
    const req = new Req('GET', '/', {});
    req.url = `http://127.0.0.1:${port}/`;
    const res = await c.dispatch(req);
    const { readAll } = await import('../../kernel/index.js');
    expect((await readAll(res.body as never)).length).toBe(1024);
    await until(() => seen.length === 1, 'response:end');
    expect(seen[0]!.msg.bytes).toBe(1024);
  });

  it('a subscriber attaching mid-exchange gets elapsedMs NaN (the start was not timed)', async () => {
    const seen: Seen[] = [];
    const { port } = await startH1(() => {
      // The call's create happened before anyone listened to a timed channel.
      record([channelNames.clientResponseHeaders], seen);
      return new Response(200, 'ok');
    });
    // Keeps the call on the attempt loop, where response:headers is published.
    record([channelNames.clientRequestError], []);
    const c = closeAfter(new Client());
    await c.get(`http://127.0.0.1:${port}/`);
    expect(seen).toHaveLength(1);
    expect(Number.isNaN(seen[0]!.msg.elapsedMs)).toBe(true);
  });

  it('unsubscribed: the call takes the shortcut, and a subscriber added later sees only later calls', async () => {
    const { port } = await startH1(() => new Response(200, 'ok'));
    const c = closeAfter(new Client());
    await c.get(`http://127.0.0.1:${port}/1`);
    const { FlowBody } = await import('../../kernel/client/flow-body.js');
    // With nobody listening no body watcher is set.
    const res = await c.dispatch(Object.assign(new (await import('../../kernel/index.js')).Request('GET', '/d', {}), { url: `http://127.0.0.1:${port}/d` }));
    expect(res.body instanceof FlowBody ? res.body.onEnd : null).toBeNull();
    (res.body as { close(): void }).close();
    const seen: Seen[] = [];
    record([channelNames.clientRequestCreate], seen);
    await c.get(`http://127.0.0.1:${port}/2`);
    for (const u of unsubscribes.splice(0)) u();
    await c.get(`http://127.0.0.1:${port}/3`);
    expect(seen.map((s) => s.msg.url)).toEqual([`http://127.0.0.1:${port}/2`]);
  });
});
