import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ArgumentError, ParseError, ProtocolError } from '../../../kernel/errors.js';
import { AbstractBody, BytesBody, CallbackBody, nobody, readAll, trailers } from '../../../kernel/message/body.js';
import { Headers } from '../../../kernel/message/headers.js';
import { Request } from '../../../kernel/message/request.js';
import { Response } from '../../../kernel/message/response.js';
import { ByteReader } from '../../../kernel/http1/byte-reader.js';
import { IncomingBody } from '../../../kernel/http1/incoming-body.js';
import { readRequest, readResponse } from '../../../kernel/http1/read.js';
import { encodeChunk, encodeMessage, serializeLastChunk, serializeRequestHead, serializeResponseHead } from '../../../kernel/http1/serialize.js';
import { writeRequest, writeResponse } from '../../../kernel/http1/write.js';
import { b, MemorySink, pieces, prng } from './helpers.js';

async function bodyText(body: unknown): Promise<string> {
  if (body instanceof AbstractBody) return Buffer.from(await readAll(body)).toString('latin1');
  if (body instanceof Uint8Array) return Buffer.from(body).toString('latin1');
  if (typeof body === 'string') return body;
  return '';
}

/** An async iterable delivering `buf` in seeded random pieces (or byte by byte). */
function stream(buf: Uint8Array, how: 'whole' | 'bytes' | number): AsyncIterable<Uint8Array> {
  const parts = pieces(buf, typeof how === 'number' ? prng(how) : how);
  return {
    async *[Symbol.asyncIterator]() {
      for (const p of parts) {
        await Promise.resolve();
        yield p;
      }
    },
  };
}

/** A streamed body of unknown length that yields `parts`. */
function partsBody(parts: string[]): CallbackBody {
  const queue = parts.map((p) => b(p));
  return new CallbackBody((dst) => {
    const p = queue.shift();
    if (p === undefined) return 0;
    const n = Math.min(p.length, dst.length);
    dst.set(p.subarray(0, n));
    if (n < p.length) queue.unshift(p.subarray(n));
    return n;
  });
}

