/**
 * Request handlers (`serve`) and `streamHandler(requestHandler)` on `listen`: the request as
 * the handler sees it (buffered body, target, canonical header names, version), errors
 * turned into 500s, one Response returned for many requests, streamed `AbstractBody`
 * responses, and the Date and Connection fields.
 */
import { describe, expect, it } from 'vitest';
import { BytesBody, CallbackBody, Request, Response, streamHandler, type RequestHandler } from '../../../kernel/index.js';
import { get, rawClient, startServer, startStreamServer, type ParsedResponse } from '../../helpers/server.js';

/** A snapshot of what a handler saw, taken inside it. */
interface Seen {
  method: string;
  target: string;
  body: unknown;
  bodyText: string;
  isBytes: boolean;
  names: string[];
  protoMinor: number;
  custom: string | undefined;
}

function snapshot(req: Request): Seen {
  const b = req.body;
  return {
    method: req.method,
    target: req.target,
    body: b,
    bodyText: b instanceof Uint8Array ? Buffer.from(b).toString('utf8') : String(b),
    isBytes: b instanceof Uint8Array,
    names: req.headers.keys(),
    protoMinor: req.protoMinor,
    custom: req.headers.get('x-CUSTOM-thing'),
  };
}

const IMF_FIXDATE = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/;

/** The header lines of the first response in `raw`, as [name, value] pairs in wire order. */
function rawHeaderLines(raw: Buffer): [string, string][] {
  const head = raw.toString('latin1', 0, raw.indexOf('\r\n\r\n'));
  return head
    .split('\r\n')
    .slice(1)
    .map((l) => {
      const i = l.indexOf(':');
      return [l.slice(0, i), l.slice(i + 1).trim()] as [string, string];
    });
}

function countHeader(raw: Buffer, name: string): number {
  return rawHeaderLines(raw).filter(([n]) => n.toLowerCase() === name.toLowerCase()).length;
}

// ---- the request as a handler sees it --------------------------------------------------------

describe('request handlers: the request', () => {
  it('sync and async handlers both answer', async () => {
    const sync = await startServer(() => new Response(200, 'sync'));
    const async_ = await startServer(async (req) => {
      await new Promise<void>((r) => setImmediate(r));
      return new Response(201, `async ${req.target}`);
    });
    const a = await rawClient(sync.port);
    await a.write(get('/'));
    const ra = await a.response();
    expect([ra.status, ra.text]).toEqual([200, 'sync']);
    const b = await rawClient(async_.port);
    await b.write(get('/p'));
    const rb = await b.response();
    expect([rb.status, rb.text]).toEqual([201, 'async /p']);
  });

  it('req.body is the buffered bytes of a Content-Length body, and req.target keeps the query', async () => {
    const seen: Seen[] = [];
    const { port } = await startServer((req) => {
      seen.push(snapshot(req));
      return new Response(200, 'ok');
    });
    const c = await rawClient(port);
    await c.write('POST /search?q=a%20b&x=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nhello');
    await c.write(' world');
    await c.response();
    expect(seen).toHaveLength(1);
    expect(seen[0]!.method).toBe('POST');
    expect(seen[0]!.target).toBe('/search?q=a%20b&x=1');
    expect(seen[0]!.isBytes).toBe(true);
    expect(seen[0]!.bodyText).toBe('hello world');
  });

  it('req.body is the buffered, decoded bytes of a chunked body', async () => {
    const seen: Seen[] = [];
    const { port } = await startServer((req) => {
      seen.push(snapshot(req));
      return new Response(200, String((req.body as Uint8Array).length));
    });
    const c = await rawClient(port);
    await c.write('POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nWiki\r\n');
    await c.write('5\r\npedia\r\n0\r\n\r\n');
    const res = await c.response();
    expect(res.text).toBe('9');
    expect(seen[0]!.isBytes).toBe(true);
    expect(seen[0]!.bodyText).toBe('Wikipedia');
  });

  it('a request without a body has an empty byte body', async () => {
    const seen: Seen[] = [];
    const { port } = await startServer((req) => {
      seen.push(snapshot(req));
      return new Response(204);
    });
    const c = await rawClient(port);
    await c.write(get('/'));
    expect((await c.response()).status).toBe(204);
    expect(seen[0]!.isBytes).toBe(true);
    expect((seen[0]!.body as Uint8Array).length).toBe(0);
  });

  it('header names arrive in canonical form and match in any case', async () => {
    const seen: Seen[] = [];
    const { port } = await startServer((req) => {
      seen.push(snapshot(req));
      return new Response(200);
    });
    const c = await rawClient(port);
    await c.write('GET / HTTP/1.1\r\nhost: x\r\nx-custom-thing: v1\r\ncontent-TYPE: text/plain\r\nX-ALL-CAPS: y\r\n\r\n');
    await c.response();
    expect(seen[0]!.names).toEqual(['Host', 'X-Custom-Thing', 'Content-Type', 'X-All-Caps']);
    expect(seen[0]!.custom).toBe('v1');
  });

  it('req.protoMinor is 1 for HTTP/1.1 and 0 for HTTP/1.0', async () => {
    const seen: Seen[] = [];
    const { port } = await startServer((req) => {
      seen.push(snapshot(req));
      return new Response(200, 'v');
    });
    const c = await rawClient(port);
    await c.write(get('/11'));
    await c.response();
    const d = await rawClient(port);
    await d.write('GET /10 HTTP/1.0\r\n\r\n');
    const res = await d.response();
    expect(res.text).toBe('v');
    await d.untilClosed();
    expect(seen.map((s) => [s.target, s.protoMinor])).toEqual([
      ['/11', 1],
      ['/10', 0],
    ]);
  });
});

