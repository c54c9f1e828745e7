/**
 * What the server reads of a plain connection before asking `server.protocol`: the taps declare
 * the prefaces their protocols open with (`tap({ name, preface }, fn)`), the server reads until
 * the bytes hold one or fit none, never past the longest, and reads nothing ahead when no tap
 * declared one. On TLS, without protocol taps, it offers by ALPN only what its HTTP/1 loop speaks.
 */
import { once } from 'node:events';
import net from 'node:net';
import tls from 'node:tls';
import { describe, expect, it } from 'vitest';
import { ArgumentError, createKernel, definePlugin, Response, serve, type Kernel } from '../../../kernel/index.js';
import { selfSignedCertificate } from '../../../tls/self-signed.js';
import { MAX_PREFACE_BYTES, type ProtocolInfo } from '../../../kernel/protocol.js';
import { forceCloseAfter } from '../../helpers/cleanup.js';
import { get, onCleanup, rawClient, startServer, within } from '../../helpers/server.js';

async function kernelWith(setup: (kernel: Kernel) => void): Promise<Kernel> {
  const kernel = createKernel().register(definePlugin({ name: 'prefaces-test', register: setup }));
  await kernel.ready();
  onCleanup(() => kernel.close());
  return kernel;
}

const b = (s: string): Buffer => Buffer.from(s, 'latin1');
const H2 = 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n';

/** What a tap saw when it was asked: the head, and how much of the socket had been read. */
interface Seen {
  tap: string;
  head: string;
  bytesRead: number;
}

/**
 * A tap declaring `preface` that records what it saw and claims a connection starting with its
 * preface: it answers `<name>:<everything the client sent>` and closes.
 */
function claimer(k: Kernel, name: string, preface: string, seen: Seen[]): void {
  k.hooks.server.protocol.tap({ name, preface: b(preface) }, (socket, info: ProtocolInfo) => {
    const head = Buffer.from(info.head).toString('latin1');
    seen.push({ tap: name, head, bytesRead: (socket as net.Socket).bytesRead });
    if (!head.startsWith(preface)) return undefined;
    let all = head;
    socket.on('data', (d: Buffer) => {
      all += d.toString('latin1');
      if (all.endsWith('.')) socket.end(`${name}:${all}`);
    });
    socket.resume();
    return true;
  });
}

