/**
 * The server's kernel hooks, driven by plugins made with `definePlugin` (plugin-api.md,
 * "Server hooks"): `onRequest` (answering, `exchange.setHeader`, `exchange.peerAddr`),
 * `onResponseHead`, `connection`, `protocol` (first bytes, claiming), `onUpgrade`
 * (claiming, declining), and a stack without server taps that never calls a hook.
 */
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { describe, expect, it, vi } from 'vitest';
import {
  ByteReader,
  BytesBody,
  createKernel,
  definePlugin,
  readResponse,
  Request,
  Response,
  Stage,
  Stream,
  streamHandler,
  type Kernel,
  type RequestHandler,
  type ServerExchange,
  type ServerInfo,
  type StreamHandler,
} from '../../../kernel/index.js';
import type { ProtocolHost, ProtocolInfo } from '../../../kernel/protocol.js';
import { get, onCleanup, rawClient, startServer, startStreamServer, waitConnections, within } from '../../helpers/server.js';

// ---- local helpers ---------------------------------------------------------------------------

/** A ready kernel with one plugin whose `register` is `setup`; closed after the test. */
async function kernelWith(setup: (kernel: Kernel) => void): Promise<Kernel> {
  const plugin = definePlugin({
    name: 'server-hooks-test',
    register(kernel) {
      setup(kernel);
    },
  });
  const kernel = createKernel().register(plugin);
  await kernel.ready();
  onCleanup(() => kernel.close());
  return kernel;
}

const H2_PREFACE = 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n';
/** A protocol tap that reads ahead as the h2c plugin's does: up to the HTTP/2 preface. */
const AS_H2C = { name: 'test', preface: Buffer.from(H2_PREFACE, 'latin1') };

/** Echoing stream handler: reads the body, answers `stream <target> <body>`. */
const streamApp: StreamHandler = async (s) => {
  const req = await s.startRead();
  const body = Buffer.from(await s.readAll()).toString();
  await s.write(`stream ${req.target}${body === '' ? '' : ` ${body}`}`);
};

// ---- server.onRequest --------------------------------------------------------------------------

