/**
 * A Client given its own `transport`: the options a Client and a Transport both take. Protocol
 * choice (`preferHttp2`), the proxy policy and the head limits given to the Client apply to its
 * requests over whatever transport (checked on the wire: the ALPN result against the project's
 * TLS server with the h2 plugin, which peer a request reaches, a raw server's long header
 * line); the options that shape the pool's connections (`maxIdlePerHost`,
 * `maxIdleTotal`, `tlsConfig`, `localAddr`) are an `ArgumentError` next to a transport.
 */
import { describe, expect, it } from 'vitest';
import { ArgumentError, Client, DNSError, Response, Transport, type ClientOptions } from '../../../kernel/index.js';
import { cert, h2Kernel, startServer } from '../../helpers/h2.js';
import { newClient, okResponse, proxyKernel, rawServer, readRequests, rejection, text } from '../../helpers/client.js';

/** The project's HTTPS server with the h2 plugin (ALPN offers h2 and http/1.1); answers with the protocol it served. */
async function alpnServer(): Promise<string> {
  const s = await startServer((req) => new Response(200, `HTTP/${req.protoMajor}`), { secure: true });
  return `https://localhost:${s.port}`;
}

async function h2ClientOn(options: ClientOptions): Promise<Client> {
  return newClient({ kernel: await h2Kernel(), ...options });
}

const tlsConfig = { ca: cert.cert };

describe('preferHttp2 on a Client with a transport', () => {
  it('preferHttp2: false speaks HTTP/1.1 over a transport that would negotiate h2', async () => {
    const origin = await alpnServer();
    const t = new Transport({ tlsConfig });
    const c = await h2ClientOn({ transport: t, preferHttp2: false });
    const res = await c.get(`${origin}/`);
    expect(res.protoMajor).toBe(1);
    expect(text(res)).toBe('HTTP/1');
    t.close();
  });

  it('the same as the client that made its own transport: Client({ tlsConfig, preferHttp2: false })', async () => {
    const origin = await alpnServer();
    const c = await h2ClientOn({ tlsConfig, preferHttp2: false });
    expect(text(await c.get(`${origin}/`))).toBe('HTTP/1');
  });

  it("preferHttp2: true speaks h2 over a transport made with preferHttp2: false; without its own, the client takes the transport's", async () => {
    const origin = await alpnServer();
    const t = new Transport({ tlsConfig, preferHttp2: false });
    const yes = await h2ClientOn({ transport: t, preferHttp2: true });
    const dflt = await h2ClientOn({ transport: t });
    expect(yes.preferHttp2).toBe(true);
    expect(dflt.preferHttp2).toBe(false);
    expect(text(await yes.get(`${origin}/a`))).toBe('HTTP/2');
    expect(text(await dflt.get(`${origin}/b`))).toBe('HTTP/1');
    t.close();
  });

  it('two clients on one transport: the h2 session of one is never handed to the one that wants HTTP/1.1', async () => {
    const origin = await alpnServer();
    const t = new Transport({ tlsConfig });
    const h2 = await h2ClientOn({ transport: t });
    const h1 = await h2ClientOn({ transport: t, preferHttp2: false });
    expect(text(await h2.get(`${origin}/1`))).toBe('HTTP/2');
    expect(text(await h1.get(`${origin}/2`))).toBe('HTTP/1');
    expect(text(await h2.get(`${origin}/3`))).toBe('HTTP/2');
    expect(text(await h1.get(`${origin}/4`))).toBe('HTTP/1');
    // One h2 session and one HTTP/1.1 connection, each reused.
    expect(t.connectionCount()).toBe(2);
    t.close();
  });

  it("a call's httpVersion still wins over the client's preferHttp2", async () => {
    const origin = await alpnServer();
    const c = await h2ClientOn({ tlsConfig, preferHttp2: false });
    expect(text(await c.get(`${origin}/`, { httpVersion: 'h2' }))).toBe('HTTP/2');
    expect(text(await c.get(`${origin}/`, { httpVersion: 'auto' }))).toBe('HTTP/1');
  });

  it('preferHttp2 that is not a boolean is an ArgumentError, with or without a transport', () => {
    const t = new Transport();
    expect(() => new Client({ transport: t, preferHttp2: 'no' as unknown as boolean })).toThrow(ArgumentError);
    expect(() => new Client({ preferHttp2: 1 as unknown as boolean })).toThrow(ArgumentError);
    t.close();
  });
});

describe('the other options a Client and a Transport share', () => {
  it('proxy: null (direct) on the Client wins over the proxy of its transport', async () => {
    // A forward proxy that answers every request itself; the origin's name resolves nowhere
    // (.test is reserved), so only the proxy can answer for it.
    const p = await rawServer((sock) => readRequests(sock, () => sock.write(okResponse('via proxy'))));
    const t = new Transport({ proxy: `http://127.0.0.1:${p.port}` });
    const kernel = await proxyKernel();
    const through = newClient({ kernel, transport: t });
    expect(text(await through.get('http://origin.test/'))).toBe('via proxy');
    const direct = newClient({ kernel, transport: t, proxy: null, connectTimeout: 3000 });
    const err = await rejection(direct.get('http://origin.test/'));
    expect(err).toBeInstanceOf(DNSError);
    expect(p.connections).toBe(1);
    t.close();
  });

  it('maxLineBytes and maxHeaderBytes on the Client bound its responses over a transport with larger limits', async () => {
    const long = `X-Long: ${'a'.repeat(300)}\r\n`;
    const s = await rawServer((sock) => readRequests(sock, () => sock.write(okResponse('long', long))));
    const t = new Transport();
    expect(text(await newClient({ transport: t }).get(`${s.origin}/`))).toBe('long');
    const byLine = await rejection(newClient({ transport: t, maxLineBytes: 100 }).get(`${s.origin}/`));
    expect(byLine.message).toMatch(/line/i);
    const byHead = await rejection(newClient({ transport: t, maxHeaderBytes: 200 }).get(`${s.origin}/`));
    expect(byHead.message).toMatch(/head/i);
    t.close();
  });

  it('maxLineBytes or maxHeaderBytes that is not an integer >= 1 is an ArgumentError on a Client and per call', async () => {
    const t = new Transport();
    expect(() => new Client({ transport: t, maxLineBytes: 0 })).toThrow(ArgumentError);
    expect(() => new Client({ maxHeaderBytes: 1.5 })).toThrow(ArgumentError);
    const c = newClient({ transport: t });
    expect(await rejection(c.get('http://127.0.0.1:1/', { maxLineBytes: -1 }))).toBeInstanceOf(ArgumentError);
    t.close();
  });

  for (const [name, value] of [
    ['maxIdlePerHost', 2],
    ['maxIdleTotal', 10],
    ['tlsConfig', { ca: 'x' }],
    ['localAddr', '127.0.0.1'],
  ] as const) {
    it(`${name} next to a transport is an ArgumentError that says to pass it to the Transport`, () => {
      const t = new Transport();
      const err = (() => {
        try {
          new Client({ transport: t, [name]: value });
        } catch (e) {
          return e as Error;
        }
        throw new Error('expected an ArgumentError');
      })();
      expect(err).toBeInstanceOf(ArgumentError);
      expect(err.message).toContain(`new Transport({ ${name} })`);
      t.close();
    });
  }
});
