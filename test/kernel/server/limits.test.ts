/**
 * Server limits: maxHeaderBytes (431), maxLineBytes (414 / 431), maxBodyBytes (413), and the
 * validation of server options.
 */
import { describe, expect, it } from 'vitest';
import { ArgumentError, listen, Response, serve, Server, type Request, type Stream } from '../../../kernel/index.js';
import { expectClosed, expectServing, get, rawClient, startServer, startStreamServer, statusOf, waitConnections } from '../../helpers/server.js';
import { unfinishedHead } from './fixtures/unfinished-heads.js';

/** A whole request head of about `size` bytes. */
function headOf(size: number): Buffer {
  return Buffer.concat([unfinishedHead(size - 2), Buffer.from('\r\n')]);
}

/** A request handler answering with the body length it got; counts its calls. */
async function lengthServer(options: Parameters<typeof startServer>[1] = {}): Promise<{ port: number; calls: () => number; server: Server }> {
  let calls = 0;
  const { port, server } = await startServer((req: Request) => {
    calls++;
    const b = req.body;
    const n = b instanceof Uint8Array ? b.length : typeof b === 'string' ? Buffer.byteLength(b) : -1;
    return new Response(200, String(n));
  }, options);
  return { port, server, calls: () => calls };
}

/** `n` header lines of about 50 bytes each. */
function manyHeaders(n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += `X-Bomb-${String(i).padStart(4, '0')}: ${'v'.repeat(36)}\r\n`;
  return s;
}