// ---- errors --------------------------------------------------------------------------------

describe('request handlers: errors', () => {
  const handler: RequestHandler = (req) => {
    if (req.target === '/throw') throw new Error('boom');
    if (req.target === '/reject') return Promise.reject(new Error('async boom'));
    if (req.target === '/not-a-response') return { status: 200, body: 'nope' } as unknown as Response;
    if (req.target === '/null') return null as unknown as Response;
    return new Response(200, `fine ${req.target}`);
  };

  it('a handler that throws gets 500, the error is reported, and the next request on the connection works', async () => {
    const { port, errors } = await startServer(handler);
    const c = await rawClient(port);
    await c.write(get('/throw') + get('/after'));
    const [a, b] = await c.responses(2);
    expect(a!.status).toBe(500);
    expect(a!.close).toBe(false);
    expect(b!.status).toBe(200);
    expect(b!.text).toBe('fine /after');
    expect(errors).toHaveLength(1);
    expect((errors[0]!.error as Error).message).toBe('boom');
    expect((errors[0]!.request as Request).target).toBe('/throw');
  });

  it('an async rejection gets 500 and the connection stays usable', async () => {
    const { port, errors } = await startServer(handler);
    const c = await rawClient(port);
    await c.write(get('/reject'));
    expect((await c.response()).status).toBe(500);
    await c.write(get('/after'));
    expect((await c.response()).text).toBe('fine /after');
    expect(errors.map((e) => (e.error as Error).message)).toEqual(['async boom']);
  });

  it('returning something that is not a Response gets 500 and reports a TypeError', async () => {
    const { port, errors } = await startServer(handler);
    const c = await rawClient(port);
    await c.write(get('/not-a-response') + get('/null') + get('/after'));
    const rs = await c.responses(3);
    expect(rs.map((r) => r.status)).toEqual([500, 500, 200]);
    expect(errors).toHaveLength(2);
    for (const e of errors) expect(e.error).toBeInstanceOf(TypeError);
    expect(errors.map((e) => (e.request as Request).target)).toEqual(['/not-a-response', '/null']);
    // The report says what came back and what to return instead.
    expect(errors.map((e) => (e.error as Error).message)).toEqual([
      "request handler returned a plain object, not a Response: to send JSON, return new Response(200, JSON.stringify(value), { headers: { 'Content-Type': 'application/json' } })",
      'request handler returned null, not a Response: return new Response(status, body, { headers })',
    ]);
  });

  it('a handler that returns nothing, a string or a fetch Response is told what to return', async () => {
    const { port, errors } = await startServer(async (req) => {
      if (req.target === '/undefined') return undefined as unknown as Response;
      if (req.target === '/string') return 'hello' as unknown as Response;
      return new globalThis.Response('fetch') as unknown as Response;
    });
    const c = await rawClient(port);
    await c.write(get('/undefined') + get('/string') + get('/fetch'));
    expect((await c.responses(3)).map((r) => r.status)).toEqual([500, 500, 500]);
    expect(errors.map((e) => (e.error as Error).message)).toEqual([
      'request handler returned undefined, not a Response: return new Response(status, body) from every path of the handler (a missing return gives undefined)',
      'request handler returned a string ("hello"), not a Response: return new Response(200, body) instead',
      "request handler returned the fetch API's Response, not a Response: return this library's Response (new Response(status, body, { headers })), or serve a fetch-style handler with serveFetch(handler) or listen(fetchHandler(handler))",
    ]);
  });
});