describe('readRequest', () => {
  it('reads a GET without body as nobody', async () => {
    const req = await readRequest(b('GET /a?b=c HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n'));
    expect(req.method).toBe('GET');
    expect(req.target).toBe('/a?b=c');
    expect(req.host).toBe('example.com');
    expect(req.body).toBe(nobody);
    expect(req.contentLength).toBe(0);
    expect(req.close).toBe(false);
    expect(req.protoMinor).toBe(1);
    expect(req.headers.toArray()).toEqual([
      ['Host', 'example.com'],
      ['Accept', '*/*'],
    ]);
    expect(trailers(req.body).size).toBe(0);
  });

  it('reads a Content-Length body', async () => {
    const req = await readRequest(b('POST /f HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\nhello world'));
    expect(req.body).toBeInstanceOf(IncomingBody);
    expect((req.body as IncomingBody).length).toBe(11);
    expect(req.contentLength).toBe(11);
    expect(await bodyText(req.body)).toBe('hello world');
  });

  it('gives Content-Length: 0 as nobody', async () => {
    const req = await readRequest(b('POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n'));
    expect(req.body).toBe(nobody);
  });

  it('reads a chunked body and its trailers', async () => {
    const raw = b('POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTrailer: x-sum\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\nx-sum: 42\r\n\r\n');
    for (const how of ['whole', 'bytes', 1, 2, 3] as const) {
      const req = await readRequest(stream(raw, how));
      expect(req.contentLength).toBe(-1);
      expect((req.body as IncomingBody).length).toBe(-1);
      expect(trailers(req.body).size).toBe(0);
      expect(await bodyText(req.body)).toBe('hello world');
      expect(trailers(req.body).toArray()).toEqual([['X-Sum', '42']]);
    }
  });

  it('marks HTTP/1.0 and Connection: close requests as close', async () => {
    expect((await readRequest(b('GET / HTTP/1.0\r\n\r\n'))).close).toBe(true);
    expect((await readRequest(b('GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n'))).close).toBe(false);
    expect((await readRequest(b('GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n'))).close).toBe(true);
    expect((await readRequest(b('GET / HTTP/1.0\r\n\r\n'))).protoMinor).toBe(0);
  });

  it('reads pipelined requests from one buffer, the second after the first body', async () => {
    const raw = b(
      'POST /one HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc' +
        'PUT /two HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nxy\r\n0\r\n\r\n' +
        'GET /three HTTP/1.1\r\nHost: h\r\n\r\n',
    );
    for (const how of ['whole', 'bytes', 5, 6, 7, 8] as const) {
      const reader = new ByteReader(stream(raw, how));
      const r1 = await readRequest(reader);
      expect(r1.target).toBe('/one');
      expect(await bodyText(r1.body)).toBe('abc');
      const r2 = await readRequest(reader);
      expect(r2.target).toBe('/two');
      expect(await bodyText(r2.body)).toBe('xy');
      const r3 = await readRequest(reader);
      expect(r3.target).toBe('/three');
      expect(r3.body).toBe(nobody);
      expect(await reader.hasMore()).toBe(false);
      await expect(readRequest(reader)).rejects.toThrow(/before a request head/);
    }
  });

  it('keeps one reader per stream so a Readable can be read twice', async () => {
    const src = Readable.from([b('GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HT'), b('TP/1.1\r\nHost: h\r\n\r\n')]);
    expect((await readRequest(src)).target).toBe('/1');
    expect((await readRequest(src)).target).toBe('/2');
  });

  it('raises ParseError for truncated bodies', async () => {
    const fixed = await readRequest(b('POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc'));
    await expect(readAll(fixed.body as AbstractBody)).rejects.toThrow(ParseError);
    await expect(readAll(fixed.body as AbstractBody)).rejects.toThrow(/7 bytes short of Content-Length 10/);
    const chunked = await readRequest(b('POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel'));
    await expect(readAll(chunked.body as AbstractBody)).rejects.toThrow(ParseError);
    const noLast = await readRequest(b('POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n'));
    await expect(readAll(noLast.body as AbstractBody)).rejects.toThrow(/inside a chunked body/);
  });

  it('raises ParseError for a stream that ends before or inside the head', async () => {
    await expect(readRequest(new Uint8Array(0))).rejects.toThrow(ParseError);
    await expect(readRequest(b('GET / HTTP/1.1\r\nHost: a\r\n'))).rejects.toThrow(/inside the request head/);
  });

  it('raises ParseError and ProtocolError for invalid requests', async () => {
    await expect(readRequest(b('GET / HTTP/1.1\r\nHost: h\r\nX : y\r\n\r\n'))).rejects.toThrow(ParseError);
    await expect(readRequest(b('POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n'))).rejects.toThrow(ProtocolError);
    await expect(readRequest(b('GET / HTTP/1.1\r\nHost: h\r\nX-A: b\r\n\r\n'), { maxHeaderBytes: 20 })).rejects.toThrow(/maxHeaderBytes \(20 bytes\)/);
    await expect(readRequest(b(`GET /${'a'.repeat(100)} HTTP/1.1\r\nHost: h\r\n\r\n`), { maxLineBytes: 50 })).rejects.toThrow(/maxLineBytes \(50 bytes\)/);
  });

  it('applies maxHeaderBytes to trailers too', async () => {
    const raw = b(`POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: ${'t'.repeat(100)}\r\n\r\n`);
    const req = await readRequest(raw, { maxHeaderBytes: 100 });
    await expect(readAll(req.body as AbstractBody)).rejects.toThrow(/maxHeaderBytes \(100 bytes\)/);
  });

  it('reads a body into small buffers', async () => {
    const req = await readRequest(b('POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\na\r\n0123456789\r\n0\r\n\r\n'));
    const body = req.body as IncomingBody;
    const dst = new Uint8Array(3);
    let s = '';
    for (;;) {
      const n = await body.read(dst);
      if (n === 0) break;
      s += Buffer.from(dst.subarray(0, n)).toString('latin1');
    }
    expect(s).toBe('0123456789');
    expect(body.complete).toBe(true);
    expect(await body.read(dst)).toBe(0);
  });
});