describe('server.onRequest', () => {
  it('serve: the tap gets (request, exchange); a Response it returns answers without the handler', async () => {
    const calls: { req: Request; ex: ServerExchange }[] = [];
    const kernel = await kernelWith((k) => {
      k.hooks.server.onRequest.tap('test', (req, ex) => {
        calls.push({ req, ex });
        if (req.target === '/hooked') return new Response(203, 'from the hook');
      });
    });
    const handler = vi.fn<RequestHandler>((req) => new Response(200, `handler ${req.target}`));
    const { port, errors } = await startServer(handler, { kernel });
    const c = await rawClient(port);
    await c.write(get('/hooked') + get('/plain'));
    const [a, b] = await c.responses(2);
    expect([a!.status, a!.text]).toEqual([203, 'from the hook']);
    expect([b!.status, b!.text]).toEqual([200, 'handler /plain']);
    expect(handler).toHaveBeenCalledTimes(1);
    expect(handler.mock.calls[0]![0].target).toBe('/plain');
    expect(calls.map((x) => x.req.target)).toEqual(['/hooked', '/plain']);
    for (const { req, ex } of calls) {
      expect(req).toBeInstanceOf(Request);
      expect(ex.request).toBe(req);
      expect(ex.protocol).toBe('http/1.1');
      expect(ex.server.tls).toBe(false);
    }
    // The handler got the same request object the tap saw.
    expect(handler.mock.calls[0]![0]).toBe(calls[1]!.req);
    expect(errors).toEqual([]);
  });

  it('listen: the tap gets the Stream as exchange; a Response it returns answers without the stream handler', async () => {
    const exchanges: ServerExchange[] = [];
    const kernel = await kernelWith((k) => {
      k.hooks.server.onRequest.tap('test', (req, ex) => {
        exchanges.push(ex);
        if (req.target === '/hooked') return new Response(203, new BytesBody('hook body'), { headers: { 'X-From': 'hook' } });
      });
    });
    const handler = vi.fn(streamApp);
    const { port, errors } = await startStreamServer(handler, { kernel });
    // Two connections: whether a hook-answered GET keeps the connection alive is tested in
    // stream.test.ts ("a handler that never touches a bodyless GET ...").
    const c = await rawClient(port);
    await c.write(get('/hooked'));
    const a = await c.response();
    const d = await rawClient(port);
    await d.write('POST /plain HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nbody');
    const b = await d.response();
    expect([a.status, a.text, a.headers.get('X-From')]).toEqual([203, 'hook body', 'hook']);
    expect([b.status, b.text]).toEqual([200, 'stream /plain body']);
    expect(handler).toHaveBeenCalledTimes(1);
    expect(exchanges).toHaveLength(2);
    expect(exchanges[0]).toBeInstanceOf(Stream);
    expect(exchanges[1]).toBe(handler.mock.calls[0]![0]);
    expect(errors).toEqual([]);
  });

  it('an async tap (tapPromise) that declines lets the handler run', async () => {
    const kernel = await kernelWith((k) => {
      k.hooks.server.onRequest.tapPromise('test', async (req) => {
        await new Promise<void>((r) => setImmediate(r));
        req.headers.set('X-Seen-By-Tap', 'yes');
      });
    });
    const { port } = await startServer((req) => new Response(200, req.headers.get('X-Seen-By-Tap') ?? 'no'), { kernel });
    const c = await rawClient(port);
    await c.write(get('/'));
    expect((await c.response()).text).toBe('yes');
  });

  for (const mode of ['serve', 'listen'] as const) {
    it(`${mode}: exchange.setHeader adds a header to the handler's response, and exchange.peerAddr() is the client`, async () => {
      const peers: string[] = [];
      const kernel = await kernelWith((k) => {
        k.hooks.server.onRequest.tap({ name: 'test', stage: Stage.FIRST }, (req, ex) => {
          ex.setHeader('X-Request-Id', `id-${req.target.slice(1)}`);
          const addr = ex.peerAddr();
          peers.push(`${String(addr)}|${addr.address}|${addr.port}|${addr.family}`);
        });
      });
      const { port, errors } =
        mode === 'serve'
          ? await startServer((req) => new Response(200, `h ${req.target}`, { headers: { 'X-Handler': '1' } }), { kernel })
          : await startStreamServer(
              async (s) => {
                const req = await s.startRead();
                await s.readAll();
                s.setHeader('X-Handler', '1');
                await s.write(`h ${req.target}`);
              },
              { kernel },
            );
      const c = await rawClient(port);
      await c.write(get('/1') + get('/2'));
      const rs = await c.responses(2);
      expect(rs.map((r) => [r.text, r.headers.get('X-Request-Id'), r.headers.get('X-Handler')])).toEqual([
        ['h /1', 'id-1', '1'],
        ['h /2', 'id-2', '1'],
      ]);
      const local = c.socket.localPort!;
      expect(peers).toEqual([`127.0.0.1:${local}|127.0.0.1|${local}|IPv4`, `127.0.0.1:${local}|127.0.0.1|${local}|IPv4`]);
      expect(errors).toEqual([]);
    });
  }

  describe('serve: exchange.setHeader belongs to its own exchange', () => {
    async function setup(): Promise<{ port: number; errors: unknown[] }> {
      const kernel = await kernelWith((k) => {
        k.hooks.server.onRequest.tap('test', (req, ex) => {
          if (req.target === '/throw') ex.setHeader('X-Only-For', 'throw');
        });
      });
      return startServer(
        (req) => {
          if (req.target === '/throw') throw new Error('boom');
          return new Response(200, 'fine');
        },
        { kernel },
      );
    }

    it('a header set for an exchange whose handler threw never leaks into the next response', async () => {
      const { port, errors } = await setup();
      const c = await rawClient(port);
      await c.write(get('/throw') + get('/next'));
      const [a, b] = await c.responses(2);
      expect(a!.status).toBe(500);
      expect(b!.status).toBe(200);
      expect(b!.headers.has('X-Only-For')).toBe(false);
      expect(errors).toHaveLength(1);
    });

    it('it applies to the 500 the exchange ends with ("whatever response this exchange ends with")', async () => {
      const { port } = await setup();
      const c = await rawClient(port);
      await c.write(get('/throw'));
      const a = await c.response();
      expect(a.status).toBe(500);
      expect(a.headers.get('X-Only-For')).toBe('throw');
    });
  });
});

// ---- server.onResponseHead ----------------------------------------------------------------------

