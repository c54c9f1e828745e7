/**
 * The opening handshake against requests a server must refuse (RFC 6455 §4.2.1, §10.2): an
 * Origin naming another site (cross-site WebSocket hijacking) under the default policy, an
 * HTTP/1.0 request, a request declaring a body (whose bytes must not be read as frames); and
 * the `checkOrigin` forms. Over raw sockets on loopback, on both server paths: a
 * `WebSockets.listen` server (the plugin's `server.onUpgrade` tap) and a stream handler calling
 * `WebSockets.upgrade`. Also the close code our client reports when it fails a connection.
 */
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { ArgumentError } from '../../../kernel/index.js';
import { WebSockets, WebSocketError, type WebSocketServerOptions } from '../../../plugins/websockets/index.js';
import { startStreamServer } from '../../helpers/server.js';
import { echo, frame, onCleanup, rawClient, startWs, within } from '../../helpers/websockets.js';

/** A server on each path, counting the sessions its handler ran. */
async function servers(options: WebSocketServerOptions = {}): Promise<{ name: string; port: number; sessions: () => number }[]> {
  let a = 0;
  let b = 0;
  const listened = await startWs(async (ws) => {
    a++;
    await echo(ws);
  }, options);
  const streamed = await startStreamServer((stream) =>
    WebSockets.upgrade(
      stream,
      async (ws) => {
        b++;
        await echo(ws);
      },
      options,
    ),
  );
  return [
    { name: 'listen', port: listened.port, sessions: () => a },
    { name: 'upgrade(stream)', port: streamed.port, sessions: () => b },
  ];
}

/** Sends a handshake (with `head` replacing the request line and Host, and `extra` fields and bytes after it); the status answered. */
async function handshake(port: number, o: { host?: string; origin?: string[]; version?: string; extra?: string; after?: Uint8Array | string } = {}): Promise<number> {
  const c = await rawClient(port);
  const key = randomBytes(16).toString('base64');
  const origins = (o.origin ?? []).map((v) => `Origin: ${v}\r\n`).join('');
  const host = o.host === '' ? '' : `Host: ${o.host ?? `127.0.0.1:${port}`}\r\n`;
  await c.write(`GET /chat HTTP/${o.version ?? '1.1'}\r\n${host}Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n${origins}${o.extra ?? ''}\r\n`);
  if (o.after !== undefined) await c.write(o.after);
  await within(
    (async () => {
      while (!c.received.includes('\r\n\r\n') && !c.isClosed) await once(c.socket, 'data').catch(() => undefined);
    })(),
    5000,
    'the handshake answer',
  );
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(c.received.toString('latin1', 0, 16));
  c.destroy();
  return m === null ? 0 : Number(m[1]);
}

