/**
 * Request fields the HTTP/2 server settles before any handler sees them: one authority
 * (`:authority` and `host` must agree, RFC 9113 §8.3.1; `request.host` and the Host header are
 * then the same), the authority and CONNECT target grammar HTTP/1 applies to Host and targets
 * (userinfo, a non-numeric port, CONNECT without a port: 400), and split `cookie` fields joined
 * into one Cookie header (RFC 9113 §8.2.3).
 * Peers: a bare node:http2 client, nghttp (sends `-H host:` beside `:authority`), curl (h2c
 * prior knowledge and `Upgrade: h2c`), and a raw frame writer for two `host` fields.
 */
import { describe, expect, it } from 'vitest';
import { header, Response, type Request } from '../../../kernel/index.js';
import { block, frame, FrameReader, PREFACE, settings, T } from '../../helpers/h2-frames.js';
import { nodeRequest, nodeSession, rawSocket, run, startServer, waitFor } from '../../helpers/h2.js';

const CURL = '/usr/bin/curl';
const NGHTTP = '/usr/bin/nghttp';

/** What a handler saw of the request's authority and cookies. */
interface Seen {
  host: string | null;
  hostHeader: string;
  hostHeaders: string[];
  cookie: string;
  cookies: string[];
}

async function recordingServer(options: { secure?: boolean } = {}): Promise<{ port: number; seen: Seen[] }> {
  const seen: Seen[] = [];
  const { port } = await startServer((req: Request) => {
    seen.push({ host: req.host, hostHeader: header(req, 'Host'), hostHeaders: req.headers.getAll('Host'), cookie: header(req, 'Cookie'), cookies: req.headers.getAll('Cookie') });
    return new Response(200, 'handled');
  }, options);
  return { port, seen };
}