describe('readResponse', () => {
  it('reads a Content-Length response and leaves the next one', async () => {
    const reader = new ByteReader(b('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n'));
    const r1 = await readResponse(reader);
    expect(r1.status).toBe(200);
    expect(r1.reason).toBe('OK');
    expect(r1.close).toBe(false);
    expect(await bodyText(r1.body)).toBe('ok');
    const r2 = await readResponse(reader);
    expect(r2.status).toBe(404);
    expect(r2.body).toBe(nobody);
  });

  it('skips 1xx responses by default and can return them', async () => {
    const raw = b('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nx');
    const seen: number[] = [];
    const r = await readResponse(raw, { onInformational: (res) => seen.push(res.status) });
    expect(r.status).toBe(201);
    expect(seen).toEqual([100, 103]);
    expect(await bodyText(r.body)).toBe('x');
    const reader = new ByteReader(raw);
    expect((await readResponse(reader, { returnInformational: true })).status).toBe(100);
    expect((await readResponse(reader, { returnInformational: true })).status).toBe(103);
    expect((await readResponse(reader, { returnInformational: true })).status).toBe(201);
  });

  it('returns 101 and leaves the upgraded bytes in the source', async () => {
    const reader = new ByteReader(b('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n\x81\x05hello'));
    const r = await readResponse(reader);
    expect(r.status).toBe(101);
    expect(r.body).toBe(nobody);
    expect(Buffer.from((await reader.read())!).toString('latin1')).toBe('\x81\x05hello');
  });

  it('has no body for HEAD, 204 and 304 even with framing headers', async () => {
    const head = new Request('HEAD', '/');
    const reader = new ByteReader(b('HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\nHTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n'));
    const r1 = await readResponse(reader, { request: head });
    expect(r1.body).toBe(nobody);
    expect(r1.headers.get('Content-Length')).toBe('1234');
    expect(r1.request).toBe(head);
    expect((await readResponse(reader)).body).toBe(nobody);
    expect((await readResponse(reader)).body).toBe(nobody);
    expect(await reader.hasMore()).toBe(false);
  });

  it('reads until close without framing', async () => {
    const r = await readResponse(stream(b('HTTP/1.1 200 OK\r\n\r\nall the rest'), 3));
    expect(r.close).toBe(true);
    expect(r.contentLength).toBe(-1);
    expect((r.body as IncomingBody).kind).toBe('close');
    expect(await bodyText(r.body)).toBe('all the rest');
  });

  it('reads a chunked response with trailers', async () => {
    const r = await readResponse(b('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\ngrpc-status: 0\r\n\r\n'));
    expect(await bodyText(r.body)).toBe('abc');
    expect(trailers(r.body).toArray()).toEqual([['Grpc-Status', '0']]);
  });
});

describe('transfer codings (RFC 9112 §6.1, §6.3, §7)', () => {
  const post = (te: string, body = '5\r\nhello\r\n0\r\n\r\n'): Buffer => b(`POST /up HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: ${te}\r\n\r\n${body}`);
  const ok = (te: string, body = '5\r\nhello\r\n0\r\n\r\n'): Buffer => b(`HTTP/1.1 200 OK\r\nTransfer-Encoding: ${te}\r\n\r\n${body}`);

  async function refusal(p: Promise<unknown>): Promise<ProtocolError> {
    const err = await p.then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ProtocolError);
    return err as ProtocolError;
  }

  it('a request whose only coding is chunked is read as chunked, whole or split', async () => {
    for (const te of ['chunked', 'Chunked', 'chunked , ', ', chunked']) {
      for (const how of ['whole', 'bytes', 1, 2] as const) {
        const req = await readRequest(stream(post(te), how));
        expect(req.contentLength).toBe(-1);
        expect(await bodyText(req.body)).toBe('hello');
      }
    }
  });

  it('a request with chunked parameters, a malformed list or no coding is refused as malformed, not taken as chunked', async () => {
    for (const te of ['chunked;', 'chunked; q=1', 'chunked;foo="bar"', ',', '', 'chunked x', 'gzip;q, chunked']) {
      for (const how of ['whole', 'bytes'] as const) {
        const err = await refusal(readRequest(stream(post(te), how)));
        expect(err.notImplemented, te).toBe(false);
        expect(err.message).toMatch(/Transfer-Encoding/);
      }
    }
  });

  it('a request whose final coding is not a single chunked is refused (400), even when the rest is a coding we lack', async () => {
    for (const te of ['gzip', 'chunked, gzip', 'chunked, chunked', 'chunked\r\nTransfer-Encoding: chunked']) {
      const err = await refusal(readRequest(post(te)));
      expect(err.notImplemented, te).toBe(false);
      expect(err.message).toContain('single chunked');
    }
  });

  it('a request with a coding other than chunked before chunked is refused as not implemented (501), never decoded as chunked', async () => {
    for (const te of ['identity, chunked', 'gzip, chunked', 'deflate,chunked', 'compress, chunked', 'gzip\r\nTransfer-Encoding: chunked', 'br;q="a,b", chunked']) {
      for (const how of ['whole', 'bytes'] as const) {
        const err = await refusal(readRequest(stream(post(te), how)));
        expect(err.notImplemented, te).toBe(true);
        expect(err.message).toMatch(/is not implemented: only chunked is/);
      }
    }
  });

  it('an HTTP/1.0 request with Transfer-Encoding is refused (faulty framing, RFC 9112 §6.1)', async () => {
    const err = await refusal(readRequest(b('POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n')));
    expect(err.message).toContain('HTTP/1.0');
  });

  it('a response is read as chunked only when chunked is its only coding; otherwise ProtocolError, not a body read until close', async () => {
    const r = await readResponse(stream(ok('chunked, '), 'bytes'));
    expect(await bodyText(r.body)).toBe('hello');
    for (const te of ['gzip', 'chunked, gzip', 'gzip, chunked', 'identity, chunked', 'chunked, chunked', 'chunked;', 'chunked; q=1', ',']) {
      for (const how of ['whole', 'bytes'] as const) {
        const err = await refusal(readResponse(stream(ok(te, '\x1f\x8b'), how)));
        expect(err.message).toMatch(/Transfer-Encoding/);
      }
    }
    const g = await refusal(readResponse(ok('gzip, chunked')));
    expect(g.notImplemented).toBe(true);
  });

  it('an HTTP/1.0 response with Transfer-Encoding does not keep the connection', async () => {
    const reader = new ByteReader(b('HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n'));
    const r = await readResponse(reader);
    expect(r.close).toBe(true);
    expect(await bodyText(r.body)).toBe('ok');
  });
});