describe('maxHeaderBytes and maxLineBytes', () => {
  it('a head larger than maxHeaderBytes gets 431 and a close; the server keeps serving', async () => {
    const { port, calls } = await lengthServer({ maxHeaderBytes: 8192 });
    const head = `GET / HTTP/1.1\r\nHost: x\r\n${manyHeaders(200)}\r\n`;
    expect(head.length).toBeGreaterThan(10_000);
    const c = await rawClient(port);
    await c.write(head);
    const r = await c.response();
    expect(r.status).toBe(431);
    await expectClosed(c);
    expect(calls()).toBe(0);
    await expectServing(port);
  });

  it('a head just under maxHeaderBytes is served', async () => {
    const { port } = await lengthServer({ maxHeaderBytes: 8192 });
    const c = await rawClient(port);
    await c.write(`GET / HTTP/1.1\r\nHost: x\r\n${manyHeaders(150)}\r\n`);
    expect((await c.response()).status).toBe(200);
  });

  it('answers 431 as soon as the head passes maxHeaderBytes, with the head still open', async () => {
    const { port } = await lengthServer({ maxHeaderBytes: 8192 });
    const c = await rawClient(port);
    // No blank line: the head never ends.
    await c.write(`GET / HTTP/1.1\r\nHost: x\r\n${manyHeaders(200)}`);
    const r = await c.response({ timeout: 3000 });
    expect(r.status).toBe(431);
    await expectClosed(c, 3000);
  });

  it('a request line longer than maxLineBytes gets 414', async () => {
    const { port } = await lengthServer({ maxLineBytes: 1024 });
    const c = await rawClient(port);
    await c.write(get(`/${'a'.repeat(2000)}`));
    const r = await c.response();
    expect(r.status).toBe(414);
    await expectClosed(c);
    await expectServing(port);
  });

  it('answers 414 as soon as the request line passes maxLineBytes, with no line end sent', async () => {
    const { port } = await lengthServer({ maxLineBytes: 1024 });
    const c = await rawClient(port);
    await c.write(`GET /${'a'.repeat(2000)}`);
    const r = await c.response({ timeout: 3000 });
    expect(r.status).toBe(414);
    await expectClosed(c, 3000);
  });

  it('a request line at maxLineBytes is served', async () => {
    const { port } = await lengthServer({ maxLineBytes: 1024 });
    // "GET /aaa HTTP/1.1" is 1024 bytes without its CRLF.
    const target = `/${'a'.repeat(1024 - 'GET  HTTP/1.1'.length - 1)}`;
    expect(`GET ${target} HTTP/1.1`.length).toBe(1024);
    const c = await rawClient(port);
    await c.write(get(target));
    expect((await c.response()).status).toBe(200);
  });

  it('a header line longer than maxLineBytes gets 431', async () => {
    const { port } = await lengthServer({ maxLineBytes: 1024 });
    const c = await rawClient(port);
    await c.write(get('/', `X-Long: ${'v'.repeat(2000)}\r\n`));
    const r = await c.response();
    expect(r.status).toBe(431);
    await expectClosed(c);
    await expectServing(port);
  });

  it('answers 431 as soon as a header line passes maxLineBytes, with no line end sent', async () => {
    const { port } = await lengthServer({ maxLineBytes: 1024 });
    const c = await rawClient(port);
    await c.write(`GET / HTTP/1.1\r\nHost: x\r\nX-Long: ${'v'.repeat(2000)}`);
    const r = await c.response({ timeout: 3000 });
    expect(r.status).toBe(431);
    await expectClosed(c, 3000);
  });

  it('answers 431 when the head passes the limit byte by byte', async () => {
    const { port } = await lengthServer({ maxHeaderBytes: 1024 });
    const c = await rawClient(port);
    const head = `GET / HTTP/1.1\r\nHost: x\r\n${manyHeaders(40)}`;
    let i = 0;
    // Write in small pieces until the server answers (it must before the head ends).
    while (c.received.length === 0 && i < head.length) {
      await c.write(head.slice(i, i + 16));
      i += 16;
    }
    const r = await c.response({ timeout: 3000 });
    expect(r.status).toBe(431);
    await expectClosed(c, 3000);
  });

  it('applies the head limit to stream handlers (listen) too', async () => {
    const { port } = await startStreamServer(
      async (s: Stream) => {
        await s.write('ok');
      },
      { maxHeaderBytes: 8192 },
    );
    const c = await rawClient(port);
    await c.write(`GET / HTTP/1.1\r\nHost: x\r\n${manyHeaders(200)}\r\n`);
    expect((await c.response()).status).toBe(431);
    await expectClosed(c);
  });

  it('applies the head limit to the second request on a kept-alive connection', async () => {
    const { port } = await lengthServer({ maxHeaderBytes: 8192 });
    const c = await rawClient(port);
    await c.write(get('/1'));
    expect((await c.response()).status).toBe(200);
    await c.write(`GET /2 HTTP/1.1\r\nHost: x\r\n${manyHeaders(200)}\r\n`);
    expect((await c.response()).status).toBe(431);
    await expectClosed(c);
  });
});

