/**
 * The HTTP/1.1 server against raw TCP peers sending request targets and Host values that
 * RFC 9112 §3.2 and RFC 9110 §7.2 make a 400, next to their legal neighbours.
 */
import { describe, expect, it } from 'vitest';
import { Response, type Request, type Stream } from '../../../kernel/index.js';
import { expectClosed, expectServing, rawClient, startServer, startStreamServer } from '../../helpers/server.js';

interface Seen {
  method: string;
  target: string;
  hosts: string[];
}

/** A server that records what reached the handler and answers 200 (403 to CONNECT: no tunnels here). */
async function recordingServer(): Promise<{ port: number; seen: Seen[] }> {
  const seen: Seen[] = [];
  const { port } = await startServer((req: Request) => {
    seen.push({ method: req.method, target: req.target, hosts: req.headers.getAll('Host') });
    return new Response(req.method === 'CONNECT' ? 403 : 200, 'ok');
  });
  return { port, seen };
}

/** Sends `raw` on a fresh connection and returns the status of the answer. */
async function statusFor(port: number, raw: string, method?: string): Promise<{ status: number; closed: boolean }> {
  const c = await rawClient(port);
  await c.write(raw);
  const res = await c.response(method !== undefined ? { method } : {});
  if (res.status === 400) await expectClosed(c);
  const closed = c.isClosed;
  c.destroy();
  return { status: res.status, closed };
}

const REFUSED: [string, string][] = [
  ['origin-form without the leading slash', 'GET foo HTTP/1.1\r\nHost: x\r\n\r\n'],
  ['authority-form with GET', 'GET host:443 HTTP/1.1\r\nHost: x\r\n\r\n'],
  ['asterisk-form with GET', 'GET * HTTP/1.1\r\nHost: x\r\n\r\n'],
  ['CONNECT with a path', 'CONNECT /x HTTP/1.1\r\nHost: x\r\n\r\n'],
  ['CONNECT without a port', 'CONNECT host HTTP/1.1\r\nHost: x\r\n\r\n'],
  ['absolute-form with userinfo', 'GET http://user@a/ HTTP/1.1\r\nHost: a\r\n\r\n'],
  ['absolute-form with an empty host', 'GET http:///x HTTP/1.1\r\nHost: a\r\n\r\n'],
  ['a CTL in the target', 'GET /a\x01b HTTP/1.1\r\nHost: x\r\n\r\n'],
  ['Host with a path', 'GET / HTTP/1.1\r\nHost: example.com/path\r\n\r\n'],
  ['Host with a space', 'GET / HTTP/1.1\r\nHost: a b\r\n\r\n'],
  ['Host with a non-numeric port', 'GET / HTTP/1.1\r\nHost: a:b\r\n\r\n'],
  ['Host with userinfo', 'GET / HTTP/1.1\r\nHost: user@a\r\n\r\n'],
  ['Host with an unclosed IPv6 literal', 'GET / HTTP/1.1\r\nHost: [::1\r\n\r\n'],
  ['two Host headers', 'GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n'],
  ['no Host in HTTP/1.1', 'GET / HTTP/1.1\r\nAccept: */*\r\n\r\n'],
  ['an invalid Host with an absolute-form target', 'GET http://a/ HTTP/1.1\r\nHost: a b\r\n\r\n'],
];

describe('request targets and Host: 400 and close', () => {
  for (const [name, raw] of REFUSED) {
    it(name, async () => {
      const { port, seen } = await recordingServer();
      const r = await statusFor(port, raw);
      expect(r.status).toBe(400);
      expect(r.closed).toBe(true);
      expect(seen).toEqual([]);
      await expectServing(port);
    });
  }

  it('in stream-handler mode too', async () => {
    let calls = 0;
    const { port } = await startStreamServer(async (stream: Stream) => {
      calls++;
      await stream.write('ok');
    });
    for (const raw of ['GET foo HTTP/1.1\r\nHost: x\r\n\r\n', 'GET / HTTP/1.1\r\nHost: a b\r\n\r\n']) {
      expect((await statusFor(port, raw)).status).toBe(400);
    }
    expect(calls).toBe(0);
  });
});

describe('request targets and Host: the legal neighbours reach the handler', () => {
  it('absolute-form: the handler sees the target and the target authority as Host', async () => {
    const { port, seen } = await recordingServer();
    expect((await statusFor(port, 'GET http://a/ HTTP/1.1\r\nHost: other.example\r\n\r\n')).status).toBe(200);
    expect((await statusFor(port, 'GET http://b.example:8080/p?q HTTP/1.0\r\n\r\n')).status).toBe(200);
    expect(seen).toEqual([
      { method: 'GET', target: 'http://a/', hosts: ['a'] },
      { method: 'GET', target: 'http://b.example:8080/p?q', hosts: ['b.example:8080'] },
    ]);
  });

  it('CONNECT host:443 and OPTIONS *', async () => {
    const { port, seen } = await recordingServer();
    expect((await statusFor(port, 'CONNECT host:443 HTTP/1.1\r\nHost: host:443\r\n\r\n', 'CONNECT')).status).toBe(403);
    expect((await statusFor(port, 'OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n')).status).toBe(200);
    expect(seen.map((s) => `${s.method} ${s.target}`)).toEqual(['CONNECT host:443', 'OPTIONS *']);
  });

  it('Host values: IPv6 literal with a port, IPv4, empty (origin-form), and HTTP/1.0 without Host', async () => {
    const { port, seen } = await recordingServer();
    for (const raw of ['GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n', 'GET / HTTP/1.1\r\nHost: 127.0.0.1:80\r\n\r\n', 'GET / HTTP/1.1\r\nHost:\r\n\r\n', 'GET / HTTP/1.0\r\n\r\n']) {
      expect((await statusFor(port, raw)).status, raw).toBe(200);
    }
    expect(seen.map((s) => s.hosts)).toEqual([['[::1]:8080'], ['127.0.0.1:80'], [''], []]);
  });
});
