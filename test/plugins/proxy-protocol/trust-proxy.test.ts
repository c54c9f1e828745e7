/**
 * `trustProxy`: what `clientOf(request)` reports from `X-Forwarded-*` and `Forwarded` (RFC
 * 7239), for trusted and untrusted peers, CIDR lists, hop counts and `true`; spoofing attempts
 * (an untrusted peer's headers, the other header family, a forged entry beyond the trusted
 * proxies, a malformed `Forwarded`). Raw sockets on loopback from 127.0.0.1 and 127.0.0.2, so a
 * test picks whether its peer is trusted.
 */
import net from 'node:net';
import http2 from 'node:http2';
import { describe, expect, it } from 'vitest';
import { createKernel, Response, type Kernel, type ServeOptions } from '../../../kernel/index.js';
import { clientOf, presets, proxyProtocol, type ForwardedClient } from '../../../plugins/index.js';
import { parseForwarded } from '../../../plugins/proxy-protocol/forwarded.js';
import { TrustList } from '../../../plugins/proxy-protocol/trust.js';
import { closeKernelAfter, destroyAfter } from '../../helpers/cleanup.js';
import { RawClient, startServer, startStreamServer, within } from '../../helpers/server.js';

async function kernel(): Promise<Kernel> {
  return closeKernelAfter(
    await createKernel()
      .register([...presets.defaults, proxyProtocol])
      .ready(),
  );
}

/** A server answering with `clientOf(request)` as JSON. */
async function clientServer(options: ServeOptions): Promise<number> {
  const { port } = await startServer((req) => new Response(200, JSON.stringify(clientOf(req))), { kernel: await kernel(), ...options });
  return port;
}

/** One request from `from` with the extra header lines; the client the server saw. */
async function ask(port: number, from: string, headers = '', host = 'direct.example'): Promise<ForwardedClient> {
  const socket = net.connect({ host: '127.0.0.1', port, localAddress: from });
  const c = new RawClient(socket);
  await within(new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject)), 3000, 'connect');
  await c.write(`GET / HTTP/1.1\r\nHost: ${host}\r\n${headers}Connection: close\r\n\r\n`);
  const res = await c.response();
  c.destroy();
  expect(res.status).toBe(200);
  return JSON.parse(res.text) as ForwardedClient;
}

const PROXY = '127.0.0.2';
const OTHER = '127.0.0.1';

describe('trustProxy with X-Forwarded-*', () => {
  it("an untrusted peer's headers change nothing", async () => {
    const port = await clientServer({ trustProxy: [PROXY] });
    const c = await ask(port, OTHER, 'X-Forwarded-For: 6.6.6.6\r\nX-Forwarded-Proto: https\r\nX-Forwarded-Host: evil.example\r\nForwarded: for=6.6.6.6\r\n');
    expect(c).toEqual({ address: OTHER, addresses: [OTHER], scheme: 'http', host: 'direct.example' });
  });

  it('a trusted peer is believed up to the first untrusted hop, which is the client', async () => {
    const port = await clientServer({ trustProxy: [PROXY, '10.0.0.0/8'] });
    const c = await ask(port, PROXY, 'X-Forwarded-For: 9.9.9.9, 192.0.2.1, 10.1.2.3\r\nX-Forwarded-Proto: https\r\nX-Forwarded-Host: app.example:8443\r\n');
    expect(c).toEqual({ address: '192.0.2.1', addresses: [PROXY, '10.1.2.3', '192.0.2.1'], scheme: 'https', host: 'app.example:8443' });
  });

  it('reads every X-Forwarded-For line: a proxy may add its own line after a forged one', async () => {
    const port = await clientServer({ trustProxy: [PROXY] });
    const c = await ask(port, PROXY, 'X-Forwarded-For: 6.6.6.6\r\nX-Forwarded-For: 192.0.2.7\r\n');
    expect(c.address).toBe('192.0.2.7');
  });

  it('a hop count trusts the n nearest addresses, the peer first; true trusts them all', async () => {
    const xff = 'X-Forwarded-For: 9.9.9.9, 192.0.2.1, 10.1.2.3\r\n';
    expect((await ask(await clientServer({ trustProxy: 2 }), OTHER, xff)).address).toBe('192.0.2.1');
    expect((await ask(await clientServer({ trustProxy: 1 }), OTHER, xff)).address).toBe('10.1.2.3');
    expect((await ask(await clientServer({ trustProxy: 0 }), OTHER, xff)).address).toBe(OTHER);
    expect((await ask(await clientServer({ trustProxy: true }), OTHER, xff)).address).toBe('9.9.9.9');
    expect((await ask(await clientServer({ trustProxy: false }), OTHER, xff)).address).toBe(OTHER);
  });

  it('IPv6 entries in brackets and entries with ports are read as their addresses', async () => {
    const port = await clientServer({ trustProxy: [PROXY, '2001:db8:cafe::/48'] });
    const c = await ask(port, PROXY, 'X-Forwarded-For: 192.0.2.9:5555, [2001:db8:cafe::17]:443\r\n');
    expect(c.addresses).toEqual([PROXY, '2001:db8:cafe::17', '192.0.2.9']);
  });

  it('ignores a forwarded scheme or host that is not one, keeping the direct one', async () => {
    const port = await clientServer({ trustProxy: [PROXY] });
    const c = await ask(port, PROXY, 'X-Forwarded-Proto: ht tp\r\nX-Forwarded-Host: evil.example/path\r\n');
    expect(c).toMatchObject({ scheme: 'http', host: 'direct.example' });
  });

  it('does not read Forwarded: a client could forge the family the proxy does not manage', async () => {
    const port = await clientServer({ trustProxy: [PROXY] });
    const c = await ask(port, PROXY, 'Forwarded: for=6.6.6.6;proto=https\r\nX-Forwarded-For: 192.0.2.3\r\n');
    expect(c).toMatchObject({ address: '192.0.2.3', scheme: 'http' });
  });
});