// ---- one Response for many requests --------------------------------------------------------

describe('request handlers: one Response returned for many requests', () => {
  async function hammer(shared: Response): Promise<ParsedResponse[]> {
    const { port, errors } = await startServer(() => shared);
    const c = await rawClient(port);
    // Pipelined and sequential, a HEAD in the middle, on two connections.
    await c.write(get('/1') + get('/2') + 'HEAD /3 HTTP/1.1\r\nHost: x\r\n\r\n' + get('/4'));
    const rs = await c.responses(4, ['GET', 'GET', 'HEAD', 'GET']);
    const d = await rawClient(port);
    await d.write('POST /5 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc');
    rs.push(await d.response());
    await d.write(get('/6'));
    rs.push(await d.response());
    expect(errors).toEqual([]);
    return rs;
  }

  it('a string body: identical bodies each time, the Response untouched', async () => {
    const shared = new Response(200, 'héllo shared', {
      headers: [
        ['X-Shared', '1'],
        ['Content-Type', 'text/plain; charset=utf-8'],
      ],
    });
    const before = { headers: shared.headers.toArray(), body: shared.body, status: shared.status, contentLength: shared.contentLength, close: shared.close };
    const rs = await hammer(shared);
    for (const [i, r] of rs.entries()) {
      expect(r.status).toBe(200);
      expect(r.headers.get('X-Shared')).toBe('1');
      expect(r.headers.get('Content-Length')).toBe(String(Buffer.byteLength('héllo shared')));
      expect(r.text).toBe(i === 2 ? '' : 'héllo shared');
    }
    expect({ headers: shared.headers.toArray(), body: shared.body, status: shared.status, contentLength: shared.contentLength, close: shared.close }).toEqual(before);
  });

  it('a Uint8Array body: identical bytes each time, the bytes and the Response untouched', async () => {
    const bytes = Buffer.from(Array.from({ length: 300 }, (_, i) => i & 0xff));
    const copy = Buffer.from(bytes);
    const shared = new Response(200, bytes, { headers: { 'X-Shared': 'bytes' } });
    const before = shared.headers.toArray();
    const rs = await hammer(shared);
    for (const [i, r] of rs.entries()) {
      expect(r.headers.get('X-Shared')).toBe('bytes');
      if (i !== 2) expect(r.body.equals(copy)).toBe(true);
    }
    expect(shared.body).toBe(bytes);
    expect(bytes.equals(copy)).toBe(true);
    expect(shared.headers.toArray()).toEqual(before);
  });
});

// ---- streamed (AbstractBody) responses ------------------------------------------------------