describe('WebSockets handshake: Origin (default same-origin)', () => {
  it('refuses a cross-site Origin and Origin: null with 403, on both server paths, and runs no handler', async () => {
    for (const s of await servers()) {
      for (const origin of ['https://evil.example', 'http://127.0.0.1:1', `http://127.0.0.2:${s.port}`, `http://127.0.0.1:${s.port}.evil.example`, 'null', 'not an origin']) {
        expect(await handshake(s.port, { origin: [origin] }), `${s.name} ${origin}`).toBe(403);
      }
      // Two Origin fields: no browser sends that.
      expect(await handshake(s.port, { origin: [`http://127.0.0.1:${s.port}`, 'https://evil.example'] }), s.name).toBe(403);
      expect(s.sessions(), s.name).toBe(0);
    }
  });

  it('accepts no Origin (a non-browser client) and the request’s own origin, letter case and default ports aside', async () => {
    for (const s of await servers()) {
      expect(await handshake(s.port), s.name).toBe(101);
      expect(await handshake(s.port, { origin: [`http://127.0.0.1:${s.port}`] }), s.name).toBe(101);
      // The Host as the client wrote it: case-insensitive, the scheme's default port optional on either side.
      expect(await handshake(s.port, { host: 'App.Example', origin: ['http://app.example'] }), s.name).toBe(101);
      expect(await handshake(s.port, { host: 'app.example:80', origin: ['HTTP://APP.EXAMPLE'] }), s.name).toBe(101);
      expect(await handshake(s.port, { host: 'app.example', origin: ['http://app.example:80'] }), s.name).toBe(101);
      expect(await handshake(s.port, { host: 'app.example', origin: ['https://app.example'] }), s.name).toBe(101);
      expect(await handshake(s.port, { host: 'app.example:443', origin: ['https://app.example'] }), s.name).toBe(101);
      expect(await handshake(s.port, { host: '[::1]:8080', origin: ['http://[::1]:8080'] }), s.name).toBe(101);
      // Another port of the same host is another origin.
      expect(await handshake(s.port, { host: 'app.example:8080', origin: ['http://app.example'] }), s.name).toBe(403);
      expect(await handshake(s.port, { host: 'app.example', origin: ['http://app.example:8080'] }), s.name).toBe(403);
      expect(await handshake(s.port, { host: 'app.example:80', origin: ['https://app.example'] }), s.name).toBe(403);
      expect(await handshake(s.port, { host: 'app.example', origin: ['http://app.example.evil'] }), s.name).toBe(403);
      expect(s.sessions(), s.name).toBe(8);
    }
  });

  it("'any' (or false) accepts every Origin, null included; true is 'same-origin'", async () => {
    for (const checkOrigin of ['any', false] as const) {
      for (const s of await servers({ checkOrigin })) {
        expect(await handshake(s.port, { origin: ['https://evil.example'] }), s.name).toBe(101);
        expect(await handshake(s.port, { origin: ['null'] }), s.name).toBe(101);
      }
    }
    for (const s of await servers({ checkOrigin: true })) {
      expect(await handshake(s.port, { origin: ['https://evil.example'] }), s.name).toBe(403);
      expect(await handshake(s.port), s.name).toBe(101);
    }
  });

  it('a list allows exactly its origins, compared as origins; null only when listed', async () => {
    for (const s of await servers({ checkOrigin: ['HTTPS://App.Example:443', 'http://localhost:5173', 'null'] })) {
      expect(await handshake(s.port, { origin: ['https://app.example'] }), s.name).toBe(101);
      expect(await handshake(s.port, { origin: ['http://LOCALHOST:5173'] }), s.name).toBe(101);
      expect(await handshake(s.port, { origin: ['null'] }), s.name).toBe(101);
      expect(await handshake(s.port, { origin: ['http://app.example'] }), s.name).toBe(403);
      expect(await handshake(s.port, { origin: ['https://app.example:8443'] }), s.name).toBe(403);
      expect(await handshake(s.port), s.name).toBe(403);
    }
    for (const s of await servers({ checkOrigin: ['https://app.example'] })) expect(await handshake(s.port, { origin: ['null'] }), s.name).toBe(403);
  });

  it('a function decides alone, and sees the Origin (null when absent)', async () => {
    const seen: (string | null)[] = [];
    const [s] = await servers({
      checkOrigin: (origin) => {
        seen.push(origin);
        return origin === null || origin === 'https://ok.example';
      },
    });
    expect(await handshake(s!.port)).toBe(101);
    expect(await handshake(s!.port, { origin: ['https://ok.example'] })).toBe(101);
    expect(await handshake(s!.port, { origin: ['https://no.example'] })).toBe(403);
    expect(seen).toEqual([null, 'https://ok.example', 'https://no.example']);
  });

  it('refuses a checkOrigin it cannot read with ArgumentError', async () => {
    const bad: unknown[] = ['same-site', 'https://app.example', ['https://app.example/path'], ['app.example'], ['https://app.example?x'], ['https://user@app.example'], [1], 1, null];
    for (const checkOrigin of bad) {
      await expect(WebSockets.listen(echo, { port: 0, host: '127.0.0.1', checkOrigin: checkOrigin as never }), JSON.stringify(checkOrigin)).rejects.toBeInstanceOf(ArgumentError);
    }
    await expect(WebSockets.listen(echo, { port: 0, checkOrigin: 'same-site' as never })).rejects.toThrow(/checkOrigin must be 'same-origin', 'any'/);
  });
});

