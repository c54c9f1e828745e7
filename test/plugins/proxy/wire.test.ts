/**
 * The bytes the plugin sends, checked by small recording proxies: the CONNECT request, the
 * absolute-form requests of forward mode (and when not to use it), the SOCKS5 greeting,
 * authentication and address types (names always sent as names, for socks5 and socks5h),
 * a piping CONNECT proxy with an interim answer, and WebSockets through squid and microsocks.
 */
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { DNSError, Request, Transport } from '../../../kernel/index.js';
import { websockets, WebSockets } from '../../../plugins/websockets/index.js';
import { ProxyConfig } from '../../../plugins/proxy/index.js';
import { h2 } from '../../../plugins/h2/index.js';
import { h2c } from '../../../plugins/h2c/index.js';
import { afterBytes, afterHead, onCleanup, rawProxy, startMicrosocks, startSquid } from '../../helpers/proxies.js';
import { bootKernel, certificate, makeClient, rejection, startOrigin } from './setup.js';

const basic = (u: string, p: string): string => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;

/** An HTTP proxy that records each request head and answers it with `answer`. */
async function recordingProxy(answer = 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok') {
  const heads: string[] = [];
  const p = await rawProxy((s) => {
    const next = (): void =>
      afterHead(s, (head) => {
        heads.push(head);
        s.write(answer);
        next();
      });
    next();
  });
  return { port: p.port, heads, proxy: p };
}

/** A CONNECT proxy that really tunnels to 127.0.0.1 (after a `100` interim answer), counting tunnels and bytes. */
async function pipingProxy() {
  const stats = { tunnels: [] as string[], bytes: 0 };
  const p = await rawProxy((s) =>
    afterHead(s, (head) => {
      const authority = head.split('\r\n')[0]!.split(' ')[1]!;
      stats.tunnels.push(authority);
      const port = Number(authority.slice(authority.lastIndexOf(':') + 1));
      const up = net.connect(port, '127.0.0.1', () => {
        s.write('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 Connection established\r\nContent-Length: 12\r\n\r\n');
        s.on('data', (d: Buffer) => (stats.bytes += d.length));
        s.pipe(up);
        up.pipe(s);
      });
      up.on('error', () => s.destroy());
      s.on('close', () => up.destroy());
    }),
  );
  return { port: p.port, stats };
}

describe('CONNECT request', () => {
  it('carries the authority, Host and Proxy-Authorization', async () => {
    const r = await recordingProxy('HTTP/1.1 403 Forbidden\r\n\r\n');
    const client = await makeClient({ proxy: `http://u%20ser:pa%3Ass@127.0.0.1:${r.port}` });
    await rejection(client.get('https://origin.test:8443/path?q'));
    await rejection(client.get('https://[2001:db8::1]/'));
    expect(r.heads).toEqual([
      `CONNECT origin.test:8443 HTTP/1.1\r\nHost: origin.test:8443\r\nProxy-Authorization: ${basic('u ser', 'pa:ss')}`,
      `CONNECT [2001:db8::1]:443 HTTP/1.1\r\nHost: [2001:db8::1]:443\r\nProxy-Authorization: ${basic('u ser', 'pa:ss')}`,
    ]);
  });

  it('tunnels through a real byte pipe, skipping a 1xx interim answer', async () => {
    const pipe = await pipingProxy();
    const origin = await startOrigin({ tls: true });
    const client = await makeClient({ proxy: `http://127.0.0.1:${pipe.port}`, tlsConfig: { ca: certificate().cert, servername: 'origin.test' } });
    expect((await client.get(`https://origin.test:${origin.port}/piped`)).text()).toBe('https /piped');
    expect(pipe.stats.tunnels).toEqual([`origin.test:${origin.port}`]);
    expect(pipe.stats.bytes).toBeGreaterThan(200); // the TLS handshake and the request went through it
  });
});