describe('request handlers: AbstractBody responses', () => {
  function callbackBody(parts: string[], onClose: () => void): CallbackBody {
    const queue = parts.map((p) => Buffer.from(p));
    return new CallbackBody(async (dst) => {
      await new Promise<void>((r) => setImmediate(r));
      const next = queue.shift();
      if (next === undefined) return 0;
      dst.set(next);
      return next.length;
    }, onClose);
  }

  it('a BytesBody (known length) is sent with Content-Length', async () => {
    const big = Buffer.alloc(200_000, 'k');
    const { port, errors } = await startServer((req) => new Response(200, new BytesBody(req.target === '/big' ? big : 'streamed bytes')));
    const c = await rawClient(port);
    await c.write(get('/small') + get('/big'));
    const [a, b] = await c.responses(2);
    expect(a!.text).toBe('streamed bytes');
    expect(a!.headers.get('Content-Length')).toBe('14');
    expect(a!.headers.has('Transfer-Encoding')).toBe(false);
    expect(b!.body.equals(big)).toBe(true);
    expect(b!.headers.get('Content-Length')).toBe('200000');
    expect(errors).toEqual([]);
  });

  it('a CallbackBody (unknown length) is sent chunked and closed once', async () => {
    let closes = 0;
    const { port, errors } = await startServer(
      () =>
        new Response(
          200,
          callbackBody(['one ', 'two ', 'three'], () => closes++),
        ),
    );
    const c = await rawClient(port);
    await c.write(get('/1') + get('/2'));
    const [a, b] = await c.responses(2);
    for (const r of [a!, b!]) {
      expect(r.text).toBe('one two three');
      expect(r.headers.get('Transfer-Encoding')).toBe('chunked');
      expect(r.headers.has('Content-Length')).toBe(false);
    }
    expect(closes).toBe(2);
    expect(errors).toEqual([]);
  });

  it('HEAD to an AbstractBody response sends no body; the next response on the connection parses', async () => {
    let closes = 0;
    const { port } = await startServer((req) =>
      req.target === '/bytes'
        ? new Response(200, new BytesBody('0123456789'))
        : new Response(
            200,
            callbackBody(['a', 'b'], () => closes++),
          ),
    );
    const c = await rawClient(port);
    await c.write('HEAD /bytes HTTP/1.1\r\nHost: x\r\n\r\nHEAD /cb HTTP/1.1\r\nHost: x\r\n\r\n' + get('/bytes'));
    const [h1, h2, g] = await c.responses(3, ['HEAD', 'HEAD', 'GET']);
    expect(h1!.status).toBe(200);
    expect(h1!.headers.get('Content-Length')).toBe('10');
    expect(h1!.body.length).toBe(0);
    expect(h2!.status).toBe(200);
    expect(h2!.body.length).toBe(0);
    expect(g!.text).toBe('0123456789');
    // Nothing but the three heads and one 10-byte body on the wire.
    const raw = c.received.toString('latin1');
    expect(raw.split('HTTP/1.1 200').length - 1).toBe(3);
    expect(raw.endsWith('\r\n\r\n0123456789')).toBe(true);
    expect(closes).toBe(1);
  });
});

// ---- streamHandler -------------------------------------------------------------------------

describe('streamHandler(requestHandler) on listen', () => {
  const app: RequestHandler = async (req) => {
    if (req.target === '/echo') {
      return new Response(201, req.body as Uint8Array, { headers: { 'X-Echo': String((req.body as Uint8Array).length), 'Content-Type': 'application/octet-stream' } });
    }
    if (req.target === '/stream') {
      let n = 0;
      return new Response(
        200,
        new CallbackBody((dst) => {
          if (n >= 3) return 0;
          const s = Buffer.from(`part${n++};`);
          dst.set(s);
          return s.length;
        }),
      );
    }
    if (req.target === '/bytes') return new Response(200, new BytesBody('fixed-size'));
    if (req.target === '/throw') throw new Error('app failed');
    return new Response(404, 'not here', { headers: { 'X-Path': req.target } });
  };

  it('buffers the body and writes status, headers and body like serve', async () => {
    const { port, errors } = await startStreamServer(streamHandler(app));
    const c = await rawClient(port);
    await c.write('POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n' + get('/missing'));
    const [a, b] = await c.responses(2);
    expect(a!.status).toBe(201);
    expect(a!.text).toBe('abcde');
    expect(a!.headers.get('X-Echo')).toBe('5');
    expect(a!.headers.get('Content-Length')).toBe('5');
    expect(a!.headers.get('Content-Type')).toBe('application/octet-stream');
    expect(b!.status).toBe(404);
    expect(b!.text).toBe('not here');
    expect(b!.headers.get('X-Path')).toBe('/missing');
    expect(errors).toEqual([]);
  });

  it('streams an AbstractBody response: unknown length chunked, known length with Content-Length', async () => {
    const { port, errors } = await startStreamServer(streamHandler(app));
    const c = await rawClient(port);
    await c.write(get('/stream') + get('/bytes'));
    const [a, b] = await c.responses(2);
    expect(a!.text).toBe('part0;part1;part2;');
    expect(a!.headers.get('Transfer-Encoding')).toBe('chunked');
    expect(b!.text).toBe('fixed-size');
    expect(b!.headers.get('Content-Length')).toBe('10');
    expect(errors).toEqual([]);
  });

  it('a throwing request handler gets 500, reported', async () => {
    const { port, errors } = await startStreamServer(streamHandler(app));
    const c = await rawClient(port);
    await c.write(get('/throw'));
    expect((await c.response()).status).toBe(500);
    expect(errors.map((e) => (e.error as Error).message)).toEqual(['app failed']);
  });

  it('a sync request handler works too', async () => {
    const { port } = await startStreamServer(streamHandler((req) => new Response(200, `sync ${req.method}`)));
    const c = await rawClient(port);
    await c.write(get('/'));
    expect((await c.response()).text).toBe('sync GET');
  });
});

