/**
 * The HTTP/1.1 server against raw TCP peers: pipelining, malformed heads, request smuggling,
 * the HTTP/2 preface, clients that vanish mid-body, bodiless responses, keep-alive rules.
 */
import { describe, expect, it } from 'vitest';
import { createKernel, Response, type Request, type Stream } from '../../../kernel/index.js';
// Declares the h2c plugin's server option allowH2c (the servers here still run no plugin).
import '../../../plugins/h2c/index.js';
import { expectClosed, expectServing, get, onCleanup, rawClient, readResponses, startServer, startStreamServer, statusOf, waitConnections, within } from '../../helpers/server.js';

/** Number of status lines in `bytes` (responses received). */
function statusLines(bytes: Buffer): number {
  return (bytes.toString('latin1').match(/HTTP\/1\.[01] \d{3} /g) ?? []).length;
}

/** An echo server (request handler): `METHOD target [body]`, recording every target it saw. */
async function echoServer(): Promise<{ port: number; seen: string[] }> {
  const seen: string[] = [];
  const { port } = await startServer((req: Request) => {
    seen.push(req.target);
    const body = req.body instanceof Uint8Array ? Buffer.from(req.body).toString('latin1') : String(req.body ?? '');
    return new Response(200, `${req.method} ${req.target}${body === '' ? '' : ` ${body}`}`);
  });
  return { port, seen };
}

function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