describe('maxBodyBytes (serve)', () => {
  it('a Content-Length beyond the limit gets 413 right after the head, without the body', async () => {
    const { port, calls, server } = await lengthServer({ maxBodyBytes: 1_000_000 });
    const c = await rawClient(port);
    // Only the head is sent; the body never comes.
    await c.write('POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: 1000001\r\n\r\n');
    const r = await c.response({ timeout: 3000 });
    expect(r.status).toBe(413);
    expect(r.headers.get('Connection')).toBe('close');
    await expectClosed(c, 3000);
    expect(calls()).toBe(0);
    await waitConnections(server, 0);
    await expectServing(port);
  });

  it('answers 413 instead of 100 Continue for Expect: 100-continue with a too-large body', async () => {
    const { port, calls } = await lengthServer({ maxBodyBytes: 1000 });
    const c = await rawClient(port);
    await c.write('POST /big HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n');
    const bytes = await expectClosed(c, 3000);
    expect(statusOf(bytes)).toBe(413);
    expect(bytes.toString('latin1')).not.toContain('100 Continue');
    expect(calls()).toBe(0);
  });

  it('a body of exactly maxBodyBytes is served', async () => {
    const { port } = await lengthServer({ maxBodyBytes: 10_000 });
    const c = await rawClient(port);
    await c.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10000\r\n\r\n');
    await c.write(Buffer.alloc(10_000, 0x62));
    const r = await c.response();
    expect(r.status).toBe(200);
    expect(r.text).toBe('10000');
  });

  it('a chunked body growing past the limit gets 413 and a close', async () => {
    const { port, calls, server } = await lengthServer({ maxBodyBytes: 10_000 });
    const c = await rawClient(port);
    await c.write('POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n');
    const chunk = `1000\r\n${'c'.repeat(4096)}\r\n`;
    // Keep sending chunks until the server answers; never send the last chunk.
    for (let i = 0; i < 10 && c.received.length === 0 && !c.isClosed; i++) await c.write(chunk).catch(() => undefined);
    const bytes = await expectClosed(c, 3000);
    expect(statusOf(bytes)).toBe(413);
    expect(calls()).toBe(0);
    await waitConnections(server, 0);
    await expectServing(port);
  });

  it('a chunked body just under the limit is served', async () => {
    const { port } = await lengthServer({ maxBodyBytes: 10_000 });
    const c = await rawClient(port);
    await c.write(`POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1000\r\n${'c'.repeat(4096)}\r\n1000\r\n${'c'.repeat(4096)}\r\n0\r\n\r\n`);
    const r = await c.response();
    expect(r.status).toBe(200);
    expect(r.text).toBe('8192');
  });

  it('maxBodyBytes 0 means unlimited: 3 MiB is served', async () => {
    const { port } = await lengthServer({ maxBodyBytes: 0 });
    const size = 3 * 1024 * 1024;
    const c = await rawClient(port);
    await c.write(`POST / HTTP/1.1\r\nHost: x\r\nContent-Length: ${size}\r\n\r\n`);
    await c.write(Buffer.alloc(size, 0x61));
    const r = await c.response();
    expect(r.status).toBe(200);
    expect(r.text).toBe(String(size));
  });

  it('maxBodyBytes 0 with a 3 MiB chunked body', async () => {
    const { port } = await lengthServer({ maxBodyBytes: 0 });
    const piece = Buffer.alloc(1024 * 1024, 0x61);
    const c = await rawClient(port);
    await c.write('POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n');
    for (let i = 0; i < 3; i++) {
      await c.write(`${piece.length.toString(16)}\r\n`);
      await c.write(piece);
      await c.write('\r\n');
    }
    await c.write('0\r\n\r\n');
    const r = await c.response();
    expect(r.status).toBe(200);
    expect(r.text).toBe(String(3 * 1024 * 1024));
  });

  it('the default limit (64 MiB) refuses a larger Content-Length at once', async () => {
    const { port } = await lengthServer();
    const c = await rawClient(port);
    await c.write(`POST / HTTP/1.1\r\nHost: x\r\nContent-Length: ${64 * 1024 * 1024 + 1}\r\n\r\n`);
    expect((await c.response({ timeout: 3000 })).status).toBe(413);
  });
});

/** Expects `fn` to fail with an ArgumentError matching `message`, thrown or as a rejection. */
async function expectArgumentError(fn: () => unknown, message: RegExp): Promise<void> {
  let result: unknown;
  try {
    result = fn();
    if (result instanceof Promise) result = await result;
  } catch (err) {
    expect(err).toBeInstanceOf(ArgumentError);
    expect((err as Error).message).toMatch(message);
    return;
  }
  if (result instanceof Server) await result.forceClose();
  throw new Error(`expected an ArgumentError matching ${message}, but the call succeeded`);
}