// ---- Date and Connection ----------------------------------------------------------------------

describe('Date and Connection fields', () => {
  const USER_DATE = 'Mon, 01 Jan 2001 00:00:00 GMT';
  const app: RequestHandler = (req) => {
    if (req.target === '/date') return new Response(200, 'd', { headers: { Date: USER_DATE } });
    if (req.target === '/keep') return new Response(200, 'k', { headers: { Connection: 'keep-alive' } });
    if (req.target === '/close') return new Response(200, 'c', { headers: { Connection: 'close' } });
    if (req.target === '/res-close') return new Response(200, 'rc', { close: true });
    // A token that merely contains "close" is not the close option (RFC 9110 §7.6.1).
    if (req.target === '/x-closed') return new Response(200, 'x', { headers: { Connection: 'x-closed' } });
    if (req.target === '/x-closed-streamed') return new Response(200, new BytesBody(Buffer.from('xs')), { headers: { Connection: 'x-closed, not-close' } });
    if (req.target === '/token-close') return new Response(200, 't', { headers: { Connection: 'Keep-Alive , CLOSE' } });
    return new Response(200, 'plain');
  };

  for (const [label, start] of [
    ['serve', () => startServer(app)],
    ['listen + streamHandler', () => startStreamServer(streamHandler(app))],
  ] as const) {
    describe(label, () => {
      it('adds one Date in IMF-fixdate form', async () => {
        const { port } = await start();
        const c = await rawClient(port);
        await c.write(get('/'));
        const res = await c.response();
        expect(countHeader(c.received, 'Date')).toBe(1);
        expect(res.headers.get('Date')).toMatch(IMF_FIXDATE);
      });

      it('keeps a Date the handler set, and sends only that one', async () => {
        const { port } = await start();
        const c = await rawClient(port);
        await c.write(get('/date'));
        const res = await c.response();
        expect(res.headers.getAll('Date')).toEqual([USER_DATE]);
        expect(countHeader(c.received, 'Date')).toBe(1);
      });

      it('keeps a Connection field the handler set, and sends only that one', async () => {
        const { port } = await start();
        const c = await rawClient(port);
        await c.write(get('/keep'));
        const res = await c.response();
        expect(res.headers.getAll('Connection')).toEqual(['keep-alive']);
        expect(countHeader(c.received, 'Connection')).toBe(1);
        await c.write(get('/'));
        expect((await c.response()).text).toBe('plain');
      });

      it('Connection: close from the handler closes the connection after the response', async () => {
        const { port } = await start();
        const c = await rawClient(port);
        await c.write(get('/close') + get('/never'));
        const res = await c.response();
        expect(res.text).toBe('c');
        expect(res.headers.getAll('Connection')).toEqual(['close']);
        const all = await c.untilClosed();
        expect(all.toString('latin1').split('HTTP/1.1 ').length - 1).toBe(1);
      });

      it('a Connection token that only contains "close" keeps the connection; a close token in a list closes it', async () => {
        const { port } = await start();
        const c = await rawClient(port);
        await c.write(get('/x-closed'));
        const res = await c.response();
        expect(res.text).toBe('x');
        expect(res.headers.getAll('Connection')).toEqual(['x-closed']);
        await c.write(get('/x-closed-streamed'));
        expect((await c.response()).text).toBe('xs');
        await c.write(get('/token-close') + get('/never'));
        expect((await c.response()).text).toBe('t');
        const all = await c.untilClosed();
        expect(all.toString('latin1').split('HTTP/1.1 ').length - 1).toBe(3);
      });

      it('Response close: true closes the connection and says so', async () => {
        const { port } = await start();
        const c = await rawClient(port);
        await c.write(get('/res-close') + get('/never'));
        const res = await c.response();
        expect(res.text).toBe('rc');
        expect(res.headers.get('Connection')).toBe('close');
        const all = await c.untilClosed();
        expect(all.toString('latin1').split('HTTP/1.1 ').length - 1).toBe(1);
      });
    });
  }
});