describe('server.onResponseHead', () => {
  async function taggingKernel(seen: { status: number; target: string | undefined }[]): Promise<Kernel> {
    return kernelWith((k) => {
      k.hooks.server.onResponseHead.tap('test', (res, req) => {
        seen.push({ status: res.status, target: req?.target });
        res.headers.set('X-Tagged', 'yes');
      });
    });
  }

  it('serve: a tap adds a header to every response (string, bytes, streamed, hook-made, HEAD)', async () => {
    const seen: { status: number; target: string | undefined }[] = [];
    const kernel = await taggingKernel(seen);
    const { port } = await startServer(
      (req) => {
        if (req.target === '/stream') return new Response(200, new BytesBody('streamed'));
        if (req.target === '/bytes') return new Response(201, Buffer.from('bytes'));
        if (req.target === '/empty') return new Response(204);
        return new Response(404, 'text');
      },
      { kernel },
    );
    const c = await rawClient(port);
    await c.write(get('/text') + get('/bytes') + get('/stream') + get('/empty') + 'HEAD /text HTTP/1.1\r\nHost: x\r\n\r\n');
    const rs = await c.responses(5, ['GET', 'GET', 'GET', 'GET', 'HEAD']);
    expect(rs.map((r) => [r.status, r.headers.get('X-Tagged')])).toEqual([
      [404, 'yes'],
      [201, 'yes'],
      [200, 'yes'],
      [204, 'yes'],
      [404, 'yes'],
    ]);
    expect(seen.map((s) => s.target)).toEqual(['/text', '/bytes', '/stream', '/empty', '/text']);
  });

  it('listen: a tap adds a header to every stream response (chunked, fixed-length, empty, streamHandler)', async () => {
    const seen: { status: number; target: string | undefined }[] = [];
    const kernel = await taggingKernel(seen);
    const { port } = await startStreamServer(
      async (s) => {
        const req = await s.startRead();
        await s.readAll();
        if (req.target === '/fixed') {
          s.setHeader('Content-Length', '5');
          await s.write('fixed');
        } else if (req.target === '/chunked') {
          await s.write('chunked');
        } else if (req.target === '/status') {
          s.setStatus(202);
        }
      },
      { kernel },
    );
    const c = await rawClient(port);
    await c.write(get('/fixed') + get('/chunked') + get('/status'));
    const rs = await c.responses(3);
    expect(rs.map((r) => [r.status, r.text, r.headers.get('X-Tagged')])).toEqual([
      [200, 'fixed', 'yes'],
      [200, 'chunked', 'yes'],
      [202, '', 'yes'],
    ]);
    expect(seen.map((s) => [s.status, s.target])).toEqual([
      [200, '/fixed'],
      [200, '/chunked'],
      [202, '/status'],
    ]);

    const { port: port2 } = await startStreamServer(
      streamHandler(() => new Response(200, 'via streamHandler')),
      { kernel },
    );
    const d = await rawClient(port2);
    await d.write(get('/sh'));
    const r = await d.response();
    expect([r.text, r.headers.get('X-Tagged')]).toEqual(['via streamHandler', 'yes']);
  });

  for (const mode of ['serve', 'listen'] as const) {
    it(`${mode}: a tap may still change the status`, async () => {
      const kernel = await kernelWith((k) => {
        k.hooks.server.onResponseHead.tap('test', (res) => {
          if (res.headers.get('X-Make-It') === '299') res.status = 299;
        });
      });
      const { port } =
        mode === 'serve'
          ? await startServer(() => new Response(200, 'x', { headers: { 'X-Make-It': '299' } }), { kernel })
          : await startStreamServer(
              async (s) => {
                await s.startRead();
                await s.readAll();
                s.setHeader('X-Make-It', '299');
                await s.write('x');
              },
              { kernel },
            );
      const c = await rawClient(port);
      await c.write(get('/'));
      const res = await c.response();
      expect([res.status, res.text]).toEqual([299, 'x']);
    });
  }

  it('a tap that appends to a Response returned for many requests does not pile up across requests', async () => {
    const kernel = await kernelWith((k) => {
      k.hooks.server.onResponseHead.tap('test', (res) => {
        res.headers.append('Vary', 'Origin');
      });
    });
    const shared = new Response(200, 'shared');
    const { port } = await startServer(() => shared, { kernel });
    const c = await rawClient(port);
    await c.write(get('/1') + get('/2') + get('/3'));
    const rs = await c.responses(3);
    expect(rs.map((r) => r.headers.getAll('Vary'))).toEqual([['Origin'], ['Origin'], ['Origin']]);
  });

  it('sees the 500 the server sends for a throwing handler (serve and listen)', async () => {
    const seen: { status: number; target: string | undefined }[] = [];
    const kernel = await taggingKernel(seen);
    const { port } = await startServer(
      () => {
        throw new Error('boom');
      },
      { kernel },
    );
    const c = await rawClient(port);
    await c.write(get('/serve-throws'));
    const a = await c.response();
    expect(a.status).toBe(500);
    const { port: port2 } = await startStreamServer(
      async (s) => {
        await s.startRead();
        throw new Error('boom');
      },
      { kernel },
    );
    const d = await rawClient(port2);
    await d.write(get('/listen-throws'));
    const b = await d.response();
    expect(b.status).toBe(500);
    expect(seen.map((s) => [s.status, s.target])).toEqual([
      [500, '/serve-throws'],
      [500, '/listen-throws'],
    ]);
    expect([a.headers.get('X-Tagged'), b.headers.get('X-Tagged')]).toEqual(['yes', 'yes']);
  });
});