describe('trustProxy with Forwarded (RFC 7239)', () => {
  const opts = (trustProxy: ServeOptions['trustProxy']): ServeOptions => ({ trustProxy, forwardedHeaders: 'forwarded' });

  it("walks the elements from the nearest; scheme and host are those of the client's element", async () => {
    const port = await clientServer(opts([PROXY, '2001:db8:cafe::/48']));
    const c = await ask(port, PROXY, 'Forwarded: for=192.0.2.60;proto=https;host="app.example:8443", for="[2001:db8:cafe::17]:4711";proto=http\r\n');
    expect(c).toEqual({ address: '192.0.2.60', addresses: [PROXY, '2001:db8:cafe::17', '192.0.2.60'], scheme: 'https', host: 'app.example:8443' });
  });

  it('reads quoted strings with escapes, parameter names in any case, and several lines', async () => {
    const port = await clientServer(opts([PROXY]));
    const c = await ask(port, PROXY, 'Forwarded: For="192.0.2.\\61";PROTO=HTTPS\r\nForwarded: by=_lb\r\n');
    // The second line is the nearest element: it names no `for`, so the hop is unknown.
    expect(c.addresses).toEqual([PROXY, 'unknown']);
    const d = await ask(port, PROXY, 'Forwarded: For="192.0.2.\\61";PROTO=HTTPS\r\n');
    expect(d).toMatchObject({ address: '192.0.2.61', scheme: 'https' });
  });

  it('an obfuscated identifier or unknown is the client as written, trusted by no list', async () => {
    const port = await clientServer(opts([PROXY]));
    expect((await ask(port, PROXY, 'Forwarded: for=_hidden;proto=https\r\n')).address).toBe('_hidden');
    expect((await ask(port, PROXY, 'Forwarded: for=unknown\r\n')).address).toBe('unknown');
    const hops = await ask(await clientServer(opts(2)), OTHER, 'Forwarded: for=192.0.2.5, for=_proxy2\r\n');
    expect(hops).toMatchObject({ address: '192.0.2.5', addresses: [OTHER, '_proxy2', '192.0.2.5'] });
  });

  it.each([
    ['an unterminated quoted string', 'for="192.0.2.1'],
    ['a parameter twice in one element', 'for=192.0.2.1;for=192.0.2.2'],
    ['a pair without a value', 'for='],
    ['a bare token', 'for=192.0.2.1;secure'],
    ['pairs without a semicolon', 'for=192.0.2.1 proto=https'],
  ])('a malformed header (%s) is no word at all: the peer is the client', async (_what, value) => {
    const port = await clientServer(opts([PROXY]));
    const c = await ask(port, PROXY, `Forwarded: ${value}\r\nX-Forwarded-For: 6.6.6.6\r\n`);
    expect(c).toEqual({ address: PROXY, addresses: [PROXY], scheme: 'http', host: 'direct.example' });
  });

  it("an untrusted peer's Forwarded changes nothing", async () => {
    const port = await clientServer(opts([PROXY]));
    expect((await ask(port, OTHER, 'Forwarded: for=6.6.6.6;proto=https;host=evil.example\r\n')).address).toBe(OTHER);
  });
});