describe('options validation', () => {
  const ok = (): Response => new Response(200, 'ok');
  const okStream = async (s: Stream): Promise<void> => {
    await s.write('ok');
  };

  it('an unknown option names the option', async () => {
    await expectArgumentError(() => serve(ok, { port: 0, maxHeadrBytes: 10 } as never), /unknown.*maxHeadrBytes/);
    await expectArgumentError(() => listen(okStream, { port: 0, readtimeout: 10 } as never), /unknown.*readtimeout/);
    await expectArgumentError(() => new Server({ handler: ok, port: 0, bogus: true } as never), /unknown.*bogus/);
  });

  it('a negative or non-numeric timeout names the option', async () => {
    for (const key of ['readHeaderTimeout', 'readTimeout', 'writeTimeout', 'idleTimeout']) {
      await expectArgumentError(() => serve(ok, { port: 0, [key]: -1 }), new RegExp(key));
      await expectArgumentError(() => serve(ok, { port: 0, [key]: Number.NaN }), new RegExp(key));
      await expectArgumentError(() => serve(ok, { port: 0, [key]: '100' as never }), new RegExp(key));
    }
  });

  it('a non-integer or out-of-range port names the option', async () => {
    await expectArgumentError(() => serve(ok, { port: 80.5 }), /port/);
    await expectArgumentError(() => serve(ok, { port: -1 }), /port/);
    await expectArgumentError(() => serve(ok, { port: 65536 }), /port/);
    await expectArgumentError(() => serve(ok, { port: '8080' as never }), /port/);
  });

  it('limits must be integers of at least 1 (maxBodyBytes at least 0)', async () => {
    await expectArgumentError(() => serve(ok, { port: 0, maxHeaderBytes: 0 }), /maxHeaderBytes/);
    await expectArgumentError(() => serve(ok, { port: 0, maxLineBytes: 1.5 }), /maxLineBytes/);
    await expectArgumentError(() => serve(ok, { port: 0, maxBodyBytes: -1 }), /maxBodyBytes/);
  });

  it('maxBodyBytes passed to listen() is refused with a pointer to serve()', async () => {
    await expectArgumentError(() => listen(okStream, { port: 0, maxBodyBytes: 10 }), /maxBodyBytes.*serve/);
    await expectArgumentError(() => new Server({ handler: okStream, stream: true, port: 0, maxBodyBytes: 10 }), /maxBodyBytes/);
  });

  it('a handler that is not a function is refused', async () => {
    await expectArgumentError(() => serve('nope' as never, { port: 0 }), /handler/);
    await expectArgumentError(() => listen(null as never, { port: 0 }), /handler/);
  });

  it('valid options start a server', async () => {
    const { port } = await startServer(ok, { readHeaderTimeout: 1000, readTimeout: 1000, writeTimeout: 1000, idleTimeout: 1000, maxBodyBytes: 0, maxHeaderBytes: 4096, maxLineBytes: 1024 });
    await expectServing(port);
  });
});

describe('default head limits', () => {
  it('a head over 64 KiB gets 431; one just under is served', async () => {
    const { port } = await startServer(() => new Response(200, 'ok'));
    const ok = await rawClient(port);
    await ok.write(headOf(63 * 1024));
    expect((await ok.response()).status).toBe(200);
    const big = await rawClient(port);
    await big.write(headOf(70 * 1024));
    expect((await big.response()).status).toBe(431);
  });

  it('a request line over 32 KiB gets 414, a header line over 32 KiB gets 431', async () => {
    const { port } = await startServer(() => new Response(200, 'ok'));
    const line = await rawClient(port);
    await line.write(get(`/${'a'.repeat(33 * 1024)}`));
    expect((await line.response()).status).toBe(414);
    const field = await rawClient(port);
    await field.write(get('/', `X-Big: ${'b'.repeat(33 * 1024)}\r\n`));
    expect((await field.response()).status).toBe(431);
    const fits = await rawClient(port);
    await fits.write(get(`/${'a'.repeat(31 * 1024)}`, `X-Big: ${'b'.repeat(31 * 1024)}\r\n`));
    expect((await fits.response()).status).toBe(200);
  });
});
