/**
 * WebSockets between our own client and server: messages, compression and its fallback,
 * subprotocols, origin checks, refusals, timeouts, stream upgrades, caller-owned sockets,
 * close codes, ping/pong, force-close, and the kernel hooks the handshake runs.
 */
import net from 'node:net';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { ArgumentError, Client, createKernel, definePlugin, getCallOptions, listen, Stage, TimeoutError, type Response } from '../../../kernel/index.js';
import { selfSignedCertificate } from '../../../tls/self-signed.js';
import { WebSocket, WebSocketError, WebSocketHandshakeError, WebSockets, websockets } from '../../../plugins/websockets/index.js';
// Its definition declares the proxy call option, which the probe plugin below (named 'proxy') stands in for.
import '../../../plugins/proxy/index.js';
import { GOING_AWAY_MS } from '../../../kernel/server/server.js';
import { closeNetServerAfter, destroyAfter } from '../../helpers/cleanup.js';
import { FrameConnection } from '../../../plugins/websockets/frame-connection.js';
import { MessageZlib } from '../../../plugins/websockets/message-zlib.js';
import { echo, onCleanup, rawWs, startWs, trackServer, waitFor, within } from '../../helpers/websockets.js';

function bytes(n: number, seed = 7): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + seed) & 0xff;
  return b;
}

function httpClient(): Client {
  const c = new Client();
  onCleanup(() => c.close());
  return c;
}

describe('WebSockets: messages', () => {
  for (const compress of [false, true]) {
    it(`echoes text and binary from 1 byte to 1 MiB (compress ${compress})`, async () => {
      const { url } = await startWs(echo, { compress });
      const sizes = [1, 125, 126, 65535, 65536, 1024 * 1024];
      await WebSockets.open(
        url,
        async (ws) => {
          expect(ws.compressed).toBe(compress);
          expect(ws.extensions).toBe(compress ? 'permessage-deflate' : '');
          for (const n of sizes) {
            const b = bytes(n);
            await ws.send(b);
            const got = await ws.receive();
            expect(got).toBeInstanceOf(Uint8Array);
            expect(Buffer.compare(Buffer.from(got as Uint8Array), Buffer.from(b))).toBe(0);
            const t = 'é'.repeat(Math.max(1, n >> 1));
            await ws.send(t);
            expect(await ws.receive()).toBe(t);
          }
        },
        { compress },
      );
    });
  }

  it('delivers many messages in order when the reader is slow (socket paused and resumed)', async () => {
    const { url } = await startWs(async (ws) => {
      for (let i = 0; i < 5000; i++) void ws.send(`m${i}`);
      await ws.receive(); // wait for the client's "done"
    });
    await WebSockets.open(url, async (ws) => {
      await waitFor(() => ws.bufferedAmount === 0, 3000, 'the server to send');
      await new Promise((r) => setTimeout(r, 50)); // let messages pile up unread
      for (let i = 0; i < 5000; i++) expect(await ws.receive()).toBe(`m${i}`);
      await ws.send('done');
    });
  });

  it('iterates until a normal close; the namespace functions work as the methods', async () => {
    const { url } = await startWs(async (ws) => {
      await WebSockets.send(ws, 'a');
      await WebSockets.send(ws, 'b');
      await WebSockets.close(ws, 1000, 'done');
    });
    const got: unknown[] = [];
    await WebSockets.open(url, async (ws) => {
      for await (const m of ws) got.push(m);
      expect(ws.closeCode).toBe(1000);
      expect(ws.closeReason).toBe('done');
      await expect(WebSockets.receive(ws)).rejects.toMatchObject({ closeCode: 1000, reason: 'done' });
      await expect(ws.send('late')).rejects.toBeInstanceOf(WebSocketError);
    });
    expect(got).toEqual(['a', 'b']);
  });

  it('carries close codes and reasons both ways; an abnormal code makes iteration throw', async () => {
    let serverSaw: { code: number | null; reason: string | null } | null = null;
    const { url } = await startWs(async (ws) => {
      try {
        for await (const _ of ws) void _;
      } catch (err) {
        expect(err).toBeInstanceOf(WebSocketError);
      }
      serverSaw = { code: ws.closeCode, reason: ws.closeReason };
    });
    await WebSockets.open(url, (ws) => ws.close(4001, 'bye'));
    await waitFor(() => serverSaw !== null, 3000, 'the server handler to end');
    expect(serverSaw).toEqual({ code: 4001, reason: 'bye' });
    await WebSockets.open(url, async (ws) => {
      expect(() => ws.close(1005)).toThrow(ArgumentError);
      expect(() => ws.close(1000, 'x'.repeat(124))).toThrow(ArgumentError);
    });
  });

  it('answers pings and resolves ping() on the pong', async () => {
    const { url } = await startWs(async (ws) => {
      await ws.ping('from-server');
      await ws.send('pinged');
      await ws.receive();
    });
    await WebSockets.open(url, async (ws) => {
      await within(ws.ping('hi'), 3000, 'pong');
      await WebSockets.pong(ws, 'unsolicited');
      expect(await ws.receive()).toBe('pinged');
      await ws.send('bye');
    });
  });

  it('closes with 1011 when the handler throws, and reports the error', async () => {
    const { url, errors } = await startWs(async () => {
      throw new Error('boom');
    });
    await WebSockets.open(url, async (ws) => {
      await expect(ws.receive()).rejects.toMatchObject({ closeCode: 1011 });
    });
    await waitFor(() => errors.length === 1, 3000, 'the error report');
    expect((errors[0] as Error).message).toBe('boom');
  });

  it('returns the handler result and rethrows a client handler error after closing', async () => {
    const { url } = await startWs(echo);
    expect(await WebSockets.open(url, async (ws) => (await ws.send('x'), await ws.receive()))).toBe('x');
    await expect(
      WebSockets.open(url, () => {
        throw new RangeError('client side');
      }),
    ).rejects.toBeInstanceOf(RangeError);
  });
});