// ---- server.connection --------------------------------------------------------------------------

describe('server.connection', () => {
  it('fires once per TCP connection, with the socket and the server info', async () => {
    const calls: { socket: unknown; info: ServerInfo }[] = [];
    const kernel = await kernelWith((k) => {
      k.hooks.server.connection.tap('test', (socket, info) => {
        calls.push({ socket, info });
      });
    });
    const { port } = await startServer((req) => new Response(200, req.target), { kernel });
    const a = await rawClient(port);
    await a.write(get('/1') + get('/2') + get('/3'));
    await a.responses(3);
    const b = await rawClient(port);
    await b.write(get('/4'));
    await b.response();
    expect(calls).toHaveLength(2);
    for (const { socket, info } of calls) {
      expect(socket).toBeInstanceOf(net.Socket);
      expect(info.tls).toBe(false);
      expect(info.options.port).toBe(0);
    }
    expect((calls[0]!.socket as net.Socket).remotePort).toBe(a.socket.localPort);
    expect((calls[1]!.socket as net.Socket).remotePort).toBe(b.socket.localPort);
  });

  it("counts what a connection read in bytesRead, although HTTP/1.1 reads it without 'data' events", async () => {
    const sockets: net.Socket[] = [];
    const kernel = await kernelWith((k) => {
      k.hooks.server.connection.tap('count', (socket) => void sockets.push(socket));
    });
    const { port } = await startServer((req) => new Response(200, req.target), { kernel });
    const a = await rawClient(port);
    const sent = get('/1') + get('/22');
    await a.write(sent);
    await a.responses(2);
    expect(sockets[0]!.bytesRead).toBe(Buffer.byteLength(sent));
  });
});

// ---- server.protocol ----------------------------------------------------------------------------