describe('forward mode (plain http through an http proxy)', () => {
  it('absolute-form request line, Host, Proxy-Authorization; kept alive', async () => {
    const r = await recordingProxy();
    const client = await makeClient({ proxy: `http://me:pw@127.0.0.1:${r.port}` });
    expect((await client.get('http://example.test:8080/a/b?c=d')).text()).toBe('ok');
    expect((await client.post('http://example.test:8080/post', { body: 'hi' })).text()).toBe('ok');
    expect(r.heads[0]).toMatch(new RegExp(`^GET http://example\\.test:8080/a/b\\?c=d HTTP/1\\.1\\r\\nHost: example\\.test:8080\\r\\n`));
    expect(r.heads[0]).toContain(`\r\nProxy-Authorization: ${basic('me', 'pw')}`);
    expect(r.heads[1]).toMatch(/^POST http:\/\/example\.test:8080\/post HTTP\/1\.1\r\n/);
    expect(r.proxy.connections).toBe(1);
  });

  it('the default port and IPv6 hosts', async () => {
    const r = await recordingProxy();
    const client = await makeClient({ proxy: `http://127.0.0.1:${r.port}` });
    await client.get('http://example.test/');
    await client.get('http://[2001:db8::5]:81/x');
    expect(r.heads[0]).toMatch(/^GET http:\/\/example\.test\/ HTTP\/1\.1\r\nHost: example\.test\r\n/);
    expect(r.heads[0]).not.toContain('Proxy-Authorization');
    expect(r.heads[1]).toMatch(/^GET http:\/\/\[2001:db8::5\]:81\/x HTTP\/1\.1\r\nHost: \[2001:db8::5\]:81\r\n/);
  });

  it('a prepared request through dispatch(); a retry of the same request is not rewritten twice', async () => {
    const r = await recordingProxy();
    const client = await makeClient({ proxy: `http://127.0.0.1:${r.port}` });
    const req = new Request('GET', '/prepared');
    req.url = 'http://example.test/prepared';
    const res = await client.dispatch(req);
    await (res.body as { close(): void }).close();
    expect(req.target).toBe('http://example.test/prepared');
    expect(r.heads[0]).toMatch(/^GET http:\/\/example\.test\/prepared HTTP\/1\.1\r\n/);
  });

  it('h2c prior knowledge is not forwarded: it tunnels', async () => {
    const r = await recordingProxy('HTTP/1.1 403 Forbidden\r\n\r\n');
    const client = await makeClient({ proxy: `http://127.0.0.1:${r.port}` }, await bootKernel([h2, h2c]));
    await rejection(client.get('http://example.test:8080/', { httpVersion: 'h2' }));
    expect(r.heads[0]).toMatch(/^CONNECT example\.test:8080 HTTP\/1\.1\r\n/);
  });

  it('a policy given only to the Transport forwards plain http too (the client reads it from there)', async () => {
    const r = await recordingProxy();
    const client = await makeClient({ transport: new Transport({ proxy: new ProxyConfig(`http://127.0.0.1:${r.port}`) }) });
    const res = await client.get('http://example.test:8080/t');
    await (res.body as { close?(): void } | null)?.close?.();
    expect(r.heads[0]).toMatch(/^GET http:\/\/example\.test:8080\/t HTTP\/1\.1\r\n/);
  });

  it("the plugin's own default proxy keys the pool too: a direct client on the same Transport never gets its connection", async () => {
    const r = await recordingProxy('HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nvia proxy');
    const t = new Transport();
    const through = await makeClient({ transport: t }, await bootKernel([], { proxy: `http://127.0.0.1:${r.port}` }));
    const direct = await makeClient({ transport: t, connectTimeout: 3000 }, await bootKernel());
    expect((await through.get('http://origin.test/a')).text()).toBe('via proxy');
    // origin.test resolves nowhere (.test is reserved): only the proxy's connection could answer.
    expect(await rejection(direct.get('http://origin.test/b'))).toBeInstanceOf(DNSError);
    expect((await through.get('http://origin.test/c')).text()).toBe('via proxy');
    expect(r.heads.map((h) => h.split('\r\n')[0])).toEqual(['GET http://origin.test/a HTTP/1.1', 'GET http://origin.test/c HTTP/1.1']);
    expect(r.proxy.connections).toBe(1);
    t.close();
  });
});