describe('serializer', () => {
  it('serializes a response head with the default reason and framing', () => {
    const h = new Headers([['Content-Type', 'text/plain']]);
    expect(serializeResponseHead(200, '', h, 5)).toBe('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\n');
    expect(serializeResponseHead(404, '', null, 'chunked', true)).toBe('HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n');
    expect(serializeResponseHead(299, '', null, 'none')).toBe('HTTP/1.1 299 \r\n\r\n');
    expect(serializeResponseHead(200, 'Fine', null, 0)).toBe('HTTP/1.1 200 Fine\r\nContent-Length: 0\r\n\r\n');
  });

  it('serializes a request head with Host first', () => {
    const h = new Headers([
      ['Accept', '*/*'],
      ['host', 'h.example'],
      ['X-A', 'b'],
    ]);
    expect(serializeRequestHead('GET', '/p', h, 'ignored', 'none')).toBe('GET /p HTTP/1.1\r\nhost: h.example\r\nAccept: */*\r\nX-A: b\r\n\r\n');
    expect(serializeRequestHead('POST', '/p', new Headers([['A', 'b']]), 'x.test:8080', 3)).toBe('POST /p HTTP/1.1\r\nHost: x.test:8080\r\nA: b\r\nContent-Length: 3\r\n\r\n');
  });

  it('rejects response splitting and invalid tokens with ArgumentError before writing', async () => {
    const bad: [string, string][] = [
      ['X-A', 'a\r\nSet-Cookie: evil=1'],
      ['X-A', 'a\nb'],
      ['X-A', 'a\rb'],
      ['X-A', 'a\0b'],
      ['X-A', 'a\x01b'],
      ['X-A', '\u0100'],
      ['X A', 'b'],
      ['X:A', 'b'],
      ['', 'b'],
      ['X\r\nA', 'b'],
    ];
    for (const [name, value] of bad) {
      const sink = new MemorySink();
      const res = new Response(200, 'x');
      res.headers.push(name, value);
      await expect(writeResponse(sink, res)).rejects.toThrow(ArgumentError);
      expect(sink.writes).toBe(0);
      const req = new Request('GET', '/');
      req.headers.push(name, value);
      await expect(writeRequest(sink, req)).rejects.toThrow(ArgumentError);
      expect(sink.writes).toBe(0);
    }
    const sink = new MemorySink();
    await expect(writeRequest(sink, new Request('GET', '/a b'))).rejects.toThrow(ArgumentError);
    await expect(writeRequest(sink, new Request('G ET', '/'))).rejects.toThrow(ArgumentError);
    await expect(writeRequest(sink, new Request('GET', '/\r\nX: y'))).rejects.toThrow(ArgumentError);
    await expect(writeResponse(sink, new Response(200, 'x', { reason: 'OK\r\nX: y' }))).rejects.toThrow(ArgumentError);
    await expect(writeRequest(sink, new Request('GET', '/', { host: 'a\r\nb' }))).rejects.toThrow(ArgumentError);
    const tr = new Request('POST', '/', { body: partsBody(['a']), trailers: [['X-T', 'a\nb']] });
    await expect(writeRequest(sink, tr)).rejects.toThrow(ArgumentError);
    expect(sink.writes).toBe(0);
  });

  it('rejects inconsistent framing', async () => {
    const sink = new MemorySink();
    await expect(writeResponse(sink, new Response(200, 'abc', { headers: [['Content-Length', '5']] }))).rejects.toThrow(/does not match/);
    await expect(
      writeResponse(
        sink,
        new Response(200, 'abc', {
          headers: [
            ['Content-Length', '3'],
            ['Transfer-Encoding', 'chunked'],
          ],
        }),
      ),
    ).rejects.toThrow(ArgumentError);
    await expect(writeResponse(sink, new Response(200, 'abc', { headers: [['Transfer-Encoding', 'gzip']] }))).rejects.toThrow(/must end with chunked/);
    // By the rules the parser reads them with: chunked once, last, without parameters.
    for (const te of ['chunked, chunked', 'chunked;q=1', 'chunked;', ',', 'gzip;, chunked']) {
      await expect(writeResponse(sink, new Response(200, 'abc', { headers: [['Transfer-Encoding', te]] })), te).rejects.toThrow(ArgumentError);
    }
    await expect(
      writeRequest(
        sink,
        new Request('POST', '/', {
          body: 'abc',
          headers: [
            ['Host', 'h'],
            ['Transfer-Encoding', 'chunked'],
            ['Transfer-Encoding', 'chunked'],
          ],
        }),
      ),
    ).rejects.toThrow(/once/);
    await expect(writeRequest(sink, new Request('POST', '/', { body: 'abc', contentLength: 5 }))).rejects.toThrow(/does not match/);
    expect(sink.writes).toBe(0);
    // A streamed body that disagrees with its declared length fails while streaming.
    await expect(writeResponse(new MemorySink(), new Response(200, partsBody(['abc', 'def']), { contentLength: 4 }))).rejects.toThrow(/longer than its Content-Length 4/);
    await expect(writeResponse(new MemorySink(), new Response(200, partsBody(['ab']), { contentLength: 4 }))).rejects.toThrow(/after 2 of its 4-byte/);
  });

  it('encodes chunks and last chunks', () => {
    expect(encodeChunk(b('hello')).toString('latin1')).toBe('5\r\nhello\r\n');
    expect(encodeChunk(Buffer.alloc(0)).length).toBe(0);
    expect(encodeChunk(Buffer.alloc(255, 0x61)).toString('latin1', 0, 4)).toBe('ff\r\n');
    expect(serializeLastChunk(null)).toBe('0\r\n\r\n');
    expect(serializeLastChunk(new Headers([['X-A', '1']]))).toBe('0\r\nX-A: 1\r\n\r\n');
    expect(encodeMessage('H\r\n\r\n', 'é').toString('utf8')).toBe('H\r\n\r\né');
  });
});