describe('server.protocol', () => {
  it('sees the first bytes on a plain listener; not claiming leaves the connection to HTTP/1', async () => {
    const infos: ProtocolInfo[] = [];
    const kernel = await kernelWith((k) => {
      k.hooks.server.protocol.tap(AS_H2C, (_socket, info) => {
        infos.push(info);
      });
    });
    const handler = vi.fn<RequestHandler>((req) => new Response(200, `h1 ${req.target}`));
    const { port } = await startServer(handler, { kernel });
    const c = await rawClient(port);
    await c.write(get('/first'));
    expect((await c.response()).text).toBe('h1 /first');
    await c.write(get('/second'));
    expect((await c.response()).text).toBe('h1 /second');
    expect(infos).toHaveLength(1);
    expect(infos[0]!.alpnProtocol).toBeNull();
    expect(infos[0]!.server.tls).toBe(false);
    // Not the preface: the first burst whole (read as 24 bytes, then the rest), so HTTP/1 parses it at once.
    expect(Buffer.from(infos[0]!.head).toString('latin1')).toBe(get('/first'));
  });

  it('a tap that claims the connection takes it over: HTTP/1 never runs on it', async () => {
    const kernel = await kernelWith((k) => {
      k.hooks.server.protocol.tap(AS_H2C, (socket, info) => {
        if (!Buffer.from(info.head).toString('latin1').startsWith('HELLO')) return;
        socket.write(`WORLD ${Buffer.from(info.head).toString('latin1')}`);
        socket.end();
        return true;
      });
    });
    const handler = vi.fn<RequestHandler>(() => new Response(200, 'h1'));
    const { port } = await startServer(handler, { kernel });
    const c = await rawClient(port);
    await c.write('HELLO custom protocol');
    const all = await c.untilClosed();
    expect(all.toString('latin1')).toBe('WORLD HELLO custom protocol');
    expect(handler).not.toHaveBeenCalled();
    // Another connection still speaks HTTP/1.
    const d = await rawClient(port);
    await d.write(get('/'));
    expect((await d.response()).text).toBe('h1');
  });

  it('gathers a preface arriving in pieces before asking; an unclaimed preface then gets 400', async () => {
    const heads: string[] = [];
    const kernel = await kernelWith((k) => {
      k.hooks.server.protocol.tap(AS_H2C, (_socket, info) => {
        heads.push(Buffer.from(info.head).toString('latin1'));
      });
    });
    const { port } = await startServer(() => new Response(200, 'h1'), { kernel });
    const c = await rawClient(port);
    await c.write(H2_PREFACE.slice(0, 10));
    await c.write(H2_PREFACE.slice(10));
    const all = await c.untilClosed();
    expect(heads).toEqual([H2_PREFACE]);
    expect(all.subarray(0, 12).toString('latin1')).toBe('HTTP/1.1 400');
  });

  it('reads no further than the preface: what follows it is still in the socket for the taker', async () => {
    const seen: { head: string; bytesRead: number; buffered: number }[] = [];
    const kernel = await kernelWith((k) => {
      k.hooks.server.protocol.tap(AS_H2C, (socket, info) => {
        const sock = socket as net.Socket;
        seen.push({ head: Buffer.from(info.head).toString('latin1'), bytesRead: sock.bytesRead, buffered: sock.readableLength });
        // Take it and read the rest itself: it arrives as the client sent it.
        let rest = '';
        sock.on('data', (d: Buffer) => {
          rest += d.toString('latin1');
          if (rest.endsWith('.')) sock.end(`rest:${rest}`);
        });
        sock.resume();
        return true;
      });
    });
    const { port } = await startServer(() => new Response(200, 'h1'), { kernel });
    const c = await rawClient(port);
    const after = 'frames after the preface, sent in the same write.';
    await c.write(H2_PREFACE + after);
    const all = await c.untilClosed();
    expect(seen).toEqual([{ head: H2_PREFACE, bytesRead: 24, buffered: 0 }]);
    expect(all.toString('latin1')).toBe(`rest:${after}`);
  });

  it('a request of exactly 24 bytes (the length of the preface) is answered without waiting for more', async () => {
    const kernel = await kernelWith((k) => void k.hooks.server.protocol.tap(AS_H2C, () => {}));
    const { port } = await startServer((req) => new Response(200, req.target), { kernel });
    const c = await rawClient(port);
    const req = 'GET /abcdef HTTP/1.0\r\n\r\n';
    expect(req.length).toBe(24);
    await c.write(req);
    expect((await c.response({ timeout: 2000 })).text).toBe('/abcdef');
  });

  it('HTTP/1 after the first bytes reads on as usual: pipelined requests, then a 4 MiB body', async () => {
    const kernel = await kernelWith((k) => void k.hooks.server.protocol.tap(AS_H2C, () => {}));
    const handler = vi.fn<RequestHandler>((req) => new Response(200, `${req.target} ${req.body instanceof Uint8Array ? req.body.length : 0}`));
    const { port } = await startServer(handler, { kernel, maxBodyBytes: 8 * 1024 * 1024 });
    const c = await rawClient(port);
    await c.write(get('/a') + get('/b') + get('/c'));
    expect((await c.responses(3)).map((r) => r.text)).toEqual(['/a 0', '/b 0', '/c 0']);
    const body = Buffer.alloc(4 * 1024 * 1024, 0x61);
    await c.write(Buffer.concat([Buffer.from(`POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n`), body]));
    expect((await c.response()).text).toBe(`/big ${body.length}`);
  });

  for (const withKernel of [true, false]) {
    it(`with no protocol tap (${withKernel ? 'a kernel without one' : 'no kernel'}), the HTTP/2 preface gets 400 and a close`, async () => {
      const kernel = withKernel ? await kernelWith((k) => void k.hooks.server.connection.tap('test', () => {})) : undefined;
      const handler = vi.fn<RequestHandler>(() => new Response(200, 'h1'));
      const { port } = await startServer(handler, kernel ? { kernel } : {});
      const c = await rawClient(port);
      await c.write(H2_PREFACE);
      const all = await c.untilClosed();
      expect(all.subarray(0, 12).toString('latin1')).toBe('HTTP/1.1 400');
      expect(handler).not.toHaveBeenCalled();
    });
  }
});

