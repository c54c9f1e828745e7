/**
 * The client against hostile servers, played by raw `node:net` servers on loopback: an endless
 * body (stopped at `maxResponseBytes`), a declared length past it, bytes after a response that
 * has no body (HEAD, 204, 304), and a 101 to a request that did not ask to upgrade.
 */
import type net from 'node:net';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ArgumentError, HTTPError, ProtocolError, ResponseTooLargeError } from '../../../kernel/index.js';
import { DEFAULT_MAX_RESPONSE_BYTES } from '../../../kernel/client/call.js';
import { bytes, newClient, rawServer, readRequests, rejection, text, within } from '../../helpers/client.js';
import { h2Client, nodeServer } from '../../helpers/h2.js';

const MiB = 1024 * 1024;

/**
 * A server whose every response is an endless body (`framing`: chunked, or read to close),
 * written as fast as the socket drains until the client hangs up; `sent()` counts the body bytes.
 */
async function endlessServer(framing: 'chunked' | 'close'): Promise<{ origin: string; sent: () => number; closed: Promise<void> }> {
  let sent = 0;
  const piece = Buffer.alloc(64 * 1024, 0x61);
  const framed = framing === 'chunked' ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]) : piece;
  const srv = await rawServer((s) => {
    s.once('data', () => {
      s.write(`HTTP/1.1 200 OK\r\n${framing === 'chunked' ? 'Transfer-Encoding: chunked' : 'Connection: close'}\r\n\r\n`);
      const pump = (): void => {
        while (!s.destroyed && s.writable) {
          sent += piece.length;
          if (!s.write(framed)) {
            s.once('drain', pump);
            return;
          }
        }
      };
      pump();
    });
  });
  return { origin: srv.origin, sent: () => sent, closed: srv.acceptedAt(1).then(() => srv.closedAt(1)) };
}

