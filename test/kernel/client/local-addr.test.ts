/**
 * `localAddr`: the source address of outbound connections, decided by binding it. Any
 * loopback address binds on Linux (`lo` holds 127.0.0.1/8), so 127.0.0.2 is the source the
 * server sees; an address of no interface here (192.0.2.1, TEST-NET: only bound, never sent
 * to) fails the request with `ArgumentError` before any byte leaves. The same on every path
 * that opens a connection: the kernel's HTTP/1.1, a forward proxy (proxy plugin), HTTP/2 over
 * TLS (h2 plugin), and the kernel's upgrade handshake (WebSockets).
 */
import { describe, expect, it } from 'vitest';
import { ArgumentError, Client, Headers, Request, Response, Transport, upgradeRequest, type Stream } from '../../../kernel/index.js';
import { cert, h2Kernel, startStreamServer as startH2StreamServer } from '../../helpers/h2.js';
import { newClient, okResponse, proxyKernel, rawServer, readRequests, rejection, since, startServer, text } from '../../helpers/client.js';

/** Not on any interface of this machine: binding it fails (EADDRNOTAVAIL). */
const FOREIGN = '192.0.2.1';

/** A raw server that answers every request and records the source address of each connection. */
async function recording() {
  const sources: string[] = [];
  const s = await rawServer((sock) => {
    sources.push(sock.remoteAddress ?? '');
    readRequests(sock, () => sock.write(okResponse('bound')));
  });
  return Object.assign(s, { sources });
}

/** The ArgumentError a request with an unbindable localAddr fails with. */
function expectBindRefused(err: Error, addr: string): void {
  expect(err).toBeInstanceOf(ArgumentError);
  expect((err as ArgumentError).code).toBe('SWY_ERR_ARGUMENT');
  expect(err.message).toContain(`localAddr ${addr}`);
  expect((err.cause as NodeJS.ErrnoException).code).toBe('EADDRNOTAVAIL');
}

describe('localAddr', () => {
  it("'127.0.0.1' binds the source address and works (Client and Transport)", async () => {
    const s = await recording();
    const c = newClient({ localAddr: '127.0.0.1' });
    expect(text(await c.get(`${s.origin}/`))).toBe('bound');
    const t = new Transport({ localAddr: '127.0.0.1' });
    expect(text(await newClient({ transport: t }).get(`${s.origin}/`))).toBe('bound');
    expect(s.sources).toEqual(['127.0.0.1', '127.0.0.1']);
    t.close();
  });

  it("'127.0.0.2' (loopback, not listed as an interface address) is the source the server sees", async () => {
    const s = await recording();
    const c = newClient({ localAddr: '127.0.0.2' });
    expect(text(await c.get(`${s.origin}/`))).toBe('bound');
    const t = new Transport({ localAddr: '127.0.0.2' });
    expect(text(await newClient({ transport: t }).get(`${s.origin}/`))).toBe('bound');
    expect(s.sources).toEqual(['127.0.0.2', '127.0.0.2']);
    t.close();
  });

  it('an address on no local interface fails the request with ArgumentError at the bind, before any connection', async () => {
    const s = await startServer(() => new Response(200, 'never'));
    const c = newClient({ localAddr: FOREIGN });
    const t0 = performance.now();
    expectBindRefused(await rejection(c.get(`${s.origin}/`)), FOREIGN);
    expect(since(t0)).toBeLessThan(1000);
    const t = new Transport({ localAddr: FOREIGN });
    expectBindRefused(await rejection(newClient({ transport: t }).get(`${s.origin}/`)), FOREIGN);
    expect(s.connections).toBe(0);
    t.close();
  });

  it('an interface name, a host name or a non-string is an ArgumentError at once', () => {
    for (const bad of ['lo', 'localhost', '127.0.0.256', 42]) {
      expect(() => new Client({ localAddr: bad as string })).toThrow(ArgumentError);
      expect(() => new Transport({ localAddr: bad as string })).toThrow(ArgumentError);
    }
  });
});

describe('localAddr through the plugins that open connections', () => {
  it('a forward proxy sees the bound source 127.0.0.2; an unbindable one is the same ArgumentError', async () => {
    // The proxy answers for the origin itself (.test never resolves: only the proxy can answer).
    const p = await recording();
    const kernel = await proxyKernel();
    const c = newClient({ kernel, proxy: `http://127.0.0.1:${p.port}`, localAddr: '127.0.0.2' });
    expect(text(await c.get('http://origin.test/'))).toBe('bound');
    expect(p.sources).toEqual(['127.0.0.2']);
    const bad = newClient({ kernel, proxy: `http://127.0.0.1:${p.port}`, localAddr: FOREIGN });
    expectBindRefused(await rejection(bad.get('http://origin.test/')), FOREIGN);
    expect(p.connections).toBe(1);
  });

  it('HTTP/2 over TLS binds the same way: the server sees 127.0.0.2; an unbindable one is the same ArgumentError', async () => {
    const sources: string[] = [];
    const { port } = await startH2StreamServer(
      async (st: Stream) => {
        sources.push(st.peerAddr().address);
        await st.write('served');
      },
      { secure: true },
    );
    const kernel = await h2Kernel();
    const c = newClient({ kernel, tlsConfig: { ca: cert.cert }, localAddr: '127.0.0.2' });
    const res = await c.get(`https://127.0.0.1:${port}/`);
    expect(text(res)).toBe('served');
    expect(res.protoMajor).toBe(2);
    expect(sources).toEqual(['127.0.0.2']);
    const bad = newClient({ kernel, tlsConfig: { ca: cert.cert }, localAddr: FOREIGN });
    expectBindRefused(await rejection(bad.get(`https://127.0.0.1:${port}/`)), FOREIGN);
  });
});

describe('localAddr of an upgrade handshake (upgradeRequest, under WebSockets.open)', () => {
  function upgrade(port: number): Request {
    const req = new Request('GET', '/up', {
      headers: new Headers([
        ['Connection', 'Upgrade'],
        ['Upgrade', 'echo'],
      ]),
      host: `127.0.0.1:${port}`,
    });
    req.url = `http://127.0.0.1:${port}/up`;
    return req;
  }

  it('binds 127.0.0.2; an unbindable address or an interface name is an ArgumentError', async () => {
    const sources: string[] = [];
    const s = await rawServer((sock) => {
      sources.push(sock.remoteAddress ?? '');
      sock.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n');
    });
    const { response, socket } = await upgradeRequest(upgrade(s.port), { localAddress: '127.0.0.2' });
    socket.destroy();
    expect(response.status).toBe(101);
    expect(sources).toEqual(['127.0.0.2']);
    expectBindRefused(await rejection(upgradeRequest(upgrade(s.port), { localAddress: FOREIGN })), FOREIGN);
    expect(await rejection(upgradeRequest(upgrade(s.port), { localAddress: 'lo' }))).toBeInstanceOf(ArgumentError);
    expect(s.connections).toBe(1);
  });
});