describe('trustProxy elsewhere', () => {
  it("parses Forwarded elements as the RFC's examples write them", () => {
    expect(parseForwarded('for="_gazonk"')).toEqual([{ for: '_gazonk' }]);
    expect(parseForwarded('For="[2001:db8:cafe::17]:4711"')).toEqual([{ for: '[2001:db8:cafe::17]:4711' }]);
    expect(parseForwarded('for=192.0.2.60;proto=http;by=203.0.113.43')).toEqual([{ for: '192.0.2.60', proto: 'http', by: '203.0.113.43' }]);
    expect(parseForwarded('for=192.0.2.43, for=198.51.100.17')).toEqual([{ for: '192.0.2.43' }, { for: '198.51.100.17' }]);
    // The HTTP parser refuses control characters in a field first; the Forwarded parser does too.
    expect(parseForwarded('for="192.0.2.1\u0001"')).toBeNull();
  });

  it('an IPv4 range matches the IPv4-mapped IPv6 form a dual-stack listener reports', () => {
    const list = TrustList.parse(['10.0.0.0/8', 'fd00::/8']) as TrustList;
    expect(list.has('::ffff:10.1.2.3')).toBe(true);
    expect(list.has('10.255.0.1')).toBe(true);
    expect(list.has('11.0.0.1')).toBe(false);
    expect(list.has('fd12::1')).toBe(true);
    expect(list.has('fe80::1')).toBe(false);
    expect(list.has('_hidden')).toBe(false);
  });

  it('works for stream handlers, HTTP/2 and inject()', async () => {
    const k = await kernel();
    const { port } = await startStreamServer(
      async (stream) => {
        await stream.closeWrite(clientOf(stream.request)?.address ?? 'none');
      },
      { kernel: k, trustProxy: true },
    );
    const session = destroyAfter(http2.connect(`http://127.0.0.1:${port}`));
    const body = await within(
      new Promise<string>((resolve, reject) => {
        const req = session.request({ ':path': '/', 'x-forwarded-for': '192.0.2.99' });
        let text = '';
        req.setEncoding('utf8');
        req.on('data', (c: string) => (text += c));
        req.once('end', () => resolve(text));
        req.once('error', reject);
        req.end();
      }),
      3000,
      'the h2c answer',
    );
    expect(body).toBe('192.0.2.99');
    const { server } = await startServer((req) => new Response(200, clientOf(req)?.address ?? 'none'), { kernel: k, trustProxy: ['10.0.0.1'] });
    const res = await server.inject({ url: '/', headers: { 'X-Forwarded-For': '192.0.2.98' }, remoteAddress: '10.0.0.1' });
    expect(await res.text()).toBe('192.0.2.98');
  });

  it('without trustProxy, clientOf() is the connection itself; without the plugin, null', async () => {
    const port = await clientServer({});
    expect(await ask(port, OTHER, 'X-Forwarded-For: 6.6.6.6\r\n')).toEqual({ address: OTHER, addresses: [OTHER], scheme: 'http', host: 'direct.example' });
    const bare = closeKernelAfter(await createKernel().register(presets.defaults).ready());
    const { server } = await startServer((req) => new Response(200, JSON.stringify(clientOf(req))), { kernel: bare });
    expect(await (await server.inject('/')).text()).toBe('null');
  });

  it('checks the options when the server is made', async () => {
    const k = await kernel();
    const make = (o: Record<string, unknown>) => startServer(() => new Response(200), { kernel: k, ...(o as ServeOptions) });
    await expect(make({ trustProxy: -1 })).rejects.toThrow(/trustProxy must be true, false, a hop count/);
    await expect(make({ trustProxy: ['10.0.0.0/8', 'proxy.local'] })).rejects.toThrow(/trustProxy must be a list of IP addresses and CIDR ranges.*"proxy\.local"/);
    await expect(make({ trustProxy: [] })).rejects.toThrow(/trustProxy must be a non-empty list/);
    await expect(make({ forwardedHeaders: 'x-forwarded-for' })).rejects.toThrow(/forwardedHeaders must be 'x-forwarded' or 'forwarded'/);
    await expect(make({ trustProxys: true })).rejects.toThrow(/did you mean trustProxy/);
  });
});