describe('SOCKS5 bytes', () => {
  /** A SOCKS5 server recording greeting, auth and request, then answering `reply`. */
  async function recordingSocks(reply: number) {
    const seen: { greeting: number[]; auth: number[]; request: number[] }[] = [];
    const p = await rawProxy((s) => {
      const rec = { greeting: [] as number[], auth: [] as number[], request: [] as number[] };
      seen.push(rec);
      afterBytes(s, 2, (g) => {
        const n = g[1]!;
        afterBytes(s, Math.max(0, 2 + n - g.length), (m) => {
          const greeting = Buffer.concat([g, m]);
          rec.greeting = [...greeting];
          const withAuth = greeting.subarray(2).includes(2);
          s.write(Buffer.from([5, withAuth ? 2 : 0]));
          const readRequest = (): void =>
            afterBytes(s, 5, (h) => {
              const len = h[3] === 1 ? 10 : h[3] === 4 ? 22 : 7 + h[4]!;
              afterBytes(s, Math.max(0, len - h.length), (rest) => {
                rec.request = [...Buffer.concat([h, rest])];
                s.write(Buffer.from([5, reply, 0, 1, 0, 0, 0, 0, 0, 0]));
              });
            });
          if (!withAuth) return readRequest();
          afterBytes(s, 2, (a) => {
            const ulen = a[1]!;
            afterBytes(s, Math.max(0, 2 + ulen + 1 - a.length), (b) => {
              const partial = Buffer.concat([a, b]);
              const plen = partial[2 + ulen]!;
              afterBytes(s, Math.max(0, 3 + ulen + plen - partial.length), (c) => {
                rec.auth = [...Buffer.concat([partial, c])];
                s.write(Buffer.from([1, 0]));
                readRequest();
              });
            });
          });
        });
      });
    });
    return { port: p.port, seen };
  }

  it.each(['socks5', 'socks5h'])('%s://: a name goes as a name (ATYP 3), IPs as addresses', async (scheme) => {
    const s = await recordingSocks(4);
    const client = await makeClient({ proxy: `${scheme}://127.0.0.1:${s.port}` });
    await rejection(client.get('http://example.test:8080/'));
    await rejection(client.get('https://203.0.113.7/'));
    await rejection(client.get('http://[2001:db8::1]:81/'));
    const name = Buffer.from('example.test');
    expect(s.seen.map((x) => x.greeting)).toEqual([
      [5, 1, 0],
      [5, 1, 0],
      [5, 1, 0],
    ]);
    expect(s.seen[0]!.request).toEqual([5, 1, 0, 3, name.length, ...name, 0x1f, 0x90]);
    expect(s.seen[1]!.request).toEqual([5, 1, 0, 1, 203, 0, 113, 7, 1, 187]);
    expect(s.seen[2]!.request).toEqual([5, 1, 0, 4, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 81]);
  });

  it('offers user/password when the URL has credentials and sends them as RFC 1929 says', async () => {
    const s = await recordingSocks(0);
    const client = await makeClient({ proxy: `socks5://us%C3%A9r:p%40ss@127.0.0.1:${s.port}` });
    // Reply 0 but nothing behind it: the request then fails; only the handshake bytes matter here.
    await rejection(client.get('http://origin.test:8080/', { responseHeaderTimeout: 200 }));
    const user = Buffer.from('usér');
    expect(s.seen[0]!.greeting).toEqual([5, 2, 0, 2]);
    expect(s.seen[0]!.auth).toEqual([1, user.length, ...user, 4, ...Buffer.from('p@ss')]);
  });
});

describe('WebSockets through proxies (WebSockets.open with `proxy`)', () => {
  async function echoServer(tls = false) {
    const server = await WebSockets.listen(
      async (ws) => {
        for await (const msg of ws) await ws.send(msg);
      },
      { host: '127.0.0.1', port: 0, ...(tls ? { tls: { key: certificate().key, cert: certificate().cert } } : {}) },
    );
    onCleanup(() => WebSockets.forceClose(server));
    return server.port;
  }

  it('ws:// and wss:// through squid (CONNECT)', async () => {
    const squid = await startSquid({ hosts: { 'origin.test': '127.0.0.1' } });
    const kernel = await bootKernel([websockets]);
    const port = await echoServer();
    const echoed = await WebSockets.open(`ws://origin.test:${port}/`, async (ws) => (await ws.send('through squid'), await ws.receive()), { kernel, proxy: squid.url });
    expect(echoed).toBe('through squid');
    const tport = await echoServer(true);
    const secure = await WebSockets.open(`wss://origin.test:${tport}/`, async (ws) => (await ws.send('tls'), await ws.receive()), { kernel, proxy: squid.url, tls: { ca: certificate().cert } });
    expect(secure).toBe('tls');
    await squid.waitLog(new RegExp(`TCP_TUNNEL/200 .* CONNECT origin\\.test:${port} `));
    await squid.waitLog(new RegExp(`TCP_TUNNEL/200 .* CONNECT origin\\.test:${tport} `));
  });

  it('ws:// through the policy the plugin was registered with tunnels too (CONNECT), as a handshake cannot be forwarded', async () => {
    const squid = await startSquid({ hosts: { 'origin.test': '127.0.0.1' } });
    const kernel = await bootKernel([websockets], { proxy: squid.url });
    const port = await echoServer();
    const echoed = await WebSockets.open(`ws://origin.test:${port}/`, async (ws) => (await ws.send('default policy'), await ws.receive()), { kernel });
    expect(echoed).toBe('default policy');
    await squid.waitLog(new RegExp(`TCP_TUNNEL/200 .* CONNECT origin\\.test:${port} `));
  });

  it('ws:// through microsocks', async () => {
    const socks = await startMicrosocks();
    const kernel = await bootKernel([websockets]);
    const port = await echoServer();
    const echoed = await WebSockets.open(`ws://0.0.0.0:${port}/`, async (ws) => (await ws.send('through socks'), await ws.receive()), { kernel, proxy: socks.url('socks5h') });
    expect(echoed).toBe('through socks');
    expect(await socks.waitConnected(1)).toEqual([`0.0.0.0:${port}`]);
  });
});