describe('pipelining', () => {
  it('answers 100 GETs sent in one write, in request order, and keeps the connection open', async () => {
    const { port } = await echoServer();
    const c = await rawClient(port);
    let batch = '';
    for (let i = 0; i < 100; i++) batch += get(`/r${i}`);
    await c.write(batch);
    const rs = await readResponses(c, 100);
    expect(rs.map((r) => r.status)).toEqual(Array(100).fill(200));
    expect(rs.map((r) => r.text)).toEqual(Array.from({ length: 100 }, (_, i) => `GET /r${i}`));
    expect(rs.every((r) => !r.close)).toBe(true);
    expect(c.isClosed).toBe(false);
    expect(c.ended).toBe(false);
    // Still usable.
    await c.write(get('/after'));
    expect((await c.response()).text).toBe('GET /after');
  });

  it('answers pipelined requests with Content-Length and chunked bodies mixed with GETs', async () => {
    const { port } = await echoServer();
    const c = await rawClient(port);
    const parts: string[] = [];
    const expected: string[] = [];
    for (let i = 0; i < 30; i++) {
      const body = `body-${i}-${'x'.repeat(i * 37)}`;
      switch (i % 3) {
        case 0:
          parts.push(get(`/g${i}`));
          expected.push(`GET /g${i}`);
          break;
        case 1:
          parts.push(`POST /cl${i} HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
          expected.push(`POST /cl${i} ${body}`);
          break;
        default: {
          // Two chunks (one with an extension) and a trailer.
          const a = body.slice(0, 5);
          const b = body.slice(5);
          parts.push(
            `PUT /ch${i} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n` + `${a.length.toString(16)};ext=1\r\n${a}\r\n${b.length.toString(16)}\r\n${b}\r\n0\r\nX-Trailer: t\r\n\r\n`,
          );
          expected.push(`PUT /ch${i} ${body}`);
        }
      }
    }
    await c.write(parts.join(''));
    const rs = await readResponses(c, 30);
    expect(rs.map((r) => r.text)).toEqual(expected);
    expect(c.isClosed).toBe(false);
  });

  it('answers pipelined requests with bodies in order for a stream handler too', async () => {
    const { port } = await startStreamServer(async (s: Stream) => {
      const req = await s.startRead();
      const body = Buffer.from(await s.readAll()).toString('latin1');
      await s.write(`${req.method} ${req.target}${body === '' ? '' : ` ${body}`}`);
    });
    const c = await rawClient(port);
    const raw =
      get('/a') + 'POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nbbb' + 'POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\ncc\r\n1\r\nc\r\n0\r\n\r\n' + get('/d');
    await c.write(raw);
    const rs = await readResponses(c, 4);
    expect(rs.map((r) => r.text)).toEqual(['GET /a', 'POST /b bbb', 'POST /c ccc', 'GET /d']);
    expect(c.isClosed).toBe(false);
  });

  it('keeps request order when an async handler finishes requests out of order', async () => {
    let running = 0;
    let maxRunning = 0;
    const { port } = await startServer(async (req: Request) => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      const i = Number(req.target.slice(2));
      await delay((i * 7) % 11); // varied, not monotonic
      running--;
      return new Response(200, `done ${req.target}`);
    });
    const c = await rawClient(port);
    let batch = '';
    for (let i = 0; i < 40; i++) batch += get(`/r${i}`);
    await c.write(batch);
    const rs = await readResponses(c, 40);
    expect(rs.map((r) => r.text)).toEqual(Array.from({ length: 40 }, (_, i) => `done /r${i}`));
    expect(maxRunning).toBe(1);
    expect(c.isClosed).toBe(false);
  });
});

/** Sends `raw` on one connection while a well-formed connection is open; expects `status` and a close. */
async function expectRejected(port: number, raw: string | Buffer, status = 400): Promise<Buffer> {
  const good = await rawClient(port);
  const bad = await rawClient(port);
  await bad.write(raw);
  // Fail fast on a wrong answer, then wait for the close.
  const first = await bad.response({ timeout: 3000 }).catch(() => null);
  if (first !== null) expect(first.status, `response to ${JSON.stringify(raw.toString().slice(0, 80))}: ${first.text}`).toBe(status);
  const bytes = await expectClosed(bad, 3000);
  expect(statusOf(bytes), `response to ${JSON.stringify(raw.toString().slice(0, 80))}: ${bytes.toString('latin1').slice(0, 200)}`).toBe(status);
  expect(statusLines(bytes)).toBe(1);
  // The other connection, opened before, is still served.
  await good.write(get('/after'));
  const r = await good.response();
  expect(r.status).toBe(200);
  good.destroy();
  return bytes;
}

describe('malformed request heads get 400 and a closed connection', () => {
  const cases: [string, string][] = [
    ['obs-fold (continuation line)', 'GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n  folded\r\n\r\n'],
    ['obs-fold with a tab', 'GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n\tfolded\r\n\r\n'],
    ['bare CR in a header value', 'GET / HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n'],
    ['bare CR ending a header line', 'GET / HTTP/1.1\r\nHost: x\rX-A: b\r\n\r\n'],
    ['bare LF ending the request line', 'GET / HTTP/1.1\nHost: x\r\n\r\n'],
    ['bare LF ending a header line', 'GET / HTTP/1.1\r\nHost: x\nX-A: b\r\n\r\n'],
    ['bare LF only', 'GET / HTTP/1.1\nHost: x\n\n'],
    ['NUL in a header value', 'GET / HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\n\r\n'],
    ['NUL in the target', 'GET /a\0b HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['space before the colon', 'GET / HTTP/1.1\r\nHost : x\r\n\r\n'],
    ['tab before the colon', 'GET / HTTP/1.1\r\nHost: x\r\nX-A\t: b\r\n\r\n'],
    ['invalid token in the method', 'G(T / HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['invalid token in a header name', 'GET / HTTP/1.1\r\nHost: x\r\nX@A: b\r\n\r\n'],
    ['empty header name', 'GET / HTTP/1.1\r\nHost: x\r\n: b\r\n\r\n'],
    ['header line without a colon', 'GET / HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n'],
    ['missing version', 'GET /\r\nHost: x\r\n\r\n'],
    ['lowercase version', 'GET / http/1.1\r\nHost: x\r\n\r\n'],
    ['HTTP/2.0 version', 'GET / HTTP/2.0\r\nHost: x\r\n\r\n'],
    ['HTTP/1.2 version', 'GET / HTTP/1.2\r\nHost: x\r\n\r\n'],
    ['two spaces after the method', 'GET  / HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['garbage line', 'hello there, server\r\n\r\n'],
    ['binary garbage (a TLS ClientHello)', '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n'],
    ['space in the target', 'GET /a b HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['invalid Content-Length (letters)', 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n'],
    ['invalid Content-Length (negative)', 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n'],
    ['invalid Content-Length (plus sign)', 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +5\r\n\r\nhello'],
    ['invalid Content-Length (hex)', 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0x5\r\n\r\nhello'],
    ['invalid Content-Length (two numbers)', 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1 2\r\n\r\n'],
    ['invalid Content-Length (empty)', 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: \r\n\r\n'],
    ['Content-Length beyond 2^53', 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n'],
    ['HTTP/1.1 request without Host', 'GET / HTTP/1.1\r\nX-A: b\r\n\r\n'],
  ];
  for (const [name, raw] of cases) {
    it(name, async () => {
      const { port, seen } = await echoServer();
      await expectRejected(port, raw);
      expect(seen).toEqual(['/after']);
      await expectServing(port);
    });
  }

  const chunkCases: [string, string][] = [
    ['non-hex chunk size', 'zz\r\nhello\r\n0\r\n\r\n'],
    ['negative chunk size', '-5\r\nhello\r\n0\r\n\r\n'],
    ['chunk size overflow', 'ffffffffffffffffffff\r\nhello\r\n0\r\n\r\n'],
    ['chunk data longer than its size', '3\r\nhello\r\n0\r\n\r\n'],
    ['chunk size with a space inside', '1 0\r\nhello\r\n0\r\n\r\n'],
  ];
  for (const [name, body] of chunkCases) {
    const raw = `POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n${body}`;
    it(`bad chunked body for serve(): ${name}`, async () => {
      const { port, seen } = await echoServer();
      await expectRejected(port, raw);
      expect(seen).toEqual(['/after']);
    });
    it(`bad chunked body for listen(): ${name}`, async () => {
      const readErrors: unknown[] = [];
      const { port, errors } = await startStreamServer(async (s: Stream) => {
        const req = await s.startRead();
        try {
          await s.readAll();
        } catch (err) {
          readErrors.push(err);
          throw err;
        }
        await s.write(`ok ${req.target}`);
      });
      await expectRejected(port, raw);
      expect(readErrors).toHaveLength(1);
      expect(errors.length).toBeLessThanOrEqual(1);
    });
  }
});

describe('request smuggling attempts get 400 and a close; the hidden request is never answered', () => {
  const hidden = 'GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n';
  const chunkedThenHidden = `0\r\n\r\n${hidden}`;
  const cases: [string, string][] = [
    ['Content-Length then Transfer-Encoding', `POST / HTTP/1.1\r\nHost: x\r\nContent-Length: ${chunkedThenHidden.length}\r\nTransfer-Encoding: chunked\r\n\r\n${chunkedThenHidden}`],
    ['Transfer-Encoding then Content-Length', `POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: ${chunkedThenHidden.length}\r\n\r\n${chunkedThenHidden}`],
    ['Transfer-Encoding then Content-Length: 0', `POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n${chunkedThenHidden}`],
    ['two differing Content-Length headers', `POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: ${hidden.length}\r\n\r\n${hidden}`],
    ['two differing Content-Length headers (larger first)', `POST / HTTP/1.1\r\nHost: x\r\nContent-Length: ${hidden.length}\r\nContent-Length: 0\r\n\r\n${hidden}`],
    ['Content-Length: 5, 6', `POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 6\r\n\r\nhello${hidden}`],
    ['Content-Length: 0, 35', `POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0, ${hidden.length}\r\n\r\n${hidden}`],
    ['Transfer-Encoding: chunked, identity', `POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n${chunkedThenHidden}`],
    ['Transfer-Encoding: identity alone', `POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\n\r\n${hidden}`],
    ['Transfer-Encoding: gzip alone', `POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n${hidden}`],
    ['Transfer-Encoding: chunked twice', `POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n${chunkedThenHidden}`],
    ['Transfer-Encoding: xchunked', `POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n${chunkedThenHidden}`],
    ['Transfer-Encoding split over lines (chunked, then identity)', `POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n${chunkedThenHidden}`],
    ['Transfer-Encoding in HTTP/1.0', `POST / HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n${chunkedThenHidden}`],
    ['Transfer-Encoding in HTTP/1.0 with keep-alive', `POST / HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n${chunkedThenHidden}`],
    ['duplicate Host', `GET / HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n${hidden}`],
    ['duplicate Host, same value', `GET / HTTP/1.1\r\nHost: a.example\r\nHost: a.example\r\n\r\n${hidden}`],
  ];
  for (const [name, raw] of cases) {
    it(name, async () => {
      const { port, seen } = await echoServer();
      const bytes = await expectRejected(port, raw);
      expect(bytes.toString('latin1')).not.toContain('/smuggled');
      expect(seen).not.toContain('/smuggled');
      expect(seen).not.toContain('/');
      expect(seen).toEqual(['/after']);
    });
  }
});

describe('HTTP/2 connection preface on a plain connection', () => {
  const preface = 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n';
  it('gets 400 and a close with no kernel (no h2c plugin)', async () => {
    const { port, seen } = await echoServer();
    await expectRejected(port, preface);
    expect(seen).toEqual(['/after']);
  });

  it('gets 400 with allowH2c false', async () => {
    const { port } = await startServer(() => new Response(200, 'ok'), { allowH2c: false });
    await expectRejected(port, preface);
  });

  it('gets 400 with a kernel that has no h2c plugin', async () => {
    const kernel = await createKernel().ready();
    onCleanup(() => kernel.close());
    const { port } = await startServer(() => new Response(200, 'ok'), { kernel });
    await expectRejected(port, preface);
  });

  it('gets 400 when the preface arrives one byte at a time', async () => {
    const { port } = await startServer(() => new Response(200, 'ok'));
    const c = await rawClient(port);
    for (const ch of preface) await c.write(ch);
    const bytes = await expectClosed(c);
    expect(statusOf(bytes)).toBe(400);
  });
});

describe('a client that disconnects mid-body', () => {
  it('leaves no connection behind and never runs the request handler (serve)', async () => {
    let ran = 0;
    const { server, port } = await startServer(() => {
      ran++;
      return new Response(200, 'ok');
    });
    const c = await rawClient(port);
    await c.write('POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n');
    await c.write(Buffer.alloc(1000, 0x61));
    await waitConnections(server, 1);
    c.destroy();
    await waitConnections(server, 0);
    expect(ran).toBe(0);
    await expectServing(port);
    await waitConnections(server, 0);
  });

  it('leaves no connection behind with a chunked body (serve)', async () => {
    let ran = 0;
    const { server, port } = await startServer(() => {
      ran++;
      return new Response(200, 'ok');
    });
    const c = await rawClient(port);
    await c.write('POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3e8\r\n' + 'a'.repeat(500));
    await waitConnections(server, 1);
    c.destroy();
    await waitConnections(server, 0);
    expect(ran).toBe(0);
  });

  it("rejects the stream handler's pending read and leaves no connection behind (listen)", async () => {
    let resolveOutcome!: (v: { got: number; err: unknown }) => void;
    const outcome = new Promise<{ got: number; err: unknown }>((r) => (resolveOutcome = r));
    const { server, port } = await startStreamServer(async (s: Stream) => {
      await s.startRead();
      let got = 0;
      try {
        for await (const chunk of s) got += chunk.length;
        resolveOutcome({ got, err: null });
      } catch (err) {
        resolveOutcome({ got, err });
        throw err;
      }
    });
    const c = await rawClient(port);
    await c.write('POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n');
    await c.write(Buffer.alloc(1000, 0x61));
    await waitConnections(server, 1);
    // Let the handler read what was sent, so its next read is pending when the client leaves.
    await c.write(Buffer.alloc(0));
    c.destroy();
    const { got, err } = await within(outcome, 3000, "the stream handler's read to settle");
    expect(err).toBeInstanceOf(Error);
    expect(got).toBeLessThanOrEqual(1000);
    await waitConnections(server, 0);
    await expectServing(port);
  });
});

/** Splits raw bytes into responses: each head, and the offset where the next one starts. */
function splitHeads(bytes: Buffer, count = 5): { head: string; start: number; headEnd: number }[] {
  const text = bytes.toString('latin1');
  const out: { head: string; start: number; headEnd: number }[] = [];
  let at = 0;
  while (at < text.length && out.length < count) {
    const end = text.indexOf('\r\n\r\n', at);
    if (end < 0) break;
    out.push({ head: text.slice(at, end + 4), start: at, headEnd: end + 4 });
    at = end + 4;
    const cl = /\r\ncontent-length: *(\d+)/i.exec(out[out.length - 1]!.head);
    // Only the final GET carries a body here; bodiless ones must be followed by the next head.
    if (!text.startsWith('HTTP/1.1 ', at) && cl !== null) at += Number(cl[1]);
  }
  return out;
}

describe('responses without a body carry no body bytes', () => {
  const raw = 'HEAD /head HTTP/1.1\r\nHost: x\r\n\r\n' + get('/204') + get('/304') + 'HEAD /head-empty HTTP/1.1\r\nHost: x\r\n\r\n' + get('/last', 'Connection: close\r\n');

  function check(bytes: Buffer): void {
    const text = bytes.toString('latin1');
    const heads = splitHeads(bytes);
    expect(heads.map((h) => statusOf(Buffer.from(h.head, 'latin1')))).toEqual([200, 204, 304, 200, 200]);
    // Each bodiless response is followed directly by the next status line.
    for (let i = 0; i < 4; i++) {
      expect(text.slice(heads[i]!.headEnd, heads[i]!.headEnd + 9), `after response ${i}: ${JSON.stringify(text.slice(heads[i]!.start, heads[i]!.headEnd + 40))}`).toBe('HTTP/1.1 ');
    }
    // HEAD says what GET would have sent.
    expect(heads[0]!.head).toMatch(/\r\ncontent-length: 26\r\n/i);
    // 204 carries no framing at all.
    expect(heads[1]!.head).not.toMatch(/content-length|transfer-encoding/i);
    expect(text.endsWith('\r\n\r\nlast')).toBe(true);
    expect(text).not.toContain('must not be sent');
  }

  it('for a request handler (HEAD, 204, 304)', async () => {
    const { port } = await startServer((req: Request) => {
      switch (req.target) {
        case '/head':
          return new Response(200, 'this body must not be sent');
        case '/head-empty':
          return new Response(200, '');
        case '/204':
          return new Response(204, 'this body must not be sent', { headers: { 'Content-Length': '26' } });
        case '/304':
          return new Response(304, 'this body must not be sent');
        default:
          return new Response(200, 'last');
      }
    });
    const c = await rawClient(port);
    await c.write(raw);
    check(await expectClosed(c));
  });

  it('for a stream handler (HEAD, 204, 304)', async () => {
    const { port } = await startStreamServer(async (s: Stream) => {
      const req = await s.startRead();
      await s.readAll(); // (empty) body read, so the connection may be reused
      switch (req.target) {
        case '/head':
          s.setHeader('Content-Length', '26');
          await s.write('this body must not be sent');
          break;
        case '/head-empty':
          break;
        case '/204':
          s.setStatus(204);
          await s.write('this body must not be sent');
          break;
        case '/304':
          s.setStatus(304);
          await s.write('this body must not be sent');
          break;
        default:
          await s.write('last');
      }
    });
    const c = await rawClient(port);
    await c.write(raw);
    const bytes = await expectClosed(c);
    const text = bytes.toString('latin1');
    const heads = splitHeads(bytes);
    expect(heads.map((h) => statusOf(Buffer.from(h.head, 'latin1')))).toEqual([200, 204, 304, 200, 200]);
    for (let i = 0; i < 4; i++) expect(text.slice(heads[i]!.headEnd, heads[i]!.headEnd + 9)).toBe('HTTP/1.1 ');
    expect(heads[1]!.head).not.toMatch(/content-length|transfer-encoding/i);
    expect(text).not.toContain('must not be sent');
    expect(text).toMatch(/\r\n\r\n(4\r\nlast\r\n0\r\n\r\n|last)$/);
  });
});

describe('connection management', () => {
  it('Connection: close gets Connection: close and the socket ends', async () => {
    const { port } = await echoServer();
    const c = await rawClient(port);
    await c.write(get('/x', 'Connection: close\r\n'));
    const r = await c.response();
    expect(r.status).toBe(200);
    expect(r.headers.get('Connection')).toBe('close');
    await expectClosed(c);
    expect(c.ended).toBe(true);
  });

  it('Connection: close in a pipelined batch: later requests are not answered', async () => {
    const { port, seen } = await echoServer();
    const c = await rawClient(port);
    await c.write(get('/1') + get('/2', 'Connection: close\r\n') + get('/3'));
    const bytes = await expectClosed(c);
    expect(statusLines(bytes)).toBe(2);
    expect(seen).toEqual(['/1', '/2']);
  });

  it('HTTP/1.0 without keep-alive closes after the response', async () => {
    const { port } = await echoServer();
    const c = await rawClient(port);
    await c.write('GET /old HTTP/1.0\r\n\r\n');
    const r = await c.response();
    expect(r.status).toBe(200);
    expect(r.text).toBe('GET /old');
    expect(r.headers.get('Connection') ?? 'close').toMatch(/close/i);
    await expectClosed(c);
  });

  it('HTTP/1.0 with Connection: keep-alive stays open and says keep-alive', async () => {
    const { port } = await echoServer();
    const c = await rawClient(port);
    await c.write('GET /one HTTP/1.0\r\nConnection: keep-alive\r\n\r\n');
    const r = await c.response();
    expect(r.status).toBe(200);
    expect(r.headers.get('Connection')).toMatch(/^keep-alive$/i);
    expect(r.close).toBe(false);
    await c.write('GET /two HTTP/1.0\r\nConnection: keep-alive\r\n\r\n');
    const r2 = await c.response();
    expect(r2.text).toBe('GET /two');
    expect(c.isClosed).toBe(false);
  });

  it('HTTP/1.0 keep-alive with a stream handler of unknown length closes (no chunked for 1.0)', async () => {
    const { port } = await startStreamServer(async (s: Stream) => {
      await s.startRead();
      await s.write('streamed ');
      await s.write('body');
    });
    const c = await rawClient(port);
    await c.write('GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n');
    const bytes = await expectClosed(c);
    const text = bytes.toString('latin1');
    expect(statusOf(bytes)).toBe(200);
    expect(text).not.toMatch(/transfer-encoding/i);
    expect(text.endsWith('\r\n\r\nstreamed body')).toBe(true);
  });

  it('a stream handler that does not read a bodiless request keeps the connection alive', async () => {
    const { port } = await startStreamServer(async (s: Stream) => {
      const req = await s.startRead();
      await s.write(`hello ${req.target}`);
    });
    const c = await rawClient(port);
    await c.write(get('/1') + get('/2') + 'HEAD /3 HTTP/1.1\r\nHost: x\r\n\r\n' + get('/4'));
    const rs = await c.responses(4, ['GET', 'GET', 'HEAD', 'GET']);
    expect(rs.map((r) => r.text)).toEqual(['hello /1', 'hello /2', '', 'hello /4']);
    expect(rs.map((r) => r.close)).toEqual([false, false, false, false]);
  });

  it('Expect: something-else gets 417', async () => {
    const { port, seen } = await echoServer();
    const c = await rawClient(port);
    await c.write('POST /e HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\nContent-Length: 5\r\n\r\nhello');
    const r = await c.response();
    expect(r.status).toBe(417);
    expect(seen).toEqual([]);
    await expectServing(port);
  });

  it('Expect: 100-continue gets 100 then the response', async () => {
    const { port } = await echoServer();
    const c = await rawClient(port);
    await c.write('POST /e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n');
    await within(
      (async () => {
        while (!c.received.toString('latin1').includes('\r\n\r\n')) await new Promise<void>((r) => c.socket.once('data', () => r()));
      })(),
      3000,
      '100 Continue',
    );
    expect(c.received.toString('latin1')).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\n$/);
    await c.write('hello');
    const r = await c.response();
    expect(r.text).toBe('POST /e hello');
  });
});