// ---- server.onUpgrade ---------------------------------------------------------------------------

describe('server.onUpgrade', () => {
  const UPGRADE = 'GET /chat HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: foo\r\n\r\n';

  it('a claiming tap gets (request, socket, info with the head bytes and the server), answers 101 and speaks raw bytes', async () => {
    const got: { req: Request; socket: Duplex; head: string }[] = [];
    const infos: { server: ServerInfo; host: ProtocolHost }[] = [];
    const onRequest = vi.fn();
    const kernel = await kernelWith((k) => {
      k.hooks.server.onRequest.tap('test', onRequest);
      k.hooks.server.onUpgrade.tap('test', (req, socket, { head, server, host }) => {
        if (req.headers.get('Upgrade') !== 'foo') return;
        infos.push({ server, host });
        got.push({ req, socket, head: Buffer.from(head).toString('latin1') });
        socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: foo\r\n\r\n');
        if (head.length > 0) socket.write(Buffer.concat([Buffer.from('echo:'), head]));
        socket.on('data', (d: Buffer) => socket.write(Buffer.concat([Buffer.from('echo:'), d])));
        // The server hands the socket over paused (h1-connection.ts offerUpgrade); the taker resumes it.
        socket.resume();
        return true;
      });
    });
    const handler = vi.fn<RequestHandler>(() => new Response(200, 'handler'));
    const { port, server } = await startServer(handler, { kernel });
    const sock = net.connect({ host: '127.0.0.1', port });
    onCleanup(() => sock.destroy());
    await new Promise<void>((r) => sock.once('connect', () => r()));
    sock.write(UPGRADE + 'early');
    const res = await within(readResponse(sock), 3000, 'the 101');
    expect(res.status).toBe(101);
    expect(res.headers.get('Upgrade')).toBe('foo');
    const reader = ByteReader.from(sock);
    const readText = async (n: number): Promise<string> => {
      let s = '';
      while (s.length < n) {
        const c = await within(reader.read(), 3000, 'echoed bytes');
        if (c === null) break;
        s += Buffer.from(c).toString('latin1');
      }
      return s;
    };
    expect(await readText('echo:early'.length)).toBe('echo:early');
    sock.write('ping');
    expect(await readText('echo:ping'.length)).toBe('echo:ping');
    expect(got).toHaveLength(1);
    expect(got[0]!.req.target).toBe('/chat');
    expect(got[0]!.head).toBe('early');
    // The tap learns its server from the info: the listener's options, and the server's lifecycle.
    expect(infos[0]!.server.tls).toBe(false);
    expect(infos[0]!.host.info).toBe(infos[0]!.server);
    expect(infos[0]!.host.closing).toBe(false);
    expect(handler).not.toHaveBeenCalled();
    expect(onRequest).not.toHaveBeenCalled();
    // The upgraded socket is no longer an HTTP/1 connection, but the server still counts it
    // (close() waits for it, forceClose() drops it) until it closes.
    expect(server.connectionCount).toBe(1);
    sock.destroy();
    await waitConnections(server, 0);
  });

  it('a declining tap leaves the request to onRequest and the handler, body and keep-alive intact', async () => {
    const upgrades: string[] = [];
    const onRequest = vi.fn();
    const kernel = await kernelWith((k) => {
      k.hooks.server.onRequest.tap('test', onRequest);
      k.hooks.server.onUpgrade.tap('test', (req) => {
        upgrades.push(req.target);
      });
    });
    const handler = vi.fn<RequestHandler>((req) => new Response(200, `handler ${req.target} ${Buffer.from(req.body as Uint8Array).toString()}`));
    const { port } = await startServer(handler, { kernel });
    const c = await rawClient(port);
    await c.write('POST /up HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: foo\r\nContent-Length: 4\r\n\r\nbody' + get('/after'));
    const [a, b] = await c.responses(2);
    expect(a!.text).toBe('handler /up body');
    expect(b!.text).toBe('handler /after ');
    expect(upgrades).toEqual(['/up']);
    expect(handler).toHaveBeenCalledTimes(2);
    expect(onRequest).toHaveBeenCalledTimes(2);
  });

  it('an HTTP/1.0 request with Upgrade is not offered to the taps: the handler answers it (RFC 9110 §7.8)', async () => {
    const upgrades: string[] = [];
    const kernel = await kernelWith((k) => {
      k.hooks.server.onUpgrade.tap('test', (req, socket) => {
        upgrades.push(req.target);
        socket.end('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: foo\r\n\r\n');
        return true;
      });
    });
    const { port } = await startServer((req) => new Response(200, `handler ${req.target}`), { kernel });
    const c = await rawClient(port);
    await c.write('GET /old HTTP/1.0\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: foo\r\n\r\n');
    const res = await c.response();
    expect(res.status).toBe(200);
    expect(res.text).toBe('handler /old');
    expect(upgrades).toEqual([]);
  });

  it('a declining tap on listen leaves the request to the stream handler', async () => {
    const kernel = await kernelWith((k) => {
      k.hooks.server.onUpgrade.tap('test', () => undefined);
    });
    const { port } = await startStreamServer(streamApp, { kernel });
    const c = await rawClient(port);
    await c.write(UPGRADE);
    expect((await c.response()).text).toBe('stream /chat');
  });
});