describe('WebSockets: wss://', () => {
  it('speaks over TLS (the onUpgrade tap finds TLS sockets too), and checks the certificate', async () => {
    const cert = selfSignedCertificate();
    const { port } = await startWs(echo, { tls: { key: cert.key, cert: cert.cert }, compress: true });
    const url = `wss://localhost:${port}/secure`;
    expect(await WebSockets.open(url, async (ws) => (await ws.send('tls'), [await ws.receive(), ws.compressed]), { tls: { ca: cert.cert }, compress: true })).toEqual(['tls', true]);
    await expect(WebSockets.open(url, () => 1)).rejects.toMatchObject({ name: 'TLSHandshakeError' });
  });
});

describe('WebSockets: empty messages under compression', () => {
  const SEQUENCE: (string | Uint8Array)[] = ['abc', '', new Uint8Array(0), 'after the empty ones', '', 'x'.repeat(3000), new Uint8Array(0), '', 'last'];

  it('an empty message after a compressed one leaves the next intact, client to server and back', async () => {
    const { url } = await startWs(echo, { compress: true });
    await WebSockets.open(
      url,
      async (ws) => {
        expect(ws.compressed).toBe(true);
        for (const m of SEQUENCE) {
          await ws.send(m);
          const got = await ws.receive();
          if (typeof m === 'string') expect(got).toBe(m);
          else expect([...(got as Uint8Array)]).toEqual([...m]);
        }
      },
      { compress: true },
    );
  });

  // The agreed parameters cannot be chosen through the API (ws negotiates what the client
  // offers): two codecs on a loopback connection, each side with or without its context.
  for (const params of [{}, { server_no_context_takeover: true }, { client_no_context_takeover: true }, { server_no_context_takeover: true, client_no_context_takeover: true }]) {
    it(`both codecs, each way, with ${JSON.stringify(params)}`, async () => {
      const listener = closeNetServerAfter(net.createServer());
      await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
      const accepted = new Promise<net.Socket>((r) => listener.once('connection', r));
      const cs = destroyAfter(net.connect((listener.address() as net.AddressInfo).port, '127.0.0.1'));
      const ss = destroyAfter(await accepted);
      const codec = (socket: net.Socket, isServer: boolean): FrameConnection =>
        new FrameConnection(socket, new Uint8Array(0), { isServer, maxPayload: 0, maxFragments: 0, closeTimeout: 5000, deflate: new MessageZlib(params, isServer, 0) });
      const server = codec(ss, true);
      const client = codec(cs, false);
      for (const [from, to] of [
        [client, server],
        [server, client],
      ] as const) {
        const got: (string | number[])[] = [];
        const all = new Promise<void>((resolve, reject) => {
          // A message that does not inflate fails the connection (1007): no waiting for the rest.
          to.on('error', reject);
          to.on('message', (data, isBinary) => {
            got.push(isBinary ? [...data] : data.toString('utf8'));
            if (got.length === SEQUENCE.length) resolve();
          });
        });
        for (const m of SEQUENCE) from.send(m);
        await within(all, 5000, 'every message');
        expect(got).toEqual(SEQUENCE.map((m) => (typeof m === 'string' ? m : [...m])));
        to.removeAllListeners('message');
        to.removeAllListeners('error');
      }
    });
  }
});

