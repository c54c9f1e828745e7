/**
 * The PROXY protocol on a switchyard server, driven with raw sockets on loopback: v1 and v2
 * headers (whole, split byte by byte, with the request in the same write), what `peerAddr()`
 * then reports over HTTP/1.1, h2c and TLS (HTTP/1.1 and h2 by ALPN), trusted and untrusted
 * sources, and hostile input (none, garbage, oversize, a bad v2 signature, silence), each
 * refused with the server still serving.
 */
import { Buffer } from 'node:buffer';
import http2 from 'node:http2';
import net from 'node:net';
import tls from 'node:tls';
import { describe, expect, it } from 'vitest';
import { createKernel, Response, type Kernel, type ServeOptions } from '../../../kernel/index.js';
import { H2_PREFACE } from '../../../kernel/protocol.js';
import { clientOf, parseProxyHeader, presets, proxyProtocol, V2_SIGNATURE, WebSockets } from '../../../plugins/index.js';
import { selfSignedCertificate } from '../../../tls/self-signed.js';
import { closeKernelAfter, destroyAfter, forceCloseAfter } from '../../helpers/cleanup.js';
import { RawClient, startServer, startStreamServer, waitFor, within } from '../../helpers/server.js';

const CERT = selfSignedCertificate({ hosts: ['localhost', '127.0.0.1'] });

async function kernel(): Promise<Kernel> {
  const k = await createKernel()
    .register([...presets.defaults, proxyProtocol])
    .ready();
  return closeKernelAfter(k);
}

/** A stream server answering each request with the peer it sees, as `ip:port`. */
async function peerServer(options: ServeOptions): Promise<number> {
  const k = await kernel();
  const { port } = await startStreamServer(
    async (stream) => {
      await stream.closeWrite(String(stream.peerAddr()));
    },
    { kernel: k, ...options },
  );
  return port;
}

/** Connects (from `localAddress` when given) and writes each part in its own write, waiting for the kernel to take each. */
async function connect(port: number, localAddress?: string): Promise<RawClient> {
  const socket = net.connect({ host: '127.0.0.1', port, ...(localAddress !== undefined ? { localAddress } : {}) });
  socket.setNoDelay(true);
  const c = new RawClient(socket);
  await within(new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject)), 3000, 'connect');
  return c;
}

const GET = 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n';

function v2(command: number, family: number, addresses: Buffer, tlvs: Buffer = Buffer.alloc(0)): Buffer {
  const len = Buffer.alloc(2);
  len.writeUInt16BE(addresses.length + tlvs.length);
  return Buffer.concat([Buffer.from(V2_SIGNATURE), Buffer.from([0x20 | command, family]), len, addresses, tlvs]);
}

function inet(src: string, dst: string, sport: number, dport: number): Buffer {
  const b = Buffer.alloc(12);
  src.split('.').forEach((x, i) => (b[i] = Number(x)));
  dst.split('.').forEach((x, i) => (b[4 + i] = Number(x)));
  b.writeUInt16BE(sport, 8);
  b.writeUInt16BE(dport, 10);
  return b;
}

function inet6(src: string, dst: string, sport: number, dport: number): Buffer {
  const b = Buffer.alloc(36);
  const put = (a: string, at: number): void => {
    const [head, tail] = a.split('::') as [string, string | undefined];
    const h = head === '' ? [] : head.split(':');
    const t = tail === undefined || tail === '' ? [] : tail.split(':');
    const words = [...h, ...new Array<string>(8 - h.length - t.length).fill('0'), ...t];
    words.forEach((w, i) => b.writeUInt16BE(parseInt(w, 16), at + i * 2));
  };
  put(src, 0);
  put(dst, 16);
  b.writeUInt16BE(sport, 32);
  b.writeUInt16BE(dport, 34);
  return b;
}