/** Writes then reads back; asserts the bytes parse to the same message in every split. */
async function roundTripRequest(req: Request, bodyBefore: string): Promise<{ wire: string; parsed: Request; body: string }> {
  const sink = new MemorySink();
  await writeRequest(sink, req);
  const wire = sink.bytes;
  let first: { parsed: Request; body: string } | null = null;
  for (const how of ['whole', 'bytes', 11, 12] as const) {
    const parsed = await readRequest(stream(wire, how));
    const body = await bodyText(parsed.body);
    expect(body).toBe(bodyBefore);
    first ??= { parsed, body };
  }
  return { wire: wire.toString('latin1'), ...first! };
}

describe('round trips', () => {
  it('request with a string body uses Content-Length', async () => {
    const req = new Request('POST', '/submit', { headers: [['Content-Type', 'text/plain']], body: 'héllo', host: 'example.com' });
    const { wire, parsed } = await roundTripRequest(req, 'h\xc3\xa9llo');
    expect(wire.startsWith('POST /submit HTTP/1.1\r\nHost: example.com\r\nContent-Type: text/plain\r\nContent-Length: 6\r\n\r\n')).toBe(true);
    expect(parsed.contentLength).toBe(6);
    expect(parsed.headers.get('Content-Type')).toBe('text/plain');
    expect(parsed.host).toBe('example.com');
  });

  it('request with bytes body and known-length BytesBody', async () => {
    const { parsed } = await roundTripRequest(new Request('PUT', '/b', { host: 'h', body: b('\x00\x01\x02') }), '\x00\x01\x02');
    expect(parsed.contentLength).toBe(3);
    const { wire } = await roundTripRequest(new Request('PUT', '/b', { host: 'h', body: new BytesBody('abcd') }), 'abcd');
    expect(wire).toContain('Content-Length: 4\r\n');
    expect(wire).not.toContain('chunked');
  });

  it('GET without body sends no Content-Length; empty POST sends 0', async () => {
    const { wire } = await roundTripRequest(new Request('GET', '/', { headers: [['Host', 'h']] }), '');
    expect(wire).toBe('GET / HTTP/1.1\r\nHost: h\r\n\r\n');
    const post = await roundTripRequest(new Request('POST', '/', { host: 'h' }), '');
    expect(post.wire).toBe('POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n');
  });

  it('request with a streamed body uses chunked and carries trailers', async () => {
    const req = new Request('POST', '/up', { host: 'h', body: partsBody(['hello', ' ', 'world']), trailers: [['X-Checksum', 'abc']] });
    const { wire, parsed } = await roundTripRequest(req, 'hello world');
    expect(wire).toContain('Transfer-Encoding: chunked\r\n');
    expect(wire.endsWith('0\r\nX-Checksum: abc\r\n\r\n')).toBe(true);
    expect(parsed.contentLength).toBe(-1);
  });

  it('trailers of a string body are not sent (only chunked carries trailers)', async () => {
    const { wire } = await roundTripRequest(new Request('POST', '/', { host: 'h', body: 'x', trailers: [['X-T', '1']] }), 'x');
    expect(wire).not.toContain('X-T');
  });

  it('trailers are read back after a chunked round trip', async () => {
    const sink = new MemorySink();
    await writeRequest(
      sink,
      new Request('POST', '/', {
        host: 'h',
        body: partsBody(['a']),
        trailers: [
          ['x-t', '1'],
          ['X-U', '2'],
        ],
      }),
    );
    const parsed = await readRequest(sink.bytes);
    await bodyText(parsed.body);
    expect(trailers(parsed.body).toArray()).toEqual([
      ['X-T', '1'],
      ['X-U', '2'],
    ]);
  });

  it('Host from the headers goes first; request.host when there is none', async () => {
    const sink = new MemorySink();
    await writeRequest(
      sink,
      new Request('GET', '/', {
        headers: [
          ['Accept', '*/*'],
          ['Host', 'first.example'],
        ],
        host: 'other',
      }),
    );
    expect(sink.text).toBe('GET / HTTP/1.1\r\nHost: first.example\r\nAccept: */*\r\n\r\n');
  });

  it('close adds Connection: close', async () => {
    const sink = new MemorySink();
    await writeRequest(sink, new Request('GET', '/', { close: true, host: 'h' }));
    expect(sink.text).toBe('GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n');
  });

  async function roundTripResponse(res: Response, req: Request | null, expectBody: string): Promise<{ wire: string; parsed: Response }> {
    const sink = new MemorySink();
    await writeResponse(sink, res, req);
    const wire = sink.bytes;
    let parsed: Response | null = null;
    for (const how of ['whole', 'bytes', 21] as const) {
      const reader = new ByteReader(stream(wire, how));
      const p = await readResponse(reader, { request: req });
      expect(await bodyText(p.body)).toBe(expectBody);
      expect(await reader.hasMore()).toBe(false);
      parsed ??= p;
    }
    return { wire: wire.toString('latin1'), parsed: parsed! };
  }

  it('response with string body', async () => {
    const { wire, parsed } = await roundTripResponse(new Response(200, 'hi there', { headers: [['Content-Type', 'text/plain']] }), null, 'hi there');
    expect(wire).toBe('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 8\r\n\r\nhi there');
    expect(parsed.reason).toBe('OK');
  });

  it('empty response sends Content-Length: 0', async () => {
    const { wire } = await roundTripResponse(new Response(404), null, '');
    expect(wire).toBe('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n');
  });

  it('response with a streamed body and trailers', async () => {
    const big = 'z'.repeat(200_000);
    const res = new Response(200, partsBody(['start-', big, '-end']), { trailers: [['Server-Timing', 'total;dur=1']] });
    const sink = new MemorySink();
    await writeResponse(sink, res);
    expect(res.body instanceof AbstractBody && res.body.closed).toBe(true);
    const parsed = await readResponse(sink.bytes);
    expect(await bodyText(parsed.body)).toBe(`start-${big}-end`);
    expect(trailers(parsed.body).toArray()).toEqual([['Server-Timing', 'total;dur=1']]);
  });

  it('HEAD response keeps Content-Length but sends no body', async () => {
    const head = new Request('HEAD', '/');
    const { wire } = await roundTripResponse(new Response(200, 'the body'), head, '');
    expect(wire).toBe('HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 8\r\n\r\n');
    const given = await roundTripResponse(new Response(200, null, { headers: [['Content-Length', '1234']] }), head, '');
    expect(given.wire).toBe('HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n');
    const streamed = new Response(200, partsBody(['x']));
    const s = await roundTripResponse(streamed, head, '');
    expect(s.wire).toBe('HTTP/1.1 200 OK\r\n\r\n');
    expect((streamed.body as AbstractBody).closed).toBe(true);
  });

  it('a HEAD answer states the declared length as it is: no body is sent to check it against', async () => {
    const sink = new MemorySink();
    await writeResponse(sink, new Response(200, 'abc', { contentLength: 5 }), new Request('HEAD', '/'));
    expect(sink.text).toBe('HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 5\r\n\r\n');
    await expect(writeResponse(new MemorySink(), new Response(200, 'abc', { contentLength: 5 }), new Request('GET', '/'))).rejects.toThrow(/does not match the 3-byte string body/);
  });

  it('204 and 1xx never carry a body or framing headers; 304 keeps its headers', async () => {
    const r204 = await roundTripResponse(
      new Response(204, 'ignored', {
        headers: [
          ['Content-Length', '7'],
          ['X-A', 'b'],
        ],
      }),
      null,
      '',
    );
    expect(r204.wire).toBe('HTTP/1.1 204 No Content\r\nX-A: b\r\n\r\n');
    const r304 = await roundTripResponse(
      new Response(304, null, {
        headers: [
          ['ETag', '"x"'],
          ['Content-Length', '10'],
        ],
      }),
      null,
      '',
    );
    expect(r304.wire).toBe('HTTP/1.1 304 Not Modified\r\nETag: "x"\r\nContent-Length: 10\r\n\r\n');
    const sink = new MemorySink();
    await writeResponse(sink, new Response(100));
    await writeResponse(sink, new Response(200, 'ok'));
    expect(sink.text).toBe('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 2\r\n\r\nok');
    const parsed = await readResponse(sink.bytes);
    expect(parsed.status).toBe(200);
    expect(await bodyText(parsed.body)).toBe('ok');
  });

  it('a 2xx answer to CONNECT has no body and drops framing headers; a non-2xx one keeps them', async () => {
    const connect = new Request('CONNECT', 'origin.example:443');
    for (const field of [
      ['Content-Length', '2'],
      ['Transfer-Encoding', 'chunked'],
    ] as [string, string][]) {
      const { wire } = await roundTripResponse(new Response(200, 'ok', { headers: [field, ['X-A', '1']] }), connect, '');
      expect(wire).toBe('HTTP/1.1 200 OK\r\nX-A: 1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n');
    }
    const refused = await roundTripResponse(new Response(407, 'no', { headers: [['Content-Length', '2']] }), connect, 'no');
    expect(refused.wire).toBe('HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 2\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nno');
  });

  it('unknown length to an HTTP/1.0 client is sent raw and closes', async () => {
    const req = await readRequest(b('GET / HTTP/1.0\r\n\r\n'));
    const sink = new MemorySink();
    await writeResponse(sink, new Response(200, partsBody(['ab', 'cd']), { request: req }));
    expect(sink.text).toBe('HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nabcd');
    const ka = await readRequest(b('GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n'));
    const sink2 = new MemorySink();
    await writeResponse(sink2, new Response(200, 'x'), ka);
    expect(sink2.text).toBe('HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 1\r\nConnection: keep-alive\r\n\r\nx');
  });

  it('custom reason phrase and caller framing headers', async () => {
    const res = new Response(201, 'abc', { reason: 'Made It', headers: [['content-length', '3']] });
    const { wire } = await roundTripResponse(res, null, 'abc');
    expect(wire).toBe('HTTP/1.1 201 Made It\r\ncontent-length: 3\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nabc');
    const ch = new Response(200, partsBody(['q']), { headers: [['Transfer-Encoding', 'chunked']] });
    const c = await roundTripResponse(ch, null, 'q');
    expect(c.wire).toBe('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nq\r\n0\r\n\r\n');
  });

  it('respects backpressure from the sink', async () => {
    const sink = new MemorySink(2);
    const chunks = Array.from({ length: 50 }, (_, i) => `chunk-${i}-${'p'.repeat(1000)}`);
    await writeResponse(sink, new Response(200, partsBody(chunks)));
    const parsed = await readResponse(sink.bytes);
    expect(await bodyText(parsed.body)).toBe(chunks.join(''));
    const big = Buffer.alloc(200_000, 0x71);
    const sink2 = new MemorySink(1);
    await writeResponse(sink2, new Response(200, big));
    expect(sink2.writes).toBe(2);
    expect((await readAll((await readResponse(sink2.bytes)).body as AbstractBody)).length).toBe(big.length);
  });

  it('rejects when the sink closes while waiting for drain', async () => {
    const sink = new MemorySink(1);
    const p = writeResponse(sink, new Response(200, partsBody(['a', 'b', 'c'])));
    setTimeout(() => {
      sink.destroyed = true;
      sink.emit('close');
    }, 0);
    await expect(p).rejects.toThrow(/closed/);
  });

  it('round-trips over a real socket pair', async () => {
    const net = await import('node:net');
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    const accepted = new Promise<import('node:net').Socket>((resolve) => server.once('connection', resolve));
    const client = net.connect(port, '127.0.0.1');
    await new Promise<void>((resolve) => client.once('connect', resolve));
    const conn = await accepted;
    try {
      await writeRequest(client, new Request('POST', '/echo', { host: 'localhost', body: partsBody(['ping ', 'pong']) }));
      await writeRequest(client, new Request('GET', '/second', { host: 'localhost' }));
      const req = await readRequest(conn);
      const body = await bodyText(req.body);
      expect(body).toBe('ping pong');
      await writeResponse(conn, new Response(200, `echo: ${body}`, { request: req }));
      const req2 = await readRequest(conn);
      expect(req2.target).toBe('/second');
      await writeResponse(conn, new Response(200, null, { request: req2, close: true }));
      const res = await readResponse(client, { request: req });
      expect(await bodyText(res.body)).toBe('echo: ping pong');
      const res2 = await readResponse(client);
      expect(res2.close).toBe(true);
    } finally {
      client.destroy();
      conn.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe('trailers that may not trail (RFC 9110 §6.5.1)', () => {
  it('serializeLastChunk refuses each of them, naming the field', () => {
    for (const name of ['Content-Length', 'transfer-encoding', 'HOST', 'Content-Type', 'Content-Encoding', 'Trailer', 'Authorization', 'Set-Cookie', 'Connection', 'TE']) {
      expect(
        () =>
          serializeLastChunk(
            new Headers([
              ['X-Ok', '1'],
              [name, 'v'],
            ]),
          ),
        name,
      ).toThrow(ArgumentError);
      expect(() => serializeLastChunk(new Headers([[name, 'v']])), name).toThrow(`"${name}" cannot be sent as a trailer`);
    }
    expect(serializeLastChunk(new Headers([['Server-Timing', 'db;dur=1']]))).toBe('0\r\nServer-Timing: db;dur=1\r\n\r\n');
  });

  it('writeResponse and writeRequest refuse them before writing any byte', async () => {
    const sink = new MemorySink();
    const res = new Response(200, partsBody(['a']), {
      trailers: [
        ['X-Ok', '1'],
        ['Content-Length', '1'],
      ],
    });
    await expect(writeResponse(sink, res)).rejects.toThrow(/"Content-Length" cannot be sent as a trailer/);
    const req = new Request('POST', '/', { host: 'h', body: partsBody(['a']), trailers: [['Host', 'evil.example']] });
    await expect(writeRequest(sink, req)).rejects.toThrow(/"Host" cannot be sent as a trailer/);
    expect(sink.bytes.length).toBe(0);
  });

  it('trailers a streamed body fills in while it is read are sent, and checked, at the end', async () => {
    /** A response whose one-byte body sets trailer `name` when it ends. */
    const filling = (name: string): Response => {
      let step = 0;
      const res: Response = new Response(
        200,
        new CallbackBody((dst) => {
          if (step++ > 0) {
            res.trailers.set(name, '1');
            return 0;
          }
          dst[0] = 0x61;
          return 1;
        }),
      );
      return res;
    };
    const sink = new MemorySink();
    await writeResponse(sink, filling('X-Sum'));
    expect(sink.text.endsWith('1\r\na\r\n0\r\nX-Sum: 1\r\n\r\n')).toBe(true);
    const sink2 = new MemorySink();
    await expect(writeResponse(sink2, filling('Content-Length'))).rejects.toThrow(/"Content-Length" cannot be sent as a trailer/);
    expect(sink2.text).not.toContain('Content-Length: 1');
  });
});

describe('serializer checks of repeated fields', () => {
  it('a field that passed does not vouch for another one: every name and value of every head is checked', () => {
    const ok = new Headers([['X-A', 'ab']]);
    expect(serializeResponseHead(200, '', ok, 2)).toContain('X-A: ab\r\n');
    // The same lengths as the field before, and the same field again after a bad one.
    for (const [name, value] of [
      ['X-A', 'a\n'],
      ['X-\r', 'ab'],
      ['', ''],
      ['X-A', '\r\n'],
    ] as const) {
      expect(() => serializeResponseHead(200, '', new Headers([[name, value]]), 2)).toThrow(ArgumentError);
      expect(serializeResponseHead(200, '', ok, 2)).toContain('X-A: ab\r\n');
    }
  });
});