describe('WebSockets: a compressed message and the close right behind it', () => {
  // The peer sends a compressed message, its close frame and its FIN in one write: the socket
  // ends while the message is still in zlib. The message and the close code both arrive.
  it('delivers the message being inflated and the close frame read after it, not 1006', async () => {
    const listener = closeNetServerAfter(net.createServer());
    await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
    const accepted = new Promise<net.Socket>((r) => listener.once('connection', r));
    const cs = destroyAfter(net.connect((listener.address() as net.AddressInfo).port, '127.0.0.1'));
    const ss = destroyAfter(await accepted);
    const client = new FrameConnection(cs, new Uint8Array(0), { isServer: false, maxPayload: 0, maxFragments: 0, closeTimeout: 5000, deflate: new MessageZlib({}, false, 0) });
    const text = Array.from({ length: 20_000 }, (_, i) => `line ${i} of the message\n`).join('');
    const deflated = zlib.deflateRawSync(Buffer.from(text), { finishFlush: zlib.constants.Z_SYNC_FLUSH });
    const payload = deflated.subarray(0, deflated.length - 4); // the 00 00 ff ff tail goes (RFC 7692 §7.2.1)
    const head = Buffer.alloc(10);
    head[0] = 0xc1; // FIN, RSV1 (compressed), text
    head[1] = 127;
    head.writeBigUInt64BE(BigInt(payload.length), 2);
    const close = Buffer.from([0x88, 0x02, 0x03, 0xe8]); // close 1000
    const got: string[] = [];
    client.on('message', (data) => got.push(data.toString('utf8')));
    const closed = new Promise<number>((r) => client.once('close', (code: number) => r(code)));
    ss.end(Buffer.concat([head, payload, close]));
    expect(await within(closed, 5000, 'close')).toBe(1000);
    expect(got).toEqual([text]);
  });
});