/** Sends `parts` one write each, then reads the response text (the body), or null when the server closes without answering. */
async function ask(port: number, parts: (string | Uint8Array)[], localAddress?: string): Promise<string | null> {
  const c = await connect(port, localAddress);
  for (const p of parts) await c.write(p);
  const received = await c.untilClosed();
  if (received.length === 0) return null;
  const text = received.toString('latin1');
  expect(text).toMatch(/^HTTP\/1\.1 200 /);
  return text.slice(text.indexOf('\r\n\r\n') + 4);
}

describe('PROXY protocol v1', () => {
  it('peerAddr() is the relayed client, for TCP4 and TCP6 headers', async () => {
    const port = await peerServer({ proxyProtocol: true });
    expect(await ask(port, [`PROXY TCP4 192.0.2.10 198.51.100.1 4711 443\r\n`, GET])).toBe('192.0.2.10:4711');
    expect(await ask(port, [`PROXY TCP6 2001:db8::7 2001:db8::1 65535 443\r\n`, GET])).toBe('[2001:db8::7]:65535');
  });

  it('reads a header split byte by byte, and one sent in the same write as the request', async () => {
    const port = await peerServer({ proxyProtocol: true });
    const header = `PROXY TCP4 203.0.113.5 198.51.100.1 1234 80\r\n`;
    expect(await ask(port, [...header].concat(GET))).toBe('203.0.113.5:1234');
    expect(await ask(port, [header + GET])).toBe('203.0.113.5:1234');
  });

  it("UNKNOWN keeps the connection's own address", async () => {
    const port = await peerServer({ proxyProtocol: true });
    const body = await ask(port, ['PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n', GET]);
    expect(body).toMatch(/^127\.0\.0\.1:\d+$/);
  });

  it.each([
    ['no header at all', GET],
    ['garbage', 'HELLO WORLD\r\n\r\n'],
    ['a lowercase prefix', 'proxy TCP4 192.0.2.1 192.0.2.2 1 2\r\n'],
    ['two spaces', 'PROXY TCP4  192.0.2.1 192.0.2.2 1 2\r\n'],
    ['an IPv6 address in TCP4', 'PROXY TCP4 ::1 192.0.2.2 1 2\r\n'],
    ['a port past 65535', 'PROXY TCP4 192.0.2.1 192.0.2.2 65536 2\r\n'],
    ['a port with a leading zero', 'PROXY TCP4 192.0.2.1 192.0.2.2 01 2\r\n'],
    ['a bare LF', 'PROXY TCP4 192.0.2.1 192.0.2.2 1 2\n'],
    ['a missing port', 'PROXY TCP4 192.0.2.1 192.0.2.2 1\r\n'],
    ['an unknown protocol', 'PROXY UDP4 192.0.2.1 192.0.2.2 1 2\r\n'],
    ['a header longer than 107 bytes', `PROXY UNKNOWN ${'x'.repeat(100)}\r\n`],
  ])('refuses %s: closed without an answer, and the server goes on serving', async (_what, bytes) => {
    const port = await peerServer({ proxyProtocol: true });
    expect(await ask(port, [bytes, GET])).toBeNull();
    expect(await ask(port, ['PROXY TCP4 192.0.2.10 198.51.100.1 4711 443\r\n', GET])).toBe('192.0.2.10:4711');
  });

  it('refuses an overlong v1 header as soon as 107 bytes came without its end, not when the peer stops', async () => {
    const port = await peerServer({ proxyProtocol: true, readHeaderTimeout: 30_000 });
    const c = await connect(port);
    await c.write(`PROXY UNKNOWN ${'y'.repeat(200)}`);
    expect((await c.untilClosed(3000)).length).toBe(0);
  });

  it('drops a connection whose header does not come whole within readHeaderTimeout', async () => {
    const port = await peerServer({ proxyProtocol: true, readHeaderTimeout: 300 });
    const c = await connect(port);
    await c.write('PROXY TCP4 192.0.2.1 ');
    expect((await c.untilClosed(3000)).length).toBe(0);
    const silent = await connect(port);
    expect((await silent.untilClosed(3000)).length).toBe(0);
  });
});