describe('WebSockets handshake: HTTP/1.0 and bodies', () => {
  it('refuses an HTTP/1.0 upgrade with 400 on both paths', async () => {
    for (const s of await servers()) {
      expect(await handshake(s.port, { version: '1.0' }), s.name).toBe(400);
      expect(s.sessions(), s.name).toBe(0);
    }
  });

  it('refuses an upgrade declaring a body (Content-Length, Transfer-Encoding) with 400, its bytes never read as frames', async () => {
    // The "body" is a valid masked text frame: were it read as a frame, the echo would run.
    const smuggled = frame(1, 'smuggled');
    for (const s of await servers()) {
      expect(await handshake(s.port, { extra: `Content-Length: ${smuggled.length}\r\n`, after: smuggled }), s.name).toBe(400);
      const chunked = Buffer.concat([Buffer.from(`${smuggled.length.toString(16)}\r\n`), smuggled, Buffer.from('\r\n0\r\n\r\n')]);
      expect(await handshake(s.port, { extra: 'Transfer-Encoding: chunked\r\n', after: chunked }), s.name).toBe(400);
      expect(s.sessions(), s.name).toBe(0);
      // An empty body is no body.
      expect(await handshake(s.port, { extra: 'Content-Length: 0\r\n' }), s.name).toBe(101);
    }
  });
});

describe('WebSockets client: the close code it sent when the server broke the protocol', () => {
  /** A server that completes the handshake, then sends `bad`; returns what the client's receive() and closeCode said, and the code it sent. */
  async function against(bad: Buffer, options: { maxFrameSize?: number } = {}): Promise<{ rejected: unknown; closeCode: number | null; sent: number }> {
    const server = net.createServer();
    onCleanup(() => new Promise<void>((r) => server.close(() => r())));
    const got: Buffer[] = [];
    server.on('connection', (socket) => {
      let buf = Buffer.alloc(0);
      let upgraded = false;
      socket.on('error', () => {});
      socket.on('data', (chunk: Buffer) => {
        if (upgraded) return void got.push(chunk);
        buf = Buffer.concat([buf, chunk]);
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const key = /sec-websocket-key: *(\S+)/i.exec(buf.toString('latin1', 0, end))![1]!;
        const accept = createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
        socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
        socket.write(bad);
        upgraded = true;
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as net.AddressInfo).port;
    let rejected: unknown = null;
    let closeCode: number | null = null;
    await WebSockets.open(
      `ws://127.0.0.1:${port}/`,
      async (ws) => {
        rejected = await ws.receive().then(
          () => null,
          (e: unknown) => e,
        );
        closeCode = ws.closeCode;
      },
      options,
    ).catch(() => undefined);
    const bytes = Buffer.concat(got);
    const key = bytes.subarray(2, 6);
    return { rejected, closeCode, sent: ((bytes[6]! ^ key[0]!) << 8) | (bytes[7]! ^ key[1]!) };
  }

  it('reports 1002, 1007 and 1009 (the code it sent), not 1006', async () => {
    const cases: [string, Buffer, number, { maxFrameSize?: number }][] = [
      ['a masked server frame', frame(1, 'masked', { mask: true }), 1002, {}],
      ['a reserved opcode', frame(3, 'x', { mask: false }), 1002, {}],
      ['text that is not UTF-8', frame(1, Buffer.from([0xc3, 0x28]), { mask: false }), 1007, {}],
      ['a frame over maxFrameSize', frame(2, Buffer.alloc(64), { mask: false }), 1009, { maxFrameSize: 16 }],
    ];
    for (const [what, bad, code, options] of cases) {
      const r = await against(bad, options);
      expect(r.sent, what).toBe(code);
      expect(r.closeCode, what).toBe(code);
      expect(r.rejected, what).toBeInstanceOf(WebSocketError);
      expect(r.rejected, what).toMatchObject({ closeCode: code });
      expect((r.rejected as Error).cause, what).toBeInstanceOf(Error);
    }
  });
});