describe(':authority and host', () => {
  it('a host field naming another authority is refused with 400 before the handler (node:http2 client)', async () => {
    const { port, seen } = await recordingServer();
    const s = nodeSession(`http://127.0.0.1:${port}`);
    const bad = await nodeRequest(s, { ':path': '/', ':authority': 'allowed.example.com', host: 'internal-admin' });
    expect(bad.status).toBe(400);
    expect(bad.body.toString()).toMatch(/host field names another authority than :authority/);
    // Same authority in another spelling (case, the scheme's default port): one host, :authority's.
    const same = await nodeRequest(s, { ':path': '/', ':authority': 'allowed.example.com', host: 'Allowed.Example.COM:80' });
    expect(same.status).toBe(200);
    const exact = await nodeRequest(s, { ':path': '/', ':authority': 'allowed.example.com:8080', host: 'allowed.example.com:8080' });
    expect(exact.status).toBe(200);
    // Another port is another authority.
    const port2 = await nodeRequest(s, { ':path': '/', ':authority': 'allowed.example.com', host: 'allowed.example.com:8080' });
    expect(port2.status).toBe(400);
    expect(seen).toEqual([
      { host: 'allowed.example.com', hostHeader: 'allowed.example.com', hostHeaders: ['allowed.example.com'], cookie: '', cookies: [] },
      { host: 'allowed.example.com:8080', hostHeader: 'allowed.example.com:8080', hostHeaders: ['allowed.example.com:8080'], cookie: '', cookies: [] },
    ]);
  });

  it('nghttp -H "host: …" beside its :authority is refused the same way; curl turns Host into :authority', async () => {
    const { port, seen } = await recordingServer();
    const r = await run(NGHTTP, ['-H', 'host: internal-admin', `http://127.0.0.1:${port}/n`]);
    expect(r.stdout).toMatch(/host field names another authority/);
    expect(seen).toHaveLength(0);
    const ok = await run(NGHTTP, ['-H', `host: 127.0.0.1:${port}`, `http://127.0.0.1:${port}/n`]);
    expect(ok.stdout).toBe('handled');
    const c = await run(CURL, ['-sS', '--http2-prior-knowledge', '-H', 'Host: internal-admin', `http://127.0.0.1:${port}/c`]);
    expect(c.stdout).toBe('handled');
    expect(seen).toEqual([
      { host: `127.0.0.1:${port}`, hostHeader: `127.0.0.1:${port}`, hostHeaders: [`127.0.0.1:${port}`], cookie: '', cookies: [] },
      { host: 'internal-admin', hostHeader: 'internal-admin', hostHeaders: ['internal-admin'], cookie: '', cookies: [] },
    ]);
  });

  it('only :authority: the Host header is made from it; only host: it is request.host too', async () => {
    const { port, seen } = await recordingServer({ secure: true });
    const s = nodeSession(`https://127.0.0.1:${port}`);
    expect((await nodeRequest(s, { ':path': '/' })).status).toBe(200);
    // node:http2 sends no :authority when the request has a host field.
    expect((await nodeRequest(s, { ':path': '/', host: 'only-host.example' })).status).toBe(200);
    expect(seen).toEqual([
      { host: `127.0.0.1:${port}`, hostHeader: `127.0.0.1:${port}`, hostHeaders: [`127.0.0.1:${port}`], cookie: '', cookies: [] },
      { host: 'only-host.example', hostHeader: 'only-host.example', hostHeaders: ['only-host.example'], cookie: '', cookies: [] },
    ]);
  });

  it('two host fields are malformed: the stream is reset and no handler runs', async () => {
    const { port, seen } = await recordingServer();
    const sock = await rawSocket(port);
    const reader = new FrameReader(sock);
    const head = (stream: number, extra: [string, string][]): Buffer => frame(T.HEADERS, 0x5, stream, block([[':method', 'GET'], [':scheme', 'http'], [':path', '/'], ...extra]));
    sock.write(
      Buffer.concat([
        PREFACE,
        settings(),
        head(1, [
          ['host', 'a.example'],
          ['host', 'b.example'],
        ]),
        head(3, [
          [':authority', 'a.example'],
          ['host', 'a.example'],
          ['host', 'a.example'],
        ]),
        head(5, [['host', 'a.example']]),
      ]),
    );
    await waitFor(() => reader.resets().size === 2 && reader.of(T.HEADERS).some((f) => f.stream === 5), 5000, 'two resets and one answer');
    expect([...reader.resets().keys()].sort()).toEqual([1, 3]);
    for (const code of reader.resets().values()) expect(code).toBe(1); // PROTOCOL_ERROR
    expect(seen).toEqual([{ host: 'a.example', hostHeader: 'a.example', hostHeaders: ['a.example'], cookie: '', cookies: [] }]);
  });

  it('Upgrade: h2c carries the HTTP/1.1 Host as :authority: one host in the handler', async () => {
    const { port, seen } = await recordingServer();
    const r = await run(CURL, ['-sS', '--http2', '-H', 'Host: upgraded.example', '-H', 'Cookie: a=1', '-H', 'Cookie: b=2', `http://127.0.0.1:${port}/up`]);
    expect(r.stdout).toBe('handled');
    expect(seen).toEqual([{ host: 'upgraded.example', hostHeader: 'upgraded.example', hostHeaders: ['upgraded.example'], cookie: 'a=1; b=2', cookies: ['a=1; b=2'] }]);
  });

  it('Upgrade: h2c of an absolute-form request: its authority, not Host, becomes :authority, and :path only the path', async () => {
    const seen: string[] = [];
    const { port } = await startServer((req: Request) => {
      seen.push(`${req.target} ${req.host} ${header(req, 'Host')} HTTP/${req.protoMajor}`);
      return new Response(200, 'handled');
    });
    const r = await run(CURL, ['-sS', '--http2', '--request-target', 'http://allowed.example.com/x?y=1', '-H', 'Host: internal-admin', `http://127.0.0.1:${port}/`]);
    expect(r.stdout).toBe('handled');
    expect(seen).toEqual(['/x?y=1 allowed.example.com allowed.example.com HTTP/2']);
  });
});