describe('PROXY protocol v2', () => {
  it('INET and INET6 over STREAM give the client; TLVs are skipped', async () => {
    const port = await peerServer({ proxyProtocol: true });
    expect(await ask(port, [v2(1, 0x11, inet('192.0.2.33', '198.51.100.1', 50000, 443)), GET])).toBe('192.0.2.33:50000');
    const tlvs = Buffer.concat([Buffer.from([0x01, 0x00, 0x02]), Buffer.from('h2'), Buffer.from([0x04, 0x00, 0x00]), Buffer.from([0xee, 0x00, 0x05]), Buffer.from('abcde')]);
    expect(await ask(port, [v2(1, 0x21, inet6('2001:db8::42', '2001:db8::1', 8080, 443), tlvs), GET])).toBe('[2001:db8::42]:8080');
  });

  it('a TLV whose own length runs past the header cannot make the reader go past it', async () => {
    const port = await peerServer({ proxyProtocol: true });
    // One TLV claiming 60000 bytes inside a header whose length says 3 more: skipped, not followed.
    const lying = Buffer.from([0xe0, 0xea, 0x60]);
    expect(await ask(port, [Buffer.concat([v2(1, 0x11, inet('192.0.2.1', '192.0.2.2', 1, 2), lying), Buffer.from(GET)])])).toBe('192.0.2.1:1');
  });

  it("LOCAL and AF_UNSPEC keep the connection's own address", async () => {
    const port = await peerServer({ proxyProtocol: true });
    expect(await ask(port, [v2(0, 0x00, Buffer.alloc(0)), GET])).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(await ask(port, [v2(0, 0x11, inet('192.0.2.1', '192.0.2.2', 1, 2)), GET])).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(await ask(port, [v2(1, 0x00, Buffer.alloc(0)), GET])).toMatch(/^127\.0\.0\.1:\d+$/);
    // LOCAL discards the address block, family included: a family without its addresses is no error there.
    expect(await ask(port, [v2(0, 0x21, Buffer.alloc(0)), GET])).toMatch(/^127\.0\.0\.1:\d+$/);
  });

  it('reads a v2 header split byte by byte', async () => {
    const port = await peerServer({ proxyProtocol: true });
    const h = v2(1, 0x11, inet('192.0.2.77', '198.51.100.1', 7, 443));
    expect(await ask(port, [...[...h].map((b) => Uint8Array.of(b)), GET])).toBe('192.0.2.77:7');
  });

  it.each([
    [
      'a bad signature',
      (() => {
        const h = v2(1, 0x11, inet('192.0.2.1', '192.0.2.2', 1, 2));
        h[6] = 0x0b;
        return h;
      })(),
    ],
    [
      'version 1 in the binary form',
      (() => {
        const h = v2(1, 0x11, inet('192.0.2.1', '192.0.2.2', 1, 2));
        h[12] = 0x11;
        return h;
      })(),
    ],
    [
      'an unknown command',
      (() => {
        const h = v2(1, 0x11, inet('192.0.2.1', '192.0.2.2', 1, 2));
        h[12] = 0x22;
        return h;
      })(),
    ],
    ['an unknown family', v2(1, 0x41, inet('192.0.2.1', '192.0.2.2', 1, 2))],
    ['a datagram transport', v2(1, 0x12, inet('192.0.2.1', '192.0.2.2', 1, 2))],
    ['a length shorter than its addresses', v2(1, 0x21, inet('192.0.2.1', '192.0.2.2', 1, 2))],
    ['a length past the cap', v2(1, 0x11, inet('192.0.2.1', '192.0.2.2', 1, 2), Buffer.alloc(5000))],
  ])('refuses %s, and goes on serving', async (_what, bytes) => {
    const port = await peerServer({ proxyProtocol: true });
    expect(await ask(port, [bytes, GET])).toBeNull();
    expect(await ask(port, [v2(1, 0x11, inet('192.0.2.9', '192.0.2.2', 9, 2)), GET])).toBe('192.0.2.9:9');
  });

  it('refuses a header whose length passes the cap before its bytes come', () => {
    const h = v2(1, 0x11, inet('192.0.2.1', '192.0.2.2', 1, 2));
    h.writeUInt16BE(65535, 14);
    expect(() => parseProxyHeader(h.subarray(0, 16))).toThrow(/longer than the 4096 accepted/);
  });
});

