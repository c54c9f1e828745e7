/**
 * Trailers that may not trail (RFC 9110 §6.5.1: framing, routing, authentication, content
 * format, controls) on real loopback connections: the server refuses to send them (stream
 * handlers at `addTrailer`, request handlers before the head), drops them from request
 * trailers it reads, and the client drops them from response trailers.
 */
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { ArgumentError, Client, CallbackBody, Request as KRequest, Response, type Request, type Stream } from '../../../kernel/index.js';
import { closeAfter, closeNetServerAfter, destroyAfter } from '../../helpers/cleanup.js';
import { rawClient, startServer, startStreamServer, within } from '../../helpers/server.js';

/** The bytes after the last chunk of a chunked message in `raw` (its trailer section). */
function trailerSection(raw: string): string {
  const i = raw.lastIndexOf('\r\n0\r\n');
  return i < 0 ? '' : raw.slice(i + 5);
}

/** A body that yields `parts` then ends, of unknown length (so chunked). */
function partsBody(parts: string[]): CallbackBody {
  const queue = parts.map((p) => Buffer.from(p));
  return new CallbackBody((dst) => {
    const next = queue.shift();
    if (next === undefined) return 0;
    dst.set(next);
    return next.length;
  });
}

describe('server: sending trailers', () => {
  it('addTrailer refuses each forbidden field with an ArgumentError naming it; allowed ones go out', async () => {
    const refusals: string[] = [];
    const { port } = await startStreamServer(async (stream: Stream) => {
      await stream.write('hello');
      for (const [k, v] of [
        ['Content-Length', '5'],
        ['transfer-encoding', 'chunked'],
        ['Host', 'evil.example'],
        ['Content-Type', 'text/html'],
        ['Authorization', 'x'],
        ['Set-Cookie', 'a=1'],
      ]) {
        try {
          stream.addTrailer(k!, v!);
        } catch (err) {
          expect(err).toBeInstanceOf(ArgumentError);
          refusals.push((err as Error).message);
        }
      }
      expect(() => stream.addTrailer(['Connection', 'close'])).toThrow(ArgumentError);
      // A set with one forbidden field adds none of them.
      expect(() =>
        stream.addTrailer([
          ['X-Early', '1'],
          ['TE', 'trailers'],
        ]),
      ).toThrow(/"TE" cannot be sent as a trailer/);
      stream.addTrailer('X-Checksum', 'abc');
      await stream.closeWrite();
    });
    const c = await rawClient(port);
    await c.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    const res = await c.response();
    expect(res.text).toBe('hello');
    expect(refusals).toHaveLength(6);
    expect(refusals[0]).toMatch(/"Content-Length" cannot be sent as a trailer \(RFC 9110 §6\.5\.1/);
    expect(refusals[1]).toContain('"transfer-encoding"');
    expect(refusals[2]).toContain('"Host"');
    expect(trailerSection(c.received.toString('latin1'))).toBe('X-Checksum: abc\r\n\r\n');
  });

  it('a request handler Response with a forbidden trailer is a 500 with the error reported, nothing of it sent', async () => {
    const { port, errors } = await startServer(
      () =>
        new Response(200, partsBody(['a', 'b']), {
          trailers: [
            ['X-Ok', '1'],
            ['Content-Length', '99'],
          ],
        }),
    );
    const c = await rawClient(port);
    await c.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    const res = await c.response();
    expect(res.status).toBe(500);
    expect(c.received.toString('latin1')).not.toContain('99');
    expect(errors).toHaveLength(1);
    expect(errors[0]!.error).toBeInstanceOf(ArgumentError);
    expect((errors[0]!.error as Error).message).toContain('"Content-Length" cannot be sent as a trailer');
    // The same for a bytes body, whose framing would have dropped the trailers: the handler is wrong either way.
    const s2 = await startServer(() => new Response(200, 'x', { trailers: [['Host', 'h']] }));
    const c2 = await rawClient(s2.port);
    await c2.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    expect((await c2.response()).status).toBe(500);
  });

  it('allowed trailers of a request handler Response still go out after a chunked body', async () => {
    const { port } = await startServer(() => new Response(200, partsBody(['a', 'b']), { trailers: [['Server-Timing', 'db;dur=1']] }));
    const c = await rawClient(port);
    await c.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    expect((await c.response()).text).toBe('ab');
    expect(trailerSection(c.received.toString('latin1'))).toBe('Server-Timing: db;dur=1\r\n\r\n');
  });
});

describe('reading trailers', () => {
  it('the server drops forbidden fields from the request trailers it reads', async () => {
    const seen: [string, string][][] = [];
    const { port } = await startServer((req: Request) => {
      seen.push(req.trailers.toArray());
      return new Response(200, `${req.headers.get('Host')}|${req.headers.get('Content-Type') ?? ''}`);
    });
    const c = await rawClient(port);
    await c.write(
      'POST / HTTP/1.1\r\nHost: real.example\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n' +
        'X-Sum: 3\r\nHost: evil.example\r\nContent-Type: text/html\r\nContent-Length: 1\r\nAuthorization: Basic eA==\r\n\r\n',
    );
    const res = await c.response();
    expect(res.text).toBe('real.example|');
    expect(seen).toEqual([[['X-Sum', '3']]]);
  });

  it('the client drops forbidden fields from the response trailers it reads', async () => {
    const server = closeNetServerAfter(
      net.createServer((sock) => {
        destroyAfter(sock);
        sock.on('error', () => undefined);
        sock.once('data', () => {
          sock.write(
            'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n5\r\nhello\r\n0\r\n' +
              'X-Sum: 5\r\nContent-Type: text/html\r\nSet-Cookie: s=1\r\nContent-Encoding: gzip\r\nCache-Control: no-store\r\n\r\n',
          );
        });
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    const client = closeAfter(new Client());
    const res = await within(client.get(`http://127.0.0.1:${port}/`), 5000, 'the response');
    expect(Buffer.from(res.body as Uint8Array).toString()).toBe('hello');
    expect(res.trailers.toArray()).toEqual([['X-Sum', '5']]);
    expect(res.headers.get('Content-Type')).toBe('text/plain');
  });
});

describe('client: sending trailers', () => {
  it('refuses request trailers that may not trail before the head goes out; the connection stays usable and a streamed body is closed', async () => {
    let received = '';
    let connections = 0;
    const server = closeNetServerAfter(
      net.createServer((sock) => {
        connections++;
        destroyAfter(sock);
        sock.on('error', () => undefined);
        sock.on('data', (d: Buffer) => {
          received += d.toString('latin1');
          if (d.includes('\r\n\r\n')) sock.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
        });
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/`;
    const client = closeAfter(new Client());
    // A first request leaves a pooled connection the refused one must not break.
    expect((await within(client.get(url), 5000, 'the first response')).status).toBe(200);
    let closed = 0;
    const body = partsBody(['a', 'b']);
    const close = body.close.bind(body);
    body.close = () => {
      closed++;
      close();
    };
    const req = new KRequest('POST', '/refused', {
      body,
      trailers: [
        ['X-Ok', '1'],
        ['Transfer-Encoding', 'chunked'],
      ],
    });
    req.url = url;
    const err = await within(
      client.dispatch(req).then(
        () => null,
        (e: unknown) => e,
      ),
      5000,
      'the refusal',
    );
    expect(err).toBeInstanceOf(ArgumentError);
    expect((err as Error).message).toContain('"Transfer-Encoding" cannot be sent as a trailer');
    expect(closed).toBeGreaterThan(0);
    expect((await within(client.get(url), 5000, 'the second response')).status).toBe(200);
    expect(received).not.toContain('POST');
    expect(connections).toBe(1);
  });
});