describe('WebSockets: negotiation', () => {
  it('falls back to plain frames when either side declines compression', async () => {
    const on = await startWs(echo, { compress: true });
    const off = await startWs(echo, { compress: false });
    const check = async (url: string, compress: boolean, expected: boolean): Promise<void> => {
      await WebSockets.open(
        url,
        async (ws) => {
          expect(ws.compressed).toBe(expected);
          const big = 'z'.repeat(200_000);
          await ws.send(big);
          expect(await ws.receive()).toBe(big);
        },
        { compress },
      );
    };
    await check(on.url, false, false);
    await check(off.url, true, false);
    await check(on.url, true, true);
  });

  it('selects the first offered subprotocol the server speaks, and none that it does not', async () => {
    const { url } = await startWs(async (ws) => ws.send(ws.subprotocol ?? 'none'), { subprotocols: ['chat', 'v2'] });
    expect(await WebSockets.open(url, async (ws) => [ws.subprotocol, await ws.receive()], { subprotocols: ['v3', 'v2', 'chat'] })).toEqual(['v2', 'v2']);
    expect(await WebSockets.open(url, async (ws) => [ws.subprotocol, await ws.receive()], { subprotocols: ['unknown'] })).toEqual([null, 'none']);
    await expect(WebSockets.open(url, () => 1, { subprotocols: ['bad name'] })).rejects.toBeInstanceOf(ArgumentError);
    // The kernel's token rule: no CR LF, no non-ASCII, not empty.
    for (const p of ['chat\r\nX: 1', 'ch\u00e2t', '']) await expect(WebSockets.open(url, () => 1, { subprotocols: [p] })).rejects.toThrow(/subprotocols must be an array of tokens/);
  });

  it('checkOrigin: refuses with 403, allows same origin, lists and functions', async () => {
    const same = await startWs(echo, { checkOrigin: true });
    const err = await WebSockets.open(same.url, () => 1, { headers: { Origin: 'https://evil.example' } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WebSocketHandshakeError);
    expect((err as WebSocketHandshakeError).status).toBe(403);
    expect((err as Error).message).toMatch(/403/);
    expect(await WebSockets.open(same.url, () => 'ok', { headers: { Origin: `http://127.0.0.1:${same.port}` } })).toBe('ok');
    expect(await WebSockets.open(same.url, () => 'ok')).toBe('ok');
    const list = await startWs(echo, { checkOrigin: ['https://app.example'] });
    expect(await WebSockets.open(list.url, () => 'ok', { headers: { Origin: 'https://app.example' } })).toBe('ok');
    await expect(WebSockets.open(list.url, () => 1)).rejects.toMatchObject({ status: 403 });
    const fn = await startWs(echo, { checkOrigin: async (origin) => origin === 'x://y' });
    await expect(WebSockets.open(fn.url, () => 1, { headers: { Origin: 'x://z' } })).rejects.toMatchObject({ status: 403 });
    // The server keeps serving after refusals.
    expect(await WebSockets.open(fn.url, () => 'ok', { headers: { Origin: 'x://y' } })).toBe('ok');
  });

  it('answers a plain request to a WebSocket server with 426 and keeps serving', async () => {
    const { port, url } = await startWs(echo);
    const res = await httpClient().get(`http://127.0.0.1:${port}/`, { statusException: false });
    expect(res.status).toBe(426);
    expect(res.headers.get('Upgrade')).toBe('websocket');
    const bad = await rawWs(port).catch((e: Error) => e);
    expect(bad).not.toBeInstanceOf(Error);
    expect(await WebSockets.open(url, () => 'ok')).toBe('ok');
  });

  it('refuses a wrong version with 426 and a bad key with 400', async () => {
    const { port } = await startWs(echo);
    const c = httpClient();
    const base = { Upgrade: 'websocket', Connection: 'Upgrade' };
    const v = await c.get(`http://127.0.0.1:${port}/`, { statusException: false, headers: { ...base, 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Version': '8' } });
    expect([v.status, v.headers.get('Sec-WebSocket-Version')]).toEqual([426, '13']);
    const k = await c.get(`http://127.0.0.1:${port}/`, { statusException: false, headers: { ...base, 'Sec-WebSocket-Key': 'short', 'Sec-WebSocket-Version': '13' } });
    expect(k.status).toBe(400);
  });

  it('WebSockets.open refuses URLs that are not ws:// or wss://, and HTTP refuses ws:// URLs', async () => {
    await expect(WebSockets.open('http://127.0.0.1:1/', () => 1)).rejects.toThrow(/ws:\/\/ or wss:\/\//);
    await expect(WebSockets.open('not a url', () => 1)).rejects.toBeInstanceOf(ArgumentError);
    const err = await httpClient()
      .get('ws://127.0.0.1:1/')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ArgumentError);
    expect((err as Error).message).toMatch(/WebSockets\.open/);
  });
});

describe('WebSockets: handshake failures and timeouts', () => {
  it('a status other than 101 is a WebSocketHandshakeError naming it', async () => {
    const plain = await listen(
      async (stream) => {
        stream.setStatus(404);
        await stream.write('no such socket');
      },
      { port: 0 },
    );
    trackServer(plain);
    const err = await WebSockets.open(`ws://127.0.0.1:${plain.port}/x`, () => 1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WebSocketHandshakeError);
    expect((err as WebSocketHandshakeError).status).toBe(404);
    expect((err as Error).message).toMatch(/404/);
  });

  it('a silent server raises TimeoutError "websocket handshake" (responseHeaderTimeout, requestTimeout, readIdleTimeout)', async () => {
    const sockets = new Set<net.Socket>();
    const silent = net.createServer((s) => {
      sockets.add(s);
      s.on('error', () => {});
    });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    onCleanup(() => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((r) => silent.close(() => r()));
    });
    const url = `ws://127.0.0.1:${(silent.address() as net.AddressInfo).port}/`;
    for (const key of ['responseHeaderTimeout', 'requestTimeout', 'readIdleTimeout'] as const) {
      const started = performance.now();
      const err = await WebSockets.open(url, () => 1, { [key]: 150 }).catch((e: unknown) => e);
      expect(err, key).toBeInstanceOf(TimeoutError);
      expect((err as TimeoutError).operation).toBe('websocket handshake');
      expect((err as TimeoutError).timeoutMs).toBe(150);
      expect(performance.now() - started).toBeLessThan(2000);
    }
  });

  it("a connect failure is the connect step's error", async () => {
    const s = net.createServer();
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    const port = (s.address() as net.AddressInfo).port;
    await new Promise<void>((r) => s.close(() => r()));
    await expect(WebSockets.open(`ws://127.0.0.1:${port}/`, () => 1)).rejects.toMatchObject({ name: 'ConnectError' });
  });

  it('an AbortSignal cancels the handshake, and closes an open session with 1001', async () => {
    let serverCode: number | null = null;
    const { url } = await startWs(async (ws) => {
      await ws.receive().catch(() => undefined);
      serverCode = ws.closeCode;
    });
    const ac = new AbortController();
    const p = WebSockets.open(
      url,
      async (ws) => {
        ac.abort();
        await ws.receive();
      },
      { signal: ac.signal },
    );
    await expect(p).rejects.toMatchObject({ closeCode: 1001 });
    await waitFor(() => serverCode !== null, 3000, 'the server to see the close');
    expect(serverCode).toBe(1001);
    const aborted = new AbortController();
    aborted.abort();
    await expect(WebSockets.open(url, () => 1, { signal: aborted.signal })).rejects.toMatchObject({ name: 'CanceledError' });
  });
});

describe('WebSockets: server control and upgrades', () => {
  it('upgrades a stream from a plain stream handler (no plugin), which keeps serving other requests', async () => {
    let ended = false;
    const server = await listen(
      async (stream) => {
        if (WebSockets.isUpgrade(stream.message) && stream.message.target === '/ws') {
          await WebSockets.upgrade(stream, async (ws) => {
            await ws.send(`hello ${stream.message.target}`);
            await ws.receive();
          });
          ended = true;
          return;
        }
        stream.setHeader('Content-Length', '2');
        await stream.write('ok');
      },
      { port: 0 },
    );
    trackServer(server);
    const url = `ws://127.0.0.1:${server.port}/ws`;
    expect(
      await WebSockets.open(url, async (ws) => {
        const m = await ws.receive();
        await ws.send('bye');
        return m;
      }),
    ).toBe('hello /ws');
    await waitFor(() => ended, 3000, 'upgrade() to resolve after the handler');
    expect((await httpClient().get(`http://127.0.0.1:${server.port}/`)).status).toBe(200);
  });

  it('upgrade() answers a request that is not a handshake, and refuses once the response started', async () => {
    let thrown: unknown = null;
    const server = await listen(
      async (stream) => {
        if (stream.message.target === '/late') {
          stream.setHeader('Content-Type', 'text/plain');
          stream.startWrite();
          thrown = await WebSockets.upgrade(stream, () => 1).catch((e: unknown) => e);
          await stream.write('late');
          return;
        }
        await WebSockets.upgrade(stream, () => 1);
      },
      { port: 0 },
    );
    trackServer(server);
    const c = httpClient();
    expect((await c.get(`http://127.0.0.1:${server.port}/`, { statusException: false })).status).toBe(426);
    await c.get(`http://127.0.0.1:${server.port}/late`);
    expect(thrown).toBeInstanceOf(ArgumentError);
  });

  it('with the plugin, upgrades are taken in server.onUpgrade (before onRequest); without it the stream handler upgrades', async () => {
    const requests: string[] = [];
    const probe = definePlugin({
      name: 'request-probe',
      register(kernel) {
        kernel.hooks.server.onRequest.tap('request-probe', (req) => {
          requests.push(`${req.headers.get('Upgrade') ?? 'plain'}`);
        });
      },
    });
    const bare = await createKernel().register(probe).ready();
    const withPlugin = await createKernel().register(probe).register(websockets).ready();
    for (const kernel of [withPlugin, bare]) {
      const { url, port } = await startWs(echo, { kernel });
      expect(await WebSockets.open(url, async (ws) => (await ws.send('k'), await ws.receive()))).toBe('k');
      expect((await httpClient().get(`http://127.0.0.1:${port}/`, { statusException: false })).status).toBe(426);
    }
    expect(requests).toEqual(['plain', 'websocket', 'plain']);
  });

  it('forceClose drops live WebSockets with the server; serverAddr says where it listens', async () => {
    let opened = 0;
    const { server, port, url } = await startWs(async (ws) => {
      opened++;
      await ws.receive().catch(() => undefined);
    });
    expect(String(WebSockets.serverAddr(server))).toBe(`127.0.0.1:${port}`);
    const sessions = [1, 2].map(() => WebSockets.open(url, (ws) => ws.receive()).catch((e: unknown) => e));
    await waitFor(() => opened === 2, 3000, 'two sessions');
    await within(WebSockets.forceClose(server), 3000, 'forceClose');
    for (const e of await Promise.all(sessions)) expect(e).toMatchObject({ closeCode: 1006 });
  });

  it('server.forceClose() drops live WebSockets at once, the upgraded sockets being in its books: the client sees 1006', async () => {
    let opened = 0;
    const { server, url } = await startWs(async (ws) => {
      opened++;
      await ws.receive().catch(() => undefined);
    });
    const session = WebSockets.open(url, (ws) => ws.receive()).catch((e: unknown) => e);
    await waitFor(() => opened === 1, 3000, 'the session');
    expect(server.connectionCount).toBe(1);
    await within(server.forceClose(), 3000, 'forceClose');
    expect(await within(session, 3000, "the client's receive() to end")).toMatchObject({ closeCode: 1006 });
  });

  for (const how of ['listen', 'upgrade'] as const) {
    it(`server.close() lets live WebSockets go on for closeGracePeriod, then closes them with 1001 (${how})`, async () => {
      const GRACE = 300;
      let serverCode: number | null = null;
      const onSession = async (ws: WebSocket): Promise<void> => {
        try {
          for await (const m of ws) await ws.send(m);
        } finally {
          serverCode = ws.closeCode;
        }
      };
      let server;
      if (how === 'listen') server = (await startWs(onSession, { closeGracePeriod: GRACE })).server;
      else {
        // No plugin: the stream handler upgrades (the socket goes through stream.upgrade()).
        server = await listen((stream) => WebSockets.upgrade(stream, onSession), { port: 0, closeGracePeriod: GRACE });
        trackServer(server);
      }
      const url = `ws://127.0.0.1:${server.port}/`;
      let closing: Promise<void> | null = null;
      let started = 0;
      const clientSaw = await WebSockets.open(url, async (ws) => {
        await ws.send('before');
        expect(await ws.receive()).toBe('before');
        started = performance.now();
        closing = server.close();
        // The session goes on during the grace period.
        await ws.send('during');
        expect(await ws.receive()).toBe('during');
        return ws.receive().catch((e: unknown) => e);
      });
      expect(clientSaw).toMatchObject({ closeCode: 1001, reason: 'server going away' });
      await within(closing!, 3000, 'close()');
      expect(performance.now() - started).toBeGreaterThanOrEqual(GRACE - 1);
      expect(serverCode).toBe(1001);
      expect(server.connectionCount).toBe(0);
    });
  }

  it('server.close(): a peer that never answers the 1001 is dropped GOING_AWAY_MS after the grace period', async () => {
    const GRACE = 100;
    const { server, port } = await startWs(echo, { closeGracePeriod: GRACE });
    const raw = await rawWs(port);
    const started = performance.now();
    const closing = server.close();
    expect(await raw.closeFrame()).toEqual({ code: 1001, reason: 'server going away' });
    // The raw client never answers: the server's books hold the socket until the bound.
    await within(closing, GRACE + GOING_AWAY_MS + 2000, 'close()');
    expect(performance.now() - started).toBeGreaterThanOrEqual(GRACE + GOING_AWAY_MS - 1);
    await raw.client.untilClosed(1000);
  });

  it('server.close() waits for a WebSocket that ends within the grace period, and no longer', async () => {
    const { server, url } = await startWs(echo, { closeGracePeriod: 60_000 });
    let closing: Promise<void> | null = null;
    await WebSockets.open(url, async (ws) => {
      await ws.send('x');
      await ws.receive();
      closing = server.close();
    });
    // The client closed (1000): close() resolves then, not after the minute.
    await within(closing!, 3000, 'close() after the session ended');
  });

  it('runs over a socket the caller connected, and never ends or destroys it', async () => {
    const { port } = await startWs(echo);
    const socket = net.connect({ host: '127.0.0.1', port, allowHalfOpen: true });
    onCleanup(() => socket.destroy());
    await new Promise<void>((r) => socket.once('connect', () => r()));
    const calls: string[] = [];
    const end = socket.end.bind(socket);
    const destroy = socket.destroy.bind(socket);
    socket.end = ((...a: unknown[]) => (calls.push('end'), end(...(a as [])))) as typeof socket.end;
    socket.destroy = ((...a: unknown[]) => (calls.push('destroy'), destroy(...(a as [])))) as typeof socket.destroy;
    const got = await WebSockets.open(socket, async (ws) => (await ws.send('over yours'), await ws.receive()), { host: `127.0.0.1:${port}`, target: '/lent' });
    expect(got).toBe('over yours');
    await new Promise((r) => setTimeout(r, 50));
    expect(calls).toEqual([]);
    await expect(WebSockets.open(socket, () => 1, { target: '/' })).rejects.toThrow(/host/);
  });
});

describe('WebSockets: kernel hooks on the client', () => {
  it('runs the client.connect taps (a proxy would) and the client.onUpgrade taps; a throwing onUpgrade tap refuses', async () => {
    const seen: string[] = [];
    let refuse = false;
    // Named 'proxy': it stands in for the proxy plugin, which owns the proxy option (a kernel without one refuses it).
    // As that plugin does, it keys the connection by the call's proxy option and reads the key when connecting.
    const probe = definePlugin({
      name: 'proxy',
      register(kernel) {
        kernel.hooks.client.poolKey.tap({ name: 'probe', stage: Stage.PROXY }, (_key, ctx) => getCallOptions(ctx).proxy);
        kernel.hooks.client.connect.tap({ name: 'probe', stage: Stage.PROXY }, (o) => {
          seen.push(`connect ${o.host}:${o.port} ${o.alpnProtocols.join()} ${String(o.poolKey)}`);
        });
        kernel.hooks.client.onUpgrade.tap('probe', (req, res: Response) => {
          seen.push(`upgrade ${req.target} ${res.status}`);
          if (refuse) throw new Error('extension not acceptable');
        });
      },
    });
    const kernel = await createKernel().register(probe).ready();
    const { port, url } = await startWs(echo);
    expect(await WebSockets.open(`${url}/p?q=1`, async (ws) => (await ws.send('h'), await ws.receive()), { kernel, proxy: 'policy' })).toBe('h');
    expect(seen).toEqual([`connect 127.0.0.1:${port} http/1.1 policy`, 'upgrade /p?q=1 101']);
    refuse = true;
    await expect(WebSockets.open(url, () => 1, { kernel })).rejects.toThrow('extension not acceptable');
  });

  it('a WebSocket is a WebSocket on both ends', async () => {
    let server: WebSocket | null = null;
    const { url } = await startWs(async (ws) => {
      server = ws;
      await ws.receive().catch(() => undefined);
    });
    await WebSockets.open(url, async (ws) => {
      expect(ws.isServer).toBe(false);
      expect(ws.response.status).toBe(101);
      await waitFor(() => server !== null);
      expect(server!.isServer).toBe(true);
      expect(server!.request.headers.get('Upgrade')).toBe('websocket');
      expect(server!.peerAddr()?.address).toBe('127.0.0.1');
    });
  });
});

describe('WebSockets: a 101 that breaks RFC 6455', () => {
  /** A TCP server that answers any request with `head` (a canned 101). */
  async function cannedServer(head: (key: string) => string): Promise<string> {
    const sockets = new Set<net.Socket>();
    const s = net.createServer((c) => {
      sockets.add(c);
      c.on('error', () => {});
      let buf = '';
      c.on('data', (d: Buffer) => {
        buf += d.toString('latin1');
        if (!buf.includes('\r\n\r\n')) return;
        const key = /Sec-WebSocket-Key: (\S+)/i.exec(buf)?.[1] ?? '';
        c.write(head(key));
      });
    });
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    onCleanup(() => {
      for (const c of sockets) c.destroy();
      return new Promise<void>((r) => s.close(() => r()));
    });
    return `ws://127.0.0.1:${(s.address() as net.AddressInfo).port}/`;
  }

  it('refuses a wrong accept, an unoffered subprotocol or extension, before the onUpgrade taps run', async () => {
    const { createHash } = await import('node:crypto');
    const accept = (k: string): string => createHash('sha1').update(`${k}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
    const ok = (k: string, extra = ''): string => `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept(k)}\r\n${extra}\r\n`;
    let tapped = 0;
    const kernel = await createKernel()
      .register(
        definePlugin({
          name: 'count-upgrades',
          register(k) {
            k.hooks.client.onUpgrade.tap('count-upgrades', () => {
              tapped++;
            });
          },
        }),
      )
      .ready();
    const cases: [string, (k: string) => string][] = [
      ['wrong Sec-WebSocket-Accept', () => ok('dGhlIHNhbXBsZSBub25jZQ==')],
      ['not offered', (k) => ok(k, 'Sec-WebSocket-Protocol: surprise\r\n')],
      ['no extension was offered', (k) => ok(k, 'Sec-WebSocket-Extensions: permessage-deflate\r\n')],
      ['no Upgrade: websocket', (k) => `HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept(k)}\r\n\r\n`],
    ];
    for (const [why, head] of cases) {
      const url = await cannedServer(head);
      const err = await WebSockets.open(url, () => 1, { kernel }).catch((e: unknown) => e);
      expect(err, why).toBeInstanceOf(WebSocketHandshakeError);
      expect((err as Error).message).toContain(why);
    }
    expect(tapped).toBe(0);
    // A valid canned 101 passes and reaches the tap.
    const url = await cannedServer((k) => ok(k));
    const p = WebSockets.open(url, (ws) => ws.terminate(), { kernel });
    await p;
    expect(tapped).toBe(1);
  });
});