describe('PROXY protocol sources', () => {
  it('believes the header only from the listed sources; from others it is required but ignored', async () => {
    const port = await peerServer({ proxyProtocol: ['127.0.0.2/32', '10.0.0.0/8'] });
    const header = 'PROXY TCP4 192.0.2.10 198.51.100.1 4711 443\r\n';
    expect(await ask(port, [header, GET], '127.0.0.2')).toBe('192.0.2.10:4711');
    expect(await ask(port, [header, GET], '127.0.0.1')).toMatch(/^127\.0\.0\.1:\d+$/);
    // The header stays required from every source: the specification forbids guessing.
    expect(await ask(port, [GET], '127.0.0.1')).toBeNull();
    expect(await ask(port, [GET], '127.0.0.2')).toBeNull();
  });

  it('is off without the option, and the option is checked when the server is made', async () => {
    const k = await kernel();
    const { port } = await startServer(() => new Response(200, 'plain'), { kernel: k });
    expect(await ask(port, [GET])).toBe('plain');
    await expect(startServer(() => new Response(200), { kernel: k, proxyProtocol: ['10.0.0.0/33'] })).rejects.toThrow(/proxyProtocol must be a list of IP addresses and CIDR ranges/);
    await expect(startServer(() => new Response(200), { kernel: k, proxyProtocol: 'yes' as unknown as boolean })).rejects.toThrow(/proxyProtocol must be true, false/);
    const bare = await createKernel().register(presets.defaults).ready();
    closeKernelAfter(bare);
    await expect(startServer(() => new Response(200), { kernel: bare, proxyProtocol: true })).rejects.toThrow(/proxyProtocol needs the proxy-protocol plugin/);
  });
});

