/**
 * The server against raw TCP peers sending transfer codings it must refuse (RFC 9112 §6.1,
 * §6.3, §7): 400 for a malformed or misplaced coding, 501 for one it does not implement, each
 * followed by a close, the body never handed to a handler, and the server serving the next
 * connection. Also heads that break at a byte while they arrive in pieces: 400 at that byte,
 * not a limit status once the unfinished line grows. And the client against a raw server
 * answering with such codings: a ProtocolError, never a body decoded as what it was not.
 */
import { describe, expect, it } from 'vitest';
import { ProtocolError, Response, type Request } from '../../../kernel/index.js';
import { newClient, okResponse, rawServer, readRequests, rejection, text } from '../../helpers/client.js';
import { expectClosed, expectServing, rawClient, startServer, statusOf } from '../../helpers/server.js';

/** A server that records every request it is handed and echoes its body. */
async function recordingServer(options = {}): Promise<{ port: number; seen: string[] }> {
  const seen: string[] = [];
  const { port } = await startServer((req: Request) => {
    seen.push(req.target);
    const body = req.body instanceof Uint8Array ? Buffer.from(req.body).toString('latin1') : '';
    return new Response(200, `${req.target} ${body}`);
  }, options);
  return { port, seen };
}

/**
 * Sends `raw` (in one write, or in `pieces` writes with an event-loop turn between them, so the
 * server mostly reads them one by one) and expects exactly one response with `status`, then the
 * close; the next connection is served. Writing stops once the server has answered.
 */
async function expectRefused(port: number, raw: string, status: number, pieces = 1): Promise<string> {
  const c = await rawClient(port);
  c.socket.setNoDelay(true);
  const step = Math.ceil(raw.length / pieces);
  for (let i = 0; i < raw.length && c.received.length === 0 && !c.isClosed; i += step) {
    const ok = await c.write(raw.slice(i, i + step)).then(
      () => true,
      () => false,
    );
    if (!ok) break;
    if (pieces > 1) await new Promise<void>((r) => setImmediate(r));
  }
  const bytes = await expectClosed(c, 3000);
  const text = bytes.toString('latin1');
  expect(statusOf(bytes), `response to ${JSON.stringify(raw.slice(0, 100))}: ${text.slice(0, 200)}`).toBe(status);
  expect(text.match(/HTTP\/1\.1 \d{3} /g)).toHaveLength(1);
  expect(text).toContain('Connection: close');
  await expectServing(port);
  return text;
}

const hidden = 'GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n';
const body = `5\r\nhello\r\n0\r\n\r\n${hidden}`;
const post = (te: string): string => `POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: ${te}\r\n\r\n${body}`;

describe('server: request transfer codings', () => {
  it('chunked as the only coding (any case, OWS, empty list elements) is read as chunked', async () => {
    const { port, seen } = await recordingServer();
    for (const te of ['chunked', 'CHUNKED', 'chunked, ', ' , chunked']) {
      const c = await rawClient(port);
      await c.write(`POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: ${te}\r\n\r\n5\r\nhello\r\n0\r\n\r\n`);
      const r = await c.response();
      expect(r.status).toBe(200);
      expect(r.text).toBe('/up hello');
      c.destroy();
    }
    expect(seen).toEqual(['/up', '/up', '/up', '/up']);
  });

  const malformed = ['chunked;', 'chunked; q=1', 'chunked;q="1"', 'chunked x', ',', ' ', '"chunked"', 'gzip;q, chunked'];
  for (const te of malformed) {
    it(`a malformed Transfer-Encoding "${te}" gets 400 and a close, not a chunked body`, async () => {
      const { port, seen } = await recordingServer();
      const text = await expectRefused(port, post(te), 400);
      expect(text).toContain('invalid Transfer-Encoding');
      expect(text).not.toContain('/smuggled');
      expect(seen).toEqual(['/ok']);
    });
  }

  const notFinal = ['gzip', 'identity', 'chunked, gzip', 'chunked, chunked', 'chunked\r\nTransfer-Encoding: chunked'];
  for (const te of notFinal) {
    it(`a Transfer-Encoding "${te.replace(/\r\n/g, ' / ')}" whose final coding is not a single chunked gets 400 (RFC 9112 §6.3)`, async () => {
      const { port, seen } = await recordingServer();
      const text = await expectRefused(port, post(te), 400);
      expect(text).toContain('single chunked');
      expect(seen).toEqual(['/ok']);
    });
  }

  const unknown = ['gzip, chunked', 'identity, chunked', 'deflate,chunked', 'compress, chunked', 'x-whatever;a="b,c", chunked', 'gzip\r\nTransfer-Encoding: chunked'];
  for (const te of unknown) {
    it(`a Transfer-Encoding "${te.replace(/\r\n/g, ' / ')}" with a coding not implemented gets 501 and a close`, async () => {
      const { port, seen } = await recordingServer();
      const text = await expectRefused(port, post(te), 501);
      expect(text).toContain('Not Implemented');
      expect(text).toContain('only chunked is');
      expect(text).not.toContain('/smuggled');
      expect(seen).toEqual(['/ok']);
    });
  }

  it('the same answers when the head arrives byte by byte', async () => {
    const { port, seen } = await recordingServer();
    await expectRefused(port, post('chunked; q=1'), 400, post('chunked; q=1').length);
    await expectRefused(port, post('gzip, chunked'), 501, post('gzip, chunked').length);
    expect(seen).toEqual(['/ok', '/ok']);
  });

  it('an HTTP/1.0 request with Transfer-Encoding gets 400 and a close (faulty framing, RFC 9112 §6.1)', async () => {
    const { port, seen } = await recordingServer();
    const text = await expectRefused(port, `POST /up HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n${body}`, 400);
    expect(text).toContain('HTTP/1.0');
    expect(seen).toEqual(['/ok']);
  });
});