describe('server.protocol taps that declare a preface', () => {
  it('the server reads up to the preface and no further: what follows stays in the socket for the taker', async () => {
    const seen: Seen[] = [];
    const kernel = await kernelWith((k) => claimer(k, 'hello', 'HELLO', seen));
    const { port } = await startServer(() => new Response(200, 'h1'), { kernel });
    const c = await rawClient(port);
    await c.write('HELLO and the rest, in one write.');
    expect((await c.untilClosed()).toString('latin1')).toBe('hello:HELLO and the rest, in one write.');
    expect(seen).toEqual([{ tap: 'hello', head: 'HELLO', bytesRead: 5 }]);
  });

  it('with several prefaces, reading goes on while the bytes may still become any of them, and stops at the first whole one', async () => {
    const seen: Seen[] = [];
    // Both begin with "PR": two bytes decide nothing.
    const kernel = await kernelWith((k) => {
      claimer(k, 'proxy', 'PROXY ', seen);
      claimer(k, 'h2', H2, seen);
    });
    const { port } = await startServer((req) => new Response(200, `h1 ${req.target}`), { kernel });

    const p = await rawClient(port);
    await p.write('PR');
    await p.write('OXY TCP4 and so on.');
    expect((await p.untilClosed()).toString('latin1')).toBe('proxy:PROXY TCP4 and so on.');
    expect(seen).toEqual([{ tap: 'proxy', head: 'PROXY ', bytesRead: 6 }]);

    seen.length = 0;
    const h = await rawClient(port);
    await h.write(`${H2}frames.`);
    expect((await h.untilClosed()).toString('latin1')).toBe(`h2:${H2}frames.`);
    // The proxy tap (first) declined the HTTP/2 preface; reading went on to all 24 bytes of it.
    expect(seen).toEqual([
      { tap: 'proxy', head: H2, bytesRead: 24 },
      { tap: 'h2', head: H2, bytesRead: 24 },
    ]);

    // Fits neither: HTTP/1, answered at once, also for a request shorter than both prefaces.
    const g = await rawClient(port);
    await g.write('GET / HTTP/1.0\r\n\r\n');
    expect((await g.response({ timeout: 2000 })).text).toBe('h1 /');
  });

  it('a connection no tap claims goes on to HTTP/1 with the listeners of one that was never looked at', async () => {
    const sockets: net.Socket[] = [];
    const capture = (k: Kernel): void => {
      k.hooks.server.connection.tap('capture', (socket) => void sockets.push(socket));
    };
    const plain = await kernelWith(capture);
    const detecting = await kernelWith((k) => {
      capture(k);
      claimer(k, 'hello', 'HELLO', []);
    });
    const counts: Record<string, number>[] = [];
    for (const kernel of [plain, detecting]) {
      const { port } = await startServer(() => new Response(200, 'h1'), { kernel });
      const c = await rawClient(port);
      await c.write(get('/'));
      expect((await c.response()).text).toBe('h1');
      const socket = sockets.at(-1)!;
      counts.push(Object.fromEntries(['data', 'error', 'end', 'close', 'drain'].map((e) => [e, socket.listenerCount(e)])));
    }
    expect(counts[1]).toEqual(counts[0]);
  });

  it('a tap that declares no preface is asked at accept, with nothing read: HTTP/1 reads the request', async () => {
    const seen: { head: number; bytesRead: number }[] = [];
    const kernel = await kernelWith((k) =>
      k.hooks.server.protocol.tap('alpn-only', (socket, info) => {
        seen.push({ head: info.head.length, bytesRead: (socket as net.Socket).bytesRead });
      }),
    );
    const { port } = await startServer((req) => new Response(200, `h1 ${req.target}`), { kernel });
    const c = await rawClient(port);
    await c.write(get('/a'));
    expect((await c.response()).text).toBe('h1 /a');
    expect(seen).toEqual([{ head: 0, bytesRead: 0 }]);
    // The HTTP/2 preface then meets HTTP/1: 400.
    const d = await rawClient(port);
    await d.write(H2);
    expect((await d.untilClosed()).subarray(0, 12).toString('latin1')).toBe('HTTP/1.1 400');
  });

  it('a preface that is not 1 to MAX_PREFACE_BYTES bytes is refused when tapped', async () => {
    const errors: unknown[] = [];
    await kernelWith((k) => {
      for (const preface of ['PRI' as never, new Uint8Array(0), new Uint8Array(MAX_PREFACE_BYTES + 1), null as never]) {
        try {
          k.hooks.server.protocol.tap({ name: 'bad', preface }, () => undefined);
        } catch (err) {
          errors.push(err);
        }
      }
      // The largest is fine.
      k.hooks.server.protocol.tap({ name: 'big', preface: new Uint8Array(MAX_PREFACE_BYTES) }, () => undefined);
    });
    expect(errors).toHaveLength(4);
    expect(errors.every((e) => e instanceof ArgumentError)).toBe(true);
    expect((errors[0] as Error).message).toBe("server.protocol.tap('bad'): preface must be a Uint8Array of 1 to 1024 bytes, the bytes a connection of the tap's protocol opens with, got string");
  });

  it('a misspelt tap option is refused with the nearest valid one, on this hook and on every other', async () => {
    const errors: unknown[] = [];
    await kernelWith((k) => {
      const tries = [
        () => k.hooks.server.protocol.tap({ name: 'typo', prefce: b('PRI') } as never, () => undefined),
        () => k.hooks.client.poolKey.tap({ name: 'typo', stag: 1 } as never, (key) => key),
        () => k.hooks.client.onRetry.tapPromise({ name: 'typo', preface: b('PRI') } as never, async () => undefined),
      ];
      for (const t of tries) {
        try {
          t();
        } catch (err) {
          errors.push(err);
        }
      }
    });
    expect(errors.map((e) => (e instanceof ArgumentError ? e.message : e))).toEqual([
      `server.protocol.tap('typo'): unknown option "prefce" (did you mean preface?)`,
      `client.poolKey.tap('typo'): unknown option "stag" (did you mean stage?)`,
      expect.stringContaining(`client.onRetry.tapPromise('typo'): unknown option "preface"`),
    ]);
  });
});

describe('ALPN without protocol taps', () => {
  it('offers only what the HTTP/1 loop speaks from the ALPNProtocols given', async () => {
    const cert = selfSignedCertificate();
    const server = forceCloseAfter(await serve(() => new Response(200, 'h1'), { port: 0, tls: { key: cert.key, cert: cert.cert, ALPNProtocols: ['acme-tls/1', 'http/1.1'] } }));
    const socket = tls.connect({ host: '127.0.0.1', port: server.port, ca: cert.cert, servername: 'localhost', ALPNProtocols: ['acme-tls/1', 'http/1.1'] });
    onCleanup(() => void socket.destroy());
    await within(once(socket, 'secureConnect'), 3000, 'the TLS handshake');
    expect(socket.alpnProtocol).toBe('http/1.1');
  });
});