describe('client: buffered bodies are bounded by maxResponseBytes', () => {
  it('an endless chunked body stops at the bound with ResponseTooLargeError naming responseStream, and the connection is closed', async () => {
    const srv = await endlessServer('chunked');
    const client = newClient();
    const err = await within(rejection(client.get(`${srv.origin}/`, { maxResponseBytes: MiB })), 10_000, 'the endless body to be cut');
    expect(err).toBeInstanceOf(ResponseTooLargeError);
    expect(err).toBeInstanceOf(HTTPError);
    const e = err as ResponseTooLargeError;
    expect(e.code).toBe('SWY_ERR_RESPONSE_TOO_LARGE');
    expect(e.limit).toBe(MiB);
    expect(e.received).toBeGreaterThan(MiB);
    expect(e.received).toBeLessThan(MiB + 512 * 1024);
    expect(e.contentLength).toBe(-1);
    expect(e.message).toContain('responseStream');
    expect(e.message).toContain('maxResponseBytes');
    await within(srv.closed, 5000, 'the client to close the connection');
    // What the server got out before the close: the bound and what sat in socket buffers, not more.
    expect(srv.sent()).toBeLessThan(64 * MiB);
  });

  it('the default bound is 64 MiB: an endless body read to close stops there', async () => {
    expect(DEFAULT_MAX_RESPONSE_BYTES).toBe(64 * MiB);
    const srv = await endlessServer('close');
    const client = newClient();
    const e = (await within(rejection(client.get(`${srv.origin}/`)), 20_000, 'the endless body to be cut')) as ResponseTooLargeError;
    expect(e).toBeInstanceOf(ResponseTooLargeError);
    expect(e.limit).toBe(64 * MiB);
    expect(e.received).toBeGreaterThan(64 * MiB);
    await within(srv.closed, 5000, 'the client to close the connection');
  });

  it('a Content-Length past the bound is refused at the head, without reading the body', async () => {
    const srv = await rawServer((s) => {
      s.once('data', () => s.write(`HTTP/1.1 200 OK\r\nContent-Length: ${8 * MiB}\r\n\r\n`)); // and nothing more
    });
    const client = newClient();
    const e = (await within(rejection(client.get(`${srv.origin}/`, { maxResponseBytes: MiB })), 5000, 'the declared length to be refused')) as ResponseTooLargeError;
    expect(e).toBeInstanceOf(ResponseTooLargeError);
    expect(e.contentLength).toBe(8 * MiB);
    expect(e.received).toBe(0);
    expect(e.message).toContain(`declares ${8 * MiB} bytes`);
    await within(srv.closedAt(1), 5000, 'the client to close the connection');
  });

  it('a body of exactly the bound passes and the connection is reused; 0 is no bound; responseStream is not bounded by it', async () => {
    const body = Buffer.alloc(MiB, 0x62);
    const srv = await rawServer((s) => {
      readRequests(s, () => s.write(Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n`), body])));
    });
    const client = newClient();
    expect(bytes(await client.get(`${srv.origin}/a`, { maxResponseBytes: MiB })).equals(body)).toBe(true);
    expect(bytes(await client.get(`${srv.origin}/b`, { maxResponseBytes: 0 })).length).toBe(MiB);
    expect(srv.connections).toBe(1);
    await expect(client.get(`${srv.origin}/c`, { maxResponseBytes: MiB - 1 })).rejects.toThrow(ResponseTooLargeError);
    let written = 0;
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        written += chunk.length;
        cb();
      },
    });
    const res = await client.get(`${srv.origin}/d`, { maxResponseBytes: 1024, responseStream: sink });
    expect(res.body).toBeNull();
    expect(written).toBe(MiB);
  });

  it('open(): stream.readAll() stops at the bound as well (the stream itself reads on unbounded)', async () => {
    const srv = await endlessServer('chunked');
    const client = newClient();
    const err = await within(rejection(client.open('GET', `${srv.origin}/`, (stream) => stream.readAll(), { maxResponseBytes: MiB })), 10_000, 'readAll to stop');
    expect(err).toBeInstanceOf(ResponseTooLargeError);
    expect((err as ResponseTooLargeError).limit).toBe(MiB);
    await within(srv.closed, 5000, 'the client to close the connection');
    const srv2 = await endlessServer('chunked');
    let got = 0;
    await client.open(
      'GET',
      `${srv2.origin}/`,
      async (stream) => {
        for await (const c of stream) {
          got += c.length;
          if (got > 2 * MiB) break;
        }
        await stream.closeRead();
      },
      { maxResponseBytes: MiB },
    );
    expect(got).toBeGreaterThan(2 * MiB);
  });

  it('HTTP/2 (h2c): an endless body stops at the bound too, and the stream is reset', async () => {
    let closed = false;
    const piece = Buffer.alloc(16 * 1024, 0x63);
    const { port } = await nodeServer((stream) => {
      stream.respond({ ':status': 200 });
      stream.on('close', () => (closed = true));
      stream.on('error', () => undefined);
      const pump = (): void => {
        while (!stream.destroyed && !stream.closed) {
          if (!stream.write(piece)) {
            stream.once('drain', pump);
            return;
          }
        }
      };
      pump();
    });
    const client = await h2Client();
    const e = (await within(
      rejection(client.get(`http://127.0.0.1:${port}/`, { http2PriorKnowledge: true, maxResponseBytes: MiB })),
      10_000,
      'the endless h2 body to be cut',
    )) as ResponseTooLargeError;
    expect(e).toBeInstanceOf(ResponseTooLargeError);
    expect(e.limit).toBe(MiB);
    await within(
      (async () => {
        while (!closed) await new Promise((r) => setImmediate(r));
      })(),
      5000,
      'the server to see its stream end',
    );
  });

  it('HTTP/2 (h2c): a Content-Length past the bound is refused at the head (the stream reset, the session kept); a body of exactly the bound passes; one byte over fails', async () => {
    const body = Buffer.alloc(64 * 1024, 0x64);
    const resets: number[] = [];
    const { port, sessions } = await nodeServer((stream, headers) => {
      stream.on('error', () => undefined);
      stream.on('close', () => resets.push(stream.rstCode));
      if (headers[':path'] === '/declared') {
        // A declared length past the bound, and nothing more: the client must not wait for it.
        stream.respond({ ':status': 200, 'content-length': String(8 * MiB) });
        stream.write(body);
        return;
      }
      // No content-length: the bound is found by counting.
      stream.respond({ ':status': 200 });
      stream.end(body);
    });
    const client = await h2Client({ http2PriorKnowledge: true });
    const origin = `http://127.0.0.1:${port}`;
    // A first call opens the session: the calls below take a pooled one, as most calls do.
    expect(bytes(await client.get(`${origin}/first`)).length).toBe(body.length);
    const e = (await within(rejection(client.get(`${origin}/declared`, { maxResponseBytes: MiB })), 5000, 'the declared length to be refused')) as ResponseTooLargeError;
    expect(e).toBeInstanceOf(ResponseTooLargeError);
    expect(e.limit).toBe(MiB);
    expect(e.contentLength).toBe(8 * MiB);
    expect(e.received).toBe(0);
    expect(e.message).toContain(`declares ${8 * MiB} bytes`);
    await within(
      (async () => {
        while (resets.length < 2) await new Promise((r) => setImmediate(r));
      })(),
      5000,
      'the server to see the stream reset',
    );
    expect(resets[1]).toBe(8); // CANCEL: only that stream
    const ok = await client.get(`${origin}/exact`, { maxResponseBytes: body.length });
    expect(bytes(ok).equals(body)).toBe(true);
    const over = (await rejection(client.get(`${origin}/over`, { maxResponseBytes: body.length - 1 }))) as ResponseTooLargeError;
    expect(over).toBeInstanceOf(ResponseTooLargeError);
    expect(over.limit).toBe(body.length - 1);
    expect(over.received).toBeGreaterThan(body.length - 1);
    expect(over.contentLength).toBe(-1);
    expect(bytes(await client.get(`${origin}/unbounded`, { maxResponseBytes: 0 })).length).toBe(body.length);
    expect(sessions.length).toBe(1);
  });

  it('a bad maxResponseBytes is an ArgumentError, at the call and on the Client', async () => {
    const client = newClient();
    await expect(client.get('http://127.0.0.1:1/', { maxResponseBytes: -1 })).rejects.toThrow(ArgumentError);
    await expect(client.get('http://127.0.0.1:1/', { maxResponseBytes: 1.5 })).rejects.toThrow(/maxResponseBytes must be a whole number/);
    expect(() => newClient({ maxResponseBytes: 'big' as never })).toThrow(/maxResponseBytes/);
  });
});

/** Answers each request with `answer(method)`, all in one write. */
async function answering(answer: (method: string) => string): Promise<Awaited<ReturnType<typeof rawServer>>> {
  return rawServer((s: net.Socket) => readRequests(s, (r) => s.write(answer(r.method))));
}

describe('client: bytes after a response without a body make its connection unusable', () => {
  const junk = 'HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nsmuggled';

  for (const [name, method, status] of [
    ['HEAD', 'HEAD', '200 OK\r\nContent-Length: 5'],
    ['204', 'GET', '204 No Content'],
    ['304', 'GET', '304 Not Modified'],
    ['Content-Length: 0', 'GET', '200 OK\r\nContent-Length: 0'],
  ] as const) {
    it(`${name} with more bytes in the same read: the connection is closed, not pooled`, async () => {
      const srv = await answering((m) => ((m === method && method === 'HEAD') || (m === 'GET' && method === 'GET') ? `HTTP/1.1 ${status}\r\n\r\n${junk}` : ''));
      const client = newClient();
      const res = await client.request(method, `${srv.origin}/first`, { statusException: false });
      expect(res.status).toBe(Number(status.slice(0, 3)));
      await within(srv.closedAt(1), 5000, 'the client to close the connection');
      // The next call does not read the extra bytes as its response: a new connection.
      const next = await client.request(method, `${srv.origin}/second`, { statusException: false });
      expect(next.status).toBe(Number(status.slice(0, 3)));
      expect(text(next)).not.toBe('smuggled');
      expect(srv.connections).toBe(2);
    });
  }

  it('HEAD and 204 without extra bytes keep the connection pooled', async () => {
    const srv = await answering((m) => (m === 'HEAD' ? 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n' : 'HTTP/1.1 204 No Content\r\n\r\n'));
    const client = newClient();
    expect((await client.head(`${srv.origin}/`)).status).toBe(200);
    expect((await client.get(`${srv.origin}/`)).status).toBe(204);
    // A HEAD's Content-Length is what a GET would get: not a body, so not held against the bound.
    expect((await client.head(`${srv.origin}/`, { maxResponseBytes: 1 })).status).toBe(200);
    expect(srv.connections).toBe(1);
  });
});

describe('client: 101 Switching Protocols', () => {
  it('to a request that did not ask to upgrade is a ProtocolError, and the connection is closed', async () => {
    const srv = await answering(() => 'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n\x81\x05hello');
    const client = newClient();
    const err = await within(rejection(client.get(`${srv.origin}/`)), 5000, 'the 101 to be refused');
    expect(err).toBeInstanceOf(ProtocolError);
    expect(err.message).toContain('did not ask to upgrade');
    await within(srv.closedAt(1), 5000, 'the client to close the connection');
  });

  it('a 101 in the middle of interim responses is refused as well; the next call gets a fresh connection', async () => {
    const srv = await answering((m) =>
      m === 'POST' ? 'HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n' : 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok',
    );
    const client = newClient();
    await expect(within(client.post(`${srv.origin}/`, { body: 'x' }), 5000, 'the 101 to be refused')).rejects.toThrow(ProtocolError);
    expect(text(await client.get(`${srv.origin}/`))).toBe('ok');
    expect(srv.connections).toBe(2);
  });
});