describe('server: a bad byte in a head that arrives in pieces', () => {
  // Small limits, so an unfinished line passes maxLineBytes (and the head maxHeaderBytes) quickly.
  const limits = { maxLineBytes: 64, maxHeaderBytes: 256 };
  const filler = 'a'.repeat(300);
  const cases: [string, string][] = [
    ['a header name with a "("', `GET / HTTP/1.1\r\nHost: x\r\nX(`],
    ['a header name with a space before the colon', `GET / HTTP/1.1\r\nHost: x\r\nX-A `],
    ['a header name with obs-text', `GET / HTTP/1.1\r\nHost: x\r\nX-\xe9`],
    ['a method with a "("', 'G(E'],
    ['a tab in the request target', 'GET /a\t'],
    ['two spaces after the method', 'GET  '],
    ['a space after the version', 'GET / HTTP/1.1 '],
  ];
  for (const [name, head] of cases) {
    it(`${name}, followed by an endless line: 400 whole, byte by byte and in pieces`, async () => {
      const { port, seen } = await recordingServer(limits);
      const raw = head + filler;
      for (const pieces of [1, raw.length, 7]) await expectRefused(port, raw, 400, pieces);
      expect(seen).toEqual(['/ok', '/ok', '/ok']);
    });
  }

  it('an endless valid line still gets its limit status (431 for a header line, 414 for the request line)', async () => {
    const { port } = await recordingServer(limits);
    const header = `GET / HTTP/1.1\r\nHost: x\r\nX-A: ${filler}`;
    for (const pieces of [1, header.length]) await expectRefused(port, header, 431, pieces);
    const target = `GET /${filler}`;
    for (const pieces of [1, target.length]) await expectRefused(port, target, 414, pieces);
  });
});

describe('client: response transfer codings', () => {
  /** A raw server answering each request with a 200 whose Transfer-Encoding is `te`, then closing. */
  async function answering(te: string) {
    return rawServer((sock) => readRequests(sock, () => sock.end(`HTTP/1.1 200 OK\r\nTransfer-Encoding: ${te}\r\n\r\n5\r\nhello\r\n0\r\n\r\n`)));
  }

  it('a response whose only coding is chunked is read', async () => {
    const raw = await answering('Chunked, ');
    expect(text(await newClient().get(`${raw.origin}/`))).toBe('hello');
  });

  for (const te of ['gzip, chunked', 'identity, chunked', 'chunked, gzip', 'gzip', 'chunked;', 'chunked; q=1', 'chunked, chunked']) {
    it(`a response with Transfer-Encoding "${te}" is a ProtocolError, and the client keeps working`, async () => {
      const raw = await answering(te);
      const good = await rawServer((sock) => readRequests(sock, () => sock.write(okResponse('fine'))));
      const c = newClient();
      const err = await rejection(c.get(`${raw.origin}/`));
      expect(err).toBeInstanceOf(ProtocolError);
      expect(err.message).toContain('Transfer-Encoding');
      expect(text(await c.get(`${good.origin}/`))).toBe('fine');
    });
  }
});