describe('PROXY protocol under other protocols', () => {
  it('h2c prior knowledge after the header', async () => {
    const port = await peerServer({ proxyProtocol: true });
    const session = destroyAfter(
      http2.connect(`http://127.0.0.1:${port}`, {
        createConnection: () => {
          const s = net.connect({ host: '127.0.0.1', port });
          s.write('PROXY TCP4 192.0.2.20 198.51.100.1 2020 80\r\n');
          return s;
        },
      }),
    );
    const body = await within(h2Get(session), 3000, 'the h2c answer');
    expect(body).toBe('192.0.2.20:2020');
  });

  it('h2c when the header, the preface and the first frames come in one write', async () => {
    const port = await peerServer({ proxyProtocol: true });
    const c = await connect(port);
    const settings = Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]);
    await c.write(Buffer.concat([Buffer.from('PROXY TCP4 192.0.2.21 198.51.100.1 2121 80\r\n'), Buffer.from(H2_PREFACE), settings]));
    // The server's own SETTINGS frame: HTTP/2 took the connection, not HTTP/1 (which would answer 400).
    await within(
      new Promise<void>((resolve) => {
        const check = (): void => {
          if (c.received.length >= 9) resolve();
          else c.socket.once('data', check);
        };
        check();
      }),
      3000,
      'the server preface',
    );
    expect(c.received[3]).toBe(4);
  });

  it('WebSockets: ws.peerAddr() is the relayed client', async () => {
    const k = await kernel();
    const server = forceCloseAfter(
      await WebSockets.listen(
        async (ws) => {
          await ws.send(String(ws.peerAddr()));
        },
        { kernel: k, host: '127.0.0.1', port: 0, proxyProtocol: true },
      ),
    );
    const c = await connect(server.port);
    await c.write(
      'PROXY TCP6 2001:db8::9 2001:db8::1 9999 80\r\nGET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
    );
    const text = '[2001:db8::9]:9999';
    await waitFor(() => c.received.includes(text), 3000, 'the 101 and the first message');
    const received = c.received;
    const frame = received.subarray(received.indexOf('\r\n\r\n') + 4);
    expect(received.toString('latin1')).toMatch(/^HTTP\/1\.1 101 /);
    expect(frame[0]).toBe(0x81);
    expect(frame.subarray(2, 2 + frame[1]!).toString()).toBe(text);
  });

  it('close() drops a connection still sending its header by readHeaderTimeout, as a head in progress, and resolves', async () => {
    const k = await kernel();
    const { server, port } = await startServer(() => new Response(200), { kernel: k, proxyProtocol: true, readHeaderTimeout: 500 });
    const c = await connect(port);
    await c.write('PROXY TCP4 ');
    await waitFor(() => server.connectionCount === 1, 3000, 'the connection to be counted');
    await within(server.close(), 3000, 'close()');
    expect((await c.untilClosed()).length).toBe(0);
  });

  it('TLS: the header comes before the handshake, for HTTP/1.1 and h2 chosen by ALPN', async () => {
    const port = await peerServer({ proxyProtocol: true, tls: { key: CERT.key, cert: CERT.cert } });
    const tlsOver = (alpn: string): tls.TLSSocket => {
      const raw = net.connect({ host: '127.0.0.1', port });
      raw.write(v2(1, 0x11, inet('192.0.2.30', '198.51.100.1', 3030, 443)));
      return tls.connect({ socket: raw, ca: CERT.cert, servername: 'localhost', ALPNProtocols: [alpn] });
    };
    const h1 = destroyAfter(tlsOver('http/1.1'));
    const c = new RawClient(h1 as unknown as net.Socket);
    await within(new Promise<void>((r) => h1.once('secureConnect', r)), 3000, 'the TLS handshake');
    expect(h1.alpnProtocol).toBe('http/1.1');
    await c.write(GET);
    const text = (await c.untilClosed()).toString('latin1');
    expect(text.slice(text.indexOf('\r\n\r\n') + 4)).toBe('192.0.2.30:3030');
    const session = destroyAfter(http2.connect(`https://localhost:${port}`, { createConnection: () => tlsOver('h2') }));
    expect(await within(h2Get(session), 3000, 'the h2 answer')).toBe('192.0.2.30:3030');
  });

  it('TLS: a connection without the header is refused before any handshake', async () => {
    const port = await peerServer({ proxyProtocol: true, tls: { key: CERT.key, cert: CERT.cert } });
    const s = destroyAfter(tls.connect({ host: '127.0.0.1', port, ca: CERT.cert, servername: 'localhost' }));
    const err = await within(new Promise<Error>((resolve) => s.once('error', resolve)), 3000, 'the refusal');
    expect(String(err)).toMatch(/ECONNRESET|socket disconnected|EPIPE/);
  });

  it('clientOf() gives request handlers the relayed client', async () => {
    const k = await kernel();
    const { port } = await startServer((req) => new Response(200, clientOf(req)?.address ?? 'none'), { kernel: k, proxyProtocol: true });
    expect(await ask(port, ['PROXY TCP4 192.0.2.40 198.51.100.1 4040 80\r\n', GET])).toBe('192.0.2.40');
  });
});

function h2Get(session: http2.ClientHttp2Session): Promise<string> {
  return new Promise((resolve, reject) => {
    session.once('error', reject);
    const req = session.request({ ':path': '/' });
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.once('end', () => resolve(Buffer.concat(chunks).toString()));
    req.once('error', reject);
    req.end();
  });
}