// ---- no server taps: nothing is called -------------------------------------------------------

describe('a stack without server taps', () => {
  type Spied = { name: string; spy: ReturnType<typeof vi.spyOn> }[];

  /**
   * Spies on call/callAsync/promise of every server hook. Done after `ready()`: tapping a
   * tapable hook resets those methods (dropping a spy set earlier), and the table is closed
   * to taps from `ready()` on, so spies set now stay in place.
   */
  function spyServerHooks(kernel: Kernel): Spied {
    const out: Spied = [];
    for (const [name, hook] of Object.entries(kernel.hooks.server)) {
      for (const method of ['call', 'callAsync', 'promise'] as const) {
        if (typeof (hook as Record<string, unknown>)[method] !== 'function') continue;
        out.push({ name: `${name}.${method}`, spy: vi.spyOn(hook as Record<string, (...a: unknown[]) => unknown>, method) });
      }
    }
    return out;
  }

  async function traffic(port: number): Promise<void> {
    const c = await rawClient(port);
    await c.write(get('/a') + 'POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc' + 'GET /up HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: foo\r\n\r\n' + get('/throw'));
    await c.responses(4);
    const d = await rawClient(port);
    await d.write(H2_PREFACE);
    await d.untilClosed();
  }

  it('never calls a server hook during requests (serve and listen)', async () => {
    const plugin = definePlugin({
      name: 'client-only',
      register(kernel) {
        kernel.hooks.client.onRequest.tap('client-only', () => undefined);
      },
    });
    const kernel = createKernel().register(plugin);
    await kernel.ready();
    onCleanup(() => kernel.close());
    const spies = spyServerHooks(kernel);
    expect(Object.values(kernel.tapped.server).every((h) => h === null)).toBe(true);

    const { port, errors } = await startServer(
      (req) => {
        if (req.target === '/throw') throw new Error('deliberate');
        return new Response(200, 'ok');
      },
      { kernel },
    );
    await traffic(port);
    const { port: port2 } = await startStreamServer(
      async (s) => {
        const req = await s.startRead();
        await s.readAll();
        if (req.target === '/throw') throw new Error('deliberate');
        await s.write('ok');
      },
      { kernel },
    );
    await traffic(port2);
    expect(errors.map((e) => (e.error as Error).message)).toEqual(['deliberate']);
    expect(spies.filter((s) => s.spy.mock.calls.length > 0).map((s) => s.name)).toEqual([]);
  });

  it('(control) the same spies do see a tapped hook being called', async () => {
    const plugin = definePlugin({
      name: 'observer',
      register(kernel) {
        kernel.hooks.server.onRequest.tap('observer', () => undefined);
        kernel.hooks.server.onResponseHead.tap('observer', () => undefined);
      },
    });
    const kernel = createKernel().register(plugin);
    await kernel.ready();
    onCleanup(() => kernel.close());
    const spies = spyServerHooks(kernel);
    const { port } = await startServer(() => new Response(200, 'ok'), { kernel });
    const c = await rawClient(port);
    await c.write(get('/'));
    await c.response();
    const called = spies.filter((s) => s.spy.mock.calls.length > 0).map((s) => s.name.split('.')[0]);
    expect(new Set(called)).toEqual(new Set(['onRequest', 'onResponseHead']));
  });
});