describe('the request target and authority grammar (RFC 9113 §8.3.1, §8.5)', () => {
  it('an authority with userinfo, a non-numeric port or a broken literal is refused with 400 before the handler; valid ones pass', async () => {
    const { port, seen } = await recordingServer();
    const s = nodeSession(`http://127.0.0.1:${port}`);
    for (const authority of ['user@evil.example', 'user:pw@evil.example', 'host:abc', 'h%zz', '[::1', '[fe80::1%25eth0]']) {
      const r = await nodeRequest(s, { ':path': '/', ':authority': authority });
      expect(r.status, authority).toBe(400);
      expect(r.body.toString()).toContain('is not host[:port]');
    }
    // The same rule for a host field that stands in for a missing :authority.
    const viaHost = await nodeRequest(s, { ':path': '/', host: 'u@h' });
    expect(viaHost.status).toBe(400);
    for (const authority of ['example.com', 'Example.COM:8080', '[::1]:8443', '127.0.0.1', 'h%41']) {
      expect((await nodeRequest(s, { ':path': '/', ':authority': authority })).status, authority).toBe(200);
    }
    expect(seen.map((x) => x.host)).toEqual(['example.com', 'Example.COM:8080', '[::1]:8443', '127.0.0.1', 'h%41']);
  });

  it('curl and nghttp sending an authority with userinfo get the 400 too', async () => {
    const { port, seen } = await recordingServer();
    const c = await run(CURL, ['-sS', '--http2-prior-knowledge', '-H', 'Host: admin@internal', '-w', '%{http_code}', `http://127.0.0.1:${port}/c`]);
    expect(c.stdout).toMatch(/is not host\[:port\][\s\S]*400$/);
    const n = await run(NGHTTP, ['-v', '-H', ':authority: admin@internal', `http://127.0.0.1:${port}/n`]);
    expect(n.stdout).toMatch(/:status: 400/);
    expect(seen).toHaveLength(0);
  });

  it('CONNECT needs host:port in :authority: without a port it is refused; with one the handler sees it as the target', async () => {
    const targets: string[] = [];
    const { port } = await startServer((req: Request) => {
      targets.push(`${req.method} ${req.target}`);
      return new Response(200, 'handled');
    });
    const s = nodeSession(`http://127.0.0.1:${port}`);
    const bad = await nodeRequest(s, { ':method': 'CONNECT', ':authority': 'example.com' });
    expect(bad.status).toBe(400);
    expect(bad.body.toString()).toContain('CONNECT needs a host:port');
    expect((await nodeRequest(s, { ':method': 'CONNECT', ':authority': 'user@example.com:443' })).status).toBe(400);
    expect((await nodeRequest(s, { ':method': 'CONNECT', ':authority': 'example.com:443' })).status).toBe(200);
    // OPTIONS * keeps its asterisk-form.
    expect((await nodeRequest(s, { ':method': 'OPTIONS', ':path': '*' })).status).toBe(200);
    expect(targets).toEqual(['CONNECT example.com:443', 'OPTIONS *']);
  });
});

describe('cookie fields', () => {
  it('split cookie fields reach the handler as one Cookie header joined with "; " (node:http2, curl, nghttp)', async () => {
    const { port, seen } = await recordingServer();
    const s = nodeSession(`http://127.0.0.1:${port}`);
    // node:http2 sends each element of a cookie array as a field of its own.
    expect((await nodeRequest(s, { ':path': '/', cookie: ['a=1', 'b=2', 'c=3'], 'x-after': 'y' })).status).toBe(200);
    expect((await nodeRequest(s, { ':path': '/', cookie: 'single=1' })).status).toBe(200);
    expect((await run(CURL, ['-sS', '--http2-prior-knowledge', '-H', 'Cookie: a=1', '-H', 'Cookie: b=2', `http://127.0.0.1:${port}/`])).stdout).toBe('handled');
    expect((await run(NGHTTP, ['-H', 'cookie: a=1', '-H', 'cookie: b=2', `http://127.0.0.1:${port}/`])).stdout).toBe('handled');
    expect(seen.map((x) => x.cookies)).toEqual([['a=1; b=2; c=3'], ['single=1'], ['a=1; b=2'], ['a=1; b=2']]);
    expect(seen[0]!.cookie).toBe('a=1; b=2; c=3');
  });
});
