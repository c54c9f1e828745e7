/**
 * Stream handlers (`listen`): reading the request body off the stream, building the response
 * head, the fixed-length rule (held until 4 KiB, then streamed), chunked responses and
 * trailers, `closeRead`, implicit ends, `peerAddr`, `Expect: 100-continue` and HTTP/1.0.
 *
 * Everything runs over real loopback sockets; responses are parsed with the kernel's own
 * `readResponse`, and the raw bytes are inspected where the framing itself is the point.
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { AbstractBody, ArgumentError, ByteReader, createKernel, definePlugin, ProtocolError, Response, readAll, readResponse, trailers, type Stream } from '../../../kernel/index.js';
import { get, onCleanup, rawClient, startStreamServer, track, waitFor, within } from '../../helpers/server.js';

// ---- local helpers ---------------------------------------------------------------------------

interface Deferred<T = void> {
  promise: Promise<T>;
  resolve(v: T): void;
}

function deferred<T = void>(): Deferred<T> {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** A plain socket to 127.0.0.1:`port`, read through `readResponse` (destroyed after the test). */
async function connect(port: number): Promise<net.Socket> {
  const s = net.connect({ host: '127.0.0.1', port });
  s.setNoDelay(true);
  onCleanup(() => s.destroy());
  await once(s, 'connect');
  return s;
}

/** Reads the rest of a response body to a Buffer. */
async function bodyOf(res: Response): Promise<Buffer> {
  const b = res.body;
  if (b instanceof AbstractBody) return Buffer.from(await readAll(b));
  if (b === null) return Buffer.alloc(0);
  return Buffer.from(b as Uint8Array);
}

/** Resolves true when the server closed the socket (EOF or reset) and nothing else arrived. */
async function serverClosed(sock: net.Socket): Promise<boolean> {
  try {
    const c = await within(ByteReader.from(sock).read(), 5000, 'EOF');
    return c === null;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ECONNRESET') return true;
    throw err;
  }
}

function text(s: string): Buffer {
  return Buffer.from(s, 'latin1');
}

const POST = (path: string, body: string, extra = ''): string => `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`;

/** Where the head ends in `bytes`, or -1. */
function headEnd(bytes: Buffer): number {
  const i = bytes.indexOf('\r\n\r\n');
  return i < 0 ? -1 : i + 4;
}

// ---- reading the request -----------------------------------------------------------------------

describe('reading the request body off the stream', () => {
  it('startRead returns the head only; the body stays on the stream; stream.message is the request', async () => {
    const seen: { method?: string; target?: string; bodyAtStart?: unknown; sameMessage?: boolean; sameAsRequest?: boolean; host?: string } = {};
    const { port, errors } = await startStreamServer(async (s) => {
      const req = await s.startRead();
      seen.method = req.method;
      seen.target = req.target;
      seen.bodyAtStart = req.body;
      seen.sameMessage = s.message === req;
      seen.sameAsRequest = s.request === req;
      seen.host = req.headers.get('host');
      const body = await s.readAll();
      await s.write(body);
    });
    const c = await rawClient(port);
    await c.write(POST('/up?x=1', 'hello world'));
    const res = await c.response();
    expect(res.status).toBe(200);
    expect(res.text).toBe('hello world');
    expect(seen).toEqual({ method: 'POST', target: '/up?x=1', bodyAtStart: null, sameMessage: true, sameAsRequest: true, host: 'x' });
    expect(errors).toEqual([]);
  });

  it('read() yields the chunks of a chunked upload, then null (and null again)', async () => {
    let ends: (Uint8Array | null)[] = [];
    const gotFirst = deferred();
    const { port, errors } = await startStreamServer(async (s) => {
      await s.startRead();
      const parts: Buffer[] = [];
      for (;;) {
        const c = await s.read();
        if (c === null) break;
        if (c.length > 0) {
          parts.push(Buffer.from(c));
          gotFirst.resolve();
        }
      }
      ends = [await s.read(), await s.read()];
      await s.write(Buffer.concat(parts));
    });
    const c = await rawClient(port);
    await c.write('POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n');
    await within(gotFirst.promise, 3000, 'the handler to read the first chunk');
    await c.write('1\r\n \r\n');
    await c.write('5\r\nworld\r\n0\r\n\r\n');
    const res = await c.response();
    expect(res.text).toBe('hello world');
    expect(ends).toEqual([null, null]);
    expect(errors).toEqual([]);
  });

  it('readBytes(dst) with a small dst fills at most dst.length and returns 0 at the end', async () => {
    const counts: number[] = [];
    const { port } = await startStreamServer(async (s) => {
      await s.startRead();
      const dst = new Uint8Array(3);
      const parts: Buffer[] = [];
      for (;;) {
        const n = await s.readBytes(dst);
        counts.push(n);
        if (n === 0) break;
        parts.push(Buffer.from(dst.subarray(0, n)));
      }
      counts.push(await s.readBytes(dst));
      await s.write(Buffer.concat(parts));
    });
    const c = await rawClient(port);
    await c.write(POST('/', 'abcdefghij'));
    const res = await c.response();
    expect(res.text).toBe('abcdefghij');
    expect(counts.slice(-2)).toEqual([0, 0]);
    expect(counts.every((n) => n <= 3)).toBe(true);
    expect(counts.reduce((a, n) => a + n, 0)).toBe(10);
  });

  it('readAll after a partial readBytes returns the rest, leftover first', async () => {
    const { port } = await startStreamServer(async (s) => {
      await s.startRead();
      const dst = new Uint8Array(4);
      const n = await s.readBytes(dst);
      const rest = await s.readAll();
      await s.write(`${Buffer.from(dst.subarray(0, n)).toString()}|${Buffer.from(rest).toString()}`);
    });
    const c = await rawClient(port);
    await c.write(POST('/', '0123456789'));
    expect((await c.response()).text).toBe('0123|456789');
  });

  it('for await iterates the body', async () => {
    const { port } = await startStreamServer(async (s) => {
      await s.startRead();
      const parts: Buffer[] = [];
      for await (const chunk of s) parts.push(Buffer.from(chunk));
      await s.write(Buffer.concat(parts));
    });
    const c = await rawClient(port);
    await c.write('POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n');
    expect((await c.response()).text).toBe('abcdef');
  });

  it('a body far larger than 64 KiB is read slowly: the client write stalls until the handler reads', async () => {
    const SIZE = 16 * 1024 * 1024;
    const body = Buffer.allocUnsafe(SIZE);
    for (let i = 0; i < SIZE; i += 4) body.writeUInt32LE((i * 2654435761) >>> 0, i);
    const expectedHash = createHash('sha256').update(body).digest('hex');

    // Our own listener: its 'connection' listener runs before the server's, handing us the server side.
    const listener = net.createServer();
    let serverSide: net.Socket | null = null;
    listener.on('connection', (s) => (serverSide = s));
    const firstRead = deferred();
    const go = deferred();
    const { port, errors } = await startStreamServer(
      async (s) => {
        await s.startRead();
        const first = await s.read();
        const hash = createHash('sha256');
        let total = 0;
        if (first !== null) {
          hash.update(first);
          total += first.length;
        }
        firstRead.resolve();
        await go.promise;
        const dst = new Uint8Array(8192);
        for (;;) {
          const n = await s.readBytes(dst);
          if (n === 0) break;
          hash.update(dst.subarray(0, n));
          total += n;
        }
        await s.write(`${total} ${hash.digest('hex')}`);
      },
      { listener },
    );
    // The server closes the listener it was given when it is force-closed after the test.
    const sock = await connect(port);
    sock.write(`POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: ${SIZE}\r\n\r\n`);
    const accepted = sock.write(body);
    expect(accepted).toBe(false);
    await within(firstRead.promise, 5000, 'the first body chunk');

    // Wait until nothing moves any more: the server's byte count stays put over several turns.
    let last = -1;
    let still = 0;
    const start = performance.now();
    while (still < 5) {
      if (performance.now() - start > 5000) throw new Error('the upload never stalled: the server keeps reading without the handler');
      await new Promise<void>((r) => track(setTimeout(r, 20)));
      const now = (serverSide as net.Socket | null)?.bytesRead ?? 0;
      still = now === last ? still + 1 : 0;
      last = now;
    }
    const readByServer = (serverSide as net.Socket | null)!.bytesRead;
    // Bounded: the server holds at most a small multiple of its 64 KiB high-water mark.
    expect(readByServer).toBeLessThan(1024 * 1024);
    // The client still holds unsent bytes: its write is stalled, not drained.
    expect(sock.writableLength).toBeGreaterThan(0);

    const drained = once(sock, 'drain');
    go.resolve();
    const res = await within(readResponse(sock), 10000, 'the response');
    expect(res.status).toBe(200);
    expect((await bodyOf(res)).toString()).toBe(`${SIZE} ${expectedHash}`);
    await within(drained, 5000, 'drain');
    expect(sock.writableLength).toBe(0);
    expect(errors).toEqual([]);
  });
});

// ---- the response head ---------------------------------------------------------------------------

describe('the response head', () => {
  it('setStatus/setHeader work before the first write and throw ArgumentError after it', async () => {
    const thrown: unknown[] = [];
    const { port, errors } = await startStreamServer(async (s) => {
      await s.startRead();
      s.setStatus(201, 'Made');
      s.setHeader('X-One', '1');
      s.setHeader(['X-Two', '2']);
      s.appendHeader('X-One', 'again');
      await s.write('body');
      for (const fn of [() => s.setStatus(202), () => s.setHeader('X-Late', 'no'), () => s.appendHeader('X-Late', 'no')]) {
        try {
          fn();
        } catch (err) {
          thrown.push(err);
        }
      }
    });
    const c = await rawClient(port);
    await c.write(get('/'));
    const res = await c.response();
    expect(res.status).toBe(201);
    expect(res.reason).toBe('Made');
    expect(res.headers.getAll('X-One')).toEqual(['1', 'again']);
    expect(res.headers.get('X-Two')).toBe('2');
    expect(res.headers.has('X-Late')).toBe(false);
    expect(res.text).toBe('body');
    expect(thrown).toHaveLength(3);
    for (const e of thrown) expect(e).toBeInstanceOf(ArgumentError);
    expect(errors).toEqual([]);
  });

  it('startWrite returns a Response; setStatus/setHeader after it throw ArgumentError, even for a held fixed-length response', async () => {
    let started: unknown = null;
    const thrown: unknown[] = [];
    const { port } = await startStreamServer(async (s) => {
      await s.startRead();
      s.setStatus(202);
      s.setHeader('Content-Length', '2');
      s.setHeader('X-A', 'a');
      started = s.startWrite();
      expect(s.headersSent).toBe(true);
      for (const fn of [() => s.setStatus(203), () => s.setHeader('X-B', 'b')]) {
        try {
          fn();
        } catch (err) {
          thrown.push(err);
        }
      }
      await s.write('ok');
      await s.closeWrite();
    });
    const c = await rawClient(port);
    await c.write(get('/'));
    const res = await c.response();
    expect(res.status).toBe(202);
    expect(res.text).toBe('ok');
    expect(res.headers.has('X-B')).toBe(false);
    expect(started).toBeInstanceOf(Response);
    expect((started as Response).status).toBe(202);
    expect((started as Response).headers.get('X-A')).toBe('a');
    expect(thrown).toHaveLength(2);
    for (const e of thrown) expect(e).toBeInstanceOf(ArgumentError);
  });
});

// ---- the fixed-length rule -----------------------------------------------------------------------

describe('the fixed-length rule', () => {
  /** Handler that reads the (empty) body, then writes `n` of `declared` bytes and returns or throws. */
  function shortWriter(declared: number, n: number, how: 'return' | 'throw') {
    return async (s: Stream): Promise<void> => {
      const req = await s.startRead();
      await s.readAll();
      if (req.target === '/next') {
        await s.write('next ok');
        return;
      }
      s.setHeader('Content-Length', String(declared));
      await s.write('x'.repeat(n));
      if (how === 'throw') throw new Error('handler failed after a short write');
    };
  }

  it('Content-Length: 10, 5 bytes written, handler returns → a clean 500; the connection stays usable', async () => {
    const { port, errors } = await startStreamServer(shortWriter(10, 5, 'return'));
    const c = await rawClient(port);
    await c.write(get('/short') + get('/next'));
    const [a, b] = await c.responses(2);
    expect(a!.status).toBe(500);
    expect(a!.headers.get('Content-Length')).toBe(String(a!.body.length));
    expect(a!.text).not.toContain('xxxxx');
    expect(b!.status).toBe(200);
    expect(b!.text).toBe('next ok');
    expect(c.received.toString('latin1')).not.toContain('Content-Length: 10\r\n');
    expect(errors).toHaveLength(1);
    expect(errors[0]!.error).toBeInstanceOf(ProtocolError);
    expect(String((errors[0]!.error as Error).message)).toMatch(/5 bytes.*10/);
  });

  it('Content-Length: 10, 5 bytes written, handler throws → a clean 500; the connection stays usable', async () => {
    const { port, errors } = await startStreamServer(shortWriter(10, 5, 'throw'));
    const c = await rawClient(port);
    await c.write(get('/short'));
    const a = await c.response();
    expect(a.status).toBe(500);
    await c.write(get('/next'));
    const b = await c.response();
    expect(b.status).toBe(200);
    expect(b.text).toBe('next ok');
    expect(errors.map((e) => (e.error as Error).message)).toEqual(['handler failed after a short write']);
  });

  it('a held body that would pass its Content-Length fails the write; the handler not catching it gets a 500', async () => {
    let writeError: unknown = null;
    const { port, errors } = await startStreamServer(async (s) => {
      await s.startRead();
      s.setHeader('Content-Length', '3');
      try {
        await s.write('four');
      } catch (err) {
        writeError = err;
        throw err;
      }
    });
    const c = await rawClient(port);
    await c.write(get('/'));
    const res = await c.response();
    expect(res.status).toBe(500);
    expect(res.text).not.toContain('four');
    expect(writeError).toBeInstanceOf(ProtocolError);
    expect(errors).toHaveLength(1);
  });

  it('exact Content-Length in several writes is sent as one clean response; the connection is reused', async () => {
    const { port, errors } = await startStreamServer(async (s) => {
      await s.startRead();
      await s.readAll();
      s.setHeader('Content-Length', '11');
      await s.write('hello');
      await s.write(' ');
      await s.write(text('world'));
      await s.closeWrite();
    });
    const c = await rawClient(port);
    await c.write(get('/1') + get('/2'));
    const [a, b] = await c.responses(2);
    expect(a!.text).toBe('hello world');
    expect(a!.headers.get('Content-Length')).toBe('11');
    expect(a!.headers.has('Transfer-Encoding')).toBe(false);
    expect(b!.text).toBe('hello world');
    expect(errors).toEqual([]);
  });

  it('past 4 KiB a fixed-length body streams as written: the client sees bytes before the handler finishes', async () => {
    const seen = deferred();
    const first = Buffer.alloc(5000, 'a');
    const second = Buffer.alloc(5000, 'b');
    let finished = false;
    const { port, errors } = await startStreamServer(async (s) => {
      await s.startRead();
      await s.readAll();
      s.setHeader('Content-Length', '10000');
      await s.write(first);
      await seen.promise;
      await s.write(second);
      finished = true;
    });
    const c = await rawClient(port);
    await c.write(get('/big'));
    await waitFor(
      () => {
        const h = headEnd(c.received);
        return h > 0 && c.received.length > h;
      },
      3000,
      'head and first body bytes before the handler finishes',
    );
    expect(finished).toBe(false);
    expect(c.received.toString('latin1')).toContain('Content-Length: 10000\r\n');
    seen.resolve();
    const res = await c.response();
    expect(res.status).toBe(200);
    expect(res.body.equals(Buffer.concat([first, second]))).toBe(true);
    expect(errors).toEqual([]);
  });

  it('a failure after 5 KiB of a streaming fixed-length body closes the connection before Content-Length bytes', async () => {
    const { port, errors } = await startStreamServer(async (s) => {
      await s.startRead();
      await s.readAll();
      s.setHeader('Content-Length', '10240');
      await s.write(Buffer.alloc(5120, 'z'));
      throw new Error('late failure');
    });
    const c = await rawClient(port);
    await c.write(get('/fail'));
    const all = await c.untilClosed();
    const h = headEnd(all);
    expect(h).toBeGreaterThan(0);
    expect(all.subarray(0, 12).toString('latin1')).toBe('HTTP/1.1 200');
    expect(all.toString('latin1', 0, h)).toContain('Content-Length: 10240\r\n');
    // Exactly what was written, then EOF: no 500 appended, never the declared length.
    expect(all.length - h).toBe(5120);
    await expect(c.response()).rejects.toThrow();
    expect(errors.map((e) => (e.error as Error).message)).toEqual(['late failure']);
  });
});

// ---- chunked responses and trailers --------------------------------------------------------------

describe('chunked responses', () => {
  it('startWrite sends the head at once; trailers added with addTrailer arrive as trailers', async () => {
    const headSeen = deferred();
    let returnedBeforeHead = true;
    const { port, errors } = await startStreamServer(async (s) => {
      await s.startRead();
      await s.readAll();
      s.setHeader('Trailer', 'X-Checksum, X-Count');
      const r = s.startWrite();
      expect(r).toBeInstanceOf(Response);
      await headSeen.promise;
      returnedBeforeHead = false;
      await s.write('abc');
      await s.write('def');
      s.addTrailer('X-Checksum', 'c0ffee');
      s.addTrailer(['X-Count', '2']);
      await s.closeWrite();
    });
    const sock = await connect(port);
    sock.write(get('/t'));
    const res = await within(readResponse(sock), 3000, 'the head before any body was written');
    expect(returnedBeforeHead).toBe(true);
    expect(res.headers.get('Transfer-Encoding')).toBe('chunked');
    expect(res.headers.has('Content-Length')).toBe(false);
    headSeen.resolve();
    expect((await bodyOf(res)).toString()).toBe('abcdef');
    const t = trailers(res.body);
    expect(t.get('X-Checksum')).toBe('c0ffee');
    expect(t.get('X-Count')).toBe('2');
    expect(errors).toEqual([]);
  });

  it('without startWrite, the first write sends the head of a chunked response', async () => {
    const go = deferred();
    const { port } = await startStreamServer(async (s) => {
      await s.startRead();
      await s.readAll();
      await s.write('first');
      await go.promise;
      await s.write('+second');
    });
    const sock = await connect(port);
    sock.write(get('/'));
    const res = await within(readResponse(sock), 3000, 'the head after the first write');
    expect(res.headers.get('Transfer-Encoding')).toBe('chunked');
    const buf = new Uint8Array(64);
    const n = await within((res.body as AbstractBody).read(buf), 3000, 'the first chunk');
    expect(Buffer.from(buf.subarray(0, n)).toString()).toBe('first');
    go.resolve();
    expect((await bodyOf(res)).toString()).toBe('+second');
  });

  it('a response with Content-Length drops its trailers', async () => {
    const { port, errors } = await startStreamServer(async (s) => {
      await s.startRead();
      await s.readAll();
      s.setHeader('Content-Length', '5');
      await s.write('hello');
      s.addTrailer('X-Dropped', 'yes');
      await s.closeWrite();
    });
    const c = await rawClient(port);
    await c.write(get('/a') + get('/b'));
    const [a, b] = await c.responses(2);
    expect(a!.text).toBe('hello');
    expect(b!.text).toBe('hello');
    expect(c.received.toString('latin1')).not.toContain('X-Dropped');
    expect(c.received.toString('latin1')).not.toContain('Transfer-Encoding');
    expect(errors).toEqual([]);
  });
});

// ---- the whole body at closeWrite ----------------------------------------------------------------

describe('closeWrite(data): a short response whole', () => {
  it('before any write, sends head and body in one piece with Content-Length, no chunked framing; the connection is reused', async () => {
    const { port, errors } = await startStreamServer(async (s) => {
      s.setHeader('Content-Type', 'text/plain');
      await s.closeWrite(s.request.target === '/bytes' ? new Uint8Array([104, 105]) : 'héllo');
    });
    const sock = await connect(port);
    sock.write(get('/str'));
    // One write on the server: the head and the body arrive together.
    const first = ((await once(sock, 'data')) as [Buffer])[0];
    const at = headEnd(first);
    expect(at).toBeGreaterThan(0);
    const head = first.subarray(0, at).toString('latin1');
    expect(head).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(head).toContain('Content-Length: 6\r\n');
    expect(head).not.toMatch(/transfer-encoding/i);
    expect(first.subarray(at).toString('utf8')).toBe('héllo');
    sock.write(get('/bytes'));
    const res = await readResponse(sock);
    expect(res.headers.get('Content-Length')).toBe('2');
    expect((await bodyOf(res)).toString()).toBe('hi');
    expect(errors).toEqual([]);
  });

  it('HEAD gets the length a GET would, without the body; 204 and 304 get no body either', async () => {
    const { port, errors } = await startStreamServer(async (s) => {
      if (s.request.target === '/204') s.setStatus(204);
      if (s.request.target === '/304') s.setStatus(304);
      await s.closeWrite('twelve bytes');
    });
    const c = await rawClient(port);
    await c.write(`HEAD / HTTP/1.1\r\nHost: x\r\n\r\n${get('/204')}${get('/304')}${get('/after')}`);
    const [head, nc, nm, after] = await c.responses(4, ['HEAD', 'GET', 'GET', 'GET']);
    expect([head!.status, head!.headers.get('Content-Length'), head!.body.length]).toEqual([200, '12', 0]);
    expect([nc!.status, nc!.headers.has('Content-Length'), nc!.body.length]).toEqual([204, false, 0]);
    expect([nm!.status, nm!.headers.get('Content-Length'), nm!.body.length]).toEqual([304, '12', 0]);
    expect(after!.text).toBe('twelve bytes');
    expect(c.received.toString('latin1').split('twelve bytes').length).toBe(2);
    expect(errors).toEqual([]);
  });

  it('keeps a Content-Length the handler set; one the body does not match gets the clean 500 a write would', async () => {
    const { port, errors } = await startStreamServer(async (s) => {
      s.setHeader('Content-Length', s.request.target === '/wrong' ? '10' : '5');
      await s.closeWrite('hello');
    });
    const c = await rawClient(port);
    await c.write(get('/right') + get('/wrong') + get('/right'));
    const [a, b, d] = await c.responses(3);
    expect([a!.status, a!.text, a!.headers.get('Content-Length')]).toEqual([200, 'hello', '5']);
    expect(b!.status).toBe(500);
    expect(b!.text).not.toContain('hello');
    expect(d!.text).toBe('hello');
    expect(errors).toHaveLength(1);
    expect(errors[0]!.error).toBeInstanceOf(ProtocolError);
    expect(String((errors[0]!.error as Error).message)).toMatch(/5 bytes.*10/);
  });

  it('with trailers added, the body goes chunked and the trailers follow it', async () => {
    const { port, errors } = await startStreamServer(async (s) => {
      s.addTrailer('X-Checksum', 'c0ffee');
      await s.closeWrite('abc');
    });
    const sock = await connect(port);
    sock.write(get('/'));
    const res = await readResponse(sock);
    expect(res.headers.get('Transfer-Encoding')).toBe('chunked');
    expect((await bodyOf(res)).toString()).toBe('abc');
    expect(trailers(res.body).get('X-Checksum')).toBe('c0ffee');
    expect(errors).toEqual([]);
  });

  it('after writes, its bytes end the body; a second closeWrite with data, or data of another type, is an ArgumentError', async () => {
    const seen: unknown[] = [];
    const { port, errors } = await startStreamServer(async (s) => {
      s.setHeader('Content-Length', '6');
      await s.write('abc');
      await s.closeWrite(Buffer.from('def'));
      await s.closeWrite().then(() => seen.push('again: ok'));
      await s.closeWrite('more').catch((err: unknown) => seen.push(err));
      await s.closeWrite(42 as unknown as string).catch((err: unknown) => seen.push(err));
    });
    const c = await rawClient(port);
    await c.write(get('/'));
    const [a] = await c.responses(1);
    expect([a!.text, a!.headers.get('Content-Length')]).toEqual(['abcdef', '6']);
    await waitFor(() => seen.length === 3);
    expect(seen[0]).toBe('again: ok');
    expect(seen[1]).toBeInstanceOf(ArgumentError);
    expect(seen[2]).toBeInstanceOf(ArgumentError);
    expect(errors).toEqual([]);
  });

  it('an onResponseHead tap sees the Content-Length and may change the status', async () => {
    const kernel = createKernel().register(
      definePlugin({
        name: 'tagging',
        register(k) {
          k.hooks.server.onResponseHead.tap('tagging', (res) => {
            res.headers.set('X-Seen-Length', res.headers.get('Content-Length') ?? 'none');
            res.status = 203;
          });
        },
      }),
    );
    await kernel.ready();
    onCleanup(() => kernel.close());
    const { port, errors } = await startStreamServer((s) => s.closeWrite('four'), { kernel });
    const c = await rawClient(port);
    await c.write(get('/'));
    const [a] = await c.responses(1);
    expect([a!.status, a!.headers.get('X-Seen-Length'), a!.text]).toEqual([203, '4', 'four']);
    expect(errors).toEqual([]);
  });
});

// ---- closeRead ----------------------------------------------------------------------------------

describe('closeRead', () => {
  it('discards the unread body, still sends the response, and closes instead of reusing', async () => {
    let closeReadResult: unknown = null;
    let readAfter: unknown = 'unset';
    const { port, errors } = await startStreamServer(async (s) => {
      await s.startRead();
      const first = await s.read();
      expect(first).not.toBeNull();
      closeReadResult = s.closeRead();
      readAfter = await s.read();
      s.setHeader('X-Got', 'first-chunk');
      await s.write('done');
    });
    const sock = await connect(port);
    const SIZE = 512 * 1024;
    sock.on('error', () => {});
    sock.write(`POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: ${SIZE}\r\n\r\n`);
    sock.write(Buffer.alloc(SIZE, 'q'));
    sock.write(get('/never'));
    const res = await within(readResponse(sock), 5000, 'the response');
    expect(res.status).toBe(200);
    expect(res.headers.get('X-Got')).toBe('first-chunk');
    expect(res.headers.get('Connection')).toBe('close');
    expect((await bodyOf(res)).toString()).toBe('done');
    expect(await serverClosed(sock)).toBe(true);
    expect(closeReadResult).toBeInstanceOf(Response);
    expect(readAfter).toBeNull();
    expect(errors).toEqual([]);
  });
});

// ---- ending the response ------------------------------------------------------------------------

describe('ending the response', () => {
  it('a handler that returns without closeWrite gets its chunked response ended properly', async () => {
    const { port, errors } = await startStreamServer(async (s) => {
      await s.startRead();
      await s.readAll();
      await s.write('abc');
    });
    const c = await rawClient(port);
    await c.write(get('/1') + get('/2'));
    const [a, b] = await c.responses(2);
    expect(a!.text).toBe('abc');
    expect(a!.headers.get('Transfer-Encoding')).toBe('chunked');
    expect(b!.text).toBe('abc');
    expect(c.received.toString('latin1')).toContain('abc\r\n0\r\n\r\n');
    expect(errors).toEqual([]);
  });

  it('a handler that writes nothing gets an empty 200 with Content-Length: 0', async () => {
    const { port, errors } = await startStreamServer(async (s) => {
      await s.startRead();
      await s.readAll();
    });
    const c = await rawClient(port);
    await c.write(get('/'));
    const res = await c.response();
    expect(res.status).toBe(200);
    expect(res.headers.get('Content-Length')).toBe('0');
    expect(res.headers.has('Transfer-Encoding')).toBe(false);
    expect(res.body.length).toBe(0);
    expect(errors).toEqual([]);
  });

  it('a handler that never touches a bodyless GET keeps the connection alive (pipelined requests all answered)', async () => {
    // Nothing to read: the request has no body, so the exchange is complete without a read.
    const { port, errors } = await startStreamServer(async (s) => {
      const req = await s.startRead();
      await s.write(`hi ${req.target}`);
    });
    const c = await rawClient(port);
    await c.write(get('/1') + get('/2') + get('/3'));
    const rs = await c.responses(3);
    expect(rs.map((r) => r.text)).toEqual(['hi /1', 'hi /2', 'hi /3']);
    expect(rs[0]!.close).toBe(false);
    expect(errors).toEqual([]);
  });

  it('a connection the server closes after a stream response says Connection: close in that response', async () => {
    // Whatever the server decides about reuse, it must not close silently after a response
    // that looked reusable: the client would send its next request into a closing socket.
    const { port } = await startStreamServer(async (s) => {
      await s.startRead();
      await s.write('x');
    });
    const c = await rawClient(port);
    await c.write(get('/'));
    const res = await c.response();
    expect(res.text).toBe('x');
    if (!res.close) {
      // Keep-alive was announced: the connection must carry a second request.
      await c.write(get('/again'));
      const again = await c.response();
      expect(again.text).toBe('x');
    } else {
      await c.untilClosed();
    }
  });
});

describe('reuse after a stream handler that left the request body unread', () => {
  /** Either the response announced the close and the server closes, or the connection carries the next request. */
  async function expectHonestReuse(c: Awaited<ReturnType<typeof rawClient>>, res: { close: boolean }, next: string): Promise<void> {
    if (res.close) {
      await c.untilClosed();
      return;
    }
    await c.write(get(next));
    const again = await c.response();
    expect(again.status).toBe(200);
    expect(again.text).toBe(`seen ${next}`);
  }

  const app = async (s: Stream): Promise<void> => {
    const req = await s.startRead();
    await s.write(`seen ${req.target}`);
  };

  it('a small unread body (1000 bytes, sent with the head) is dropped and the connection reused', async () => {
    const { port } = await startStreamServer(app);
    const c = await rawClient(port);
    await c.write(`POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n${'s'.repeat(1000)}`);
    const res = await c.response();
    expect(res.text).toBe('seen /small');
    await expectHonestReuse(c, res, '/next');
  });

  it('a large unread body (1 MiB): the response says Connection: close, or the connection stays usable', async () => {
    const { port } = await startStreamServer(app);
    const c = await rawClient(port);
    c.socket.on('error', () => {});
    const SIZE = 1024 * 1024;
    await c.write(`POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: ${SIZE}\r\n\r\n`);
    void c.write(Buffer.alloc(SIZE, 'b')).catch(() => {});
    const res = await c.response();
    expect(res.text).toBe('seen /big');
    await expectHonestReuse(c, res, '/next');
  });

  it('Expect: 100-continue answered without reading: the server does not wait for a body the client will not send', async () => {
    const { port } = await startStreamServer(app);
    const c = await rawClient(port);
    await c.write('POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\nExpect: 100-continue\r\n\r\n');
    const res = await c.response();
    expect(res.text).toBe('seen /e');
    expect(c.received.toString('latin1')).not.toContain('100 Continue');
    // RFC 9110 §10.1.1: the client got a final status instead of 100 and sends no body. The
    // next bytes on the connection are a new request, never the body of the previous one.
    await expectHonestReuse(c, res, '/next');
  });
});

// ---- Date and Connection set by a stream handler -------------------------------------------------

describe('Date and Connection set by a stream handler', () => {
  function headerCount(raw: Buffer, name: string): number {
    const head = raw.toString('latin1', 0, headEnd(raw));
    return head.split('\r\n').filter((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`)).length;
  }

  it('a Date the handler set is kept and is the only one', async () => {
    const DATE = 'Mon, 01 Jan 2001 00:00:00 GMT';
    const { port } = await startStreamServer(async (s) => {
      await s.startRead();
      await s.readAll();
      s.setHeader('Date', DATE);
      await s.write('d');
    });
    const c = await rawClient(port);
    await c.write(get('/'));
    const res = await c.response();
    expect(res.headers.getAll('Date')).toEqual([DATE]);
    expect(headerCount(c.received, 'Date')).toBe(1);
  });

  it('Connection: close set by the handler is sent once and closes the connection after the response', async () => {
    const { port } = await startStreamServer(async (s) => {
      const req = await s.startRead();
      await s.readAll();
      s.setHeader('Connection', 'close');
      await s.write(`bye ${req.target}`);
    });
    const c = await rawClient(port);
    await c.write(get('/1') + get('/2'));
    const res = await c.response();
    expect(res.text).toBe('bye /1');
    expect(res.headers.getAll('Connection')).toEqual(['close']);
    const all = await c.untilClosed();
    expect(all.toString('latin1')).not.toContain('bye /2');
  });

  it('an HTTP/1.0 keep-alive request with a fixed-length stream response stays open and says keep-alive once', async () => {
    const { port } = await startStreamServer(async (s) => {
      const req = await s.startRead();
      await s.readAll();
      const body = `old ${req.target}`;
      s.setHeader('Content-Length', String(body.length));
      await s.write(body);
    });
    const c = await rawClient(port);
    await c.write('GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n');
    const a = await c.response();
    expect(a.text).toBe('old /a');
    expect(a.headers.getAll('Connection')).toEqual(['keep-alive']);
    await c.write('GET /b HTTP/1.0\r\nConnection: keep-alive\r\n\r\n');
    expect((await c.response()).text).toBe('old /b');
  });
});

// ---- peerAddr -----------------------------------------------------------------------------------

describe('peerAddr', () => {
  it('gives ip:port as a string, the ip bytes and the port of the client', async () => {
    let addr: ReturnType<Stream['peerAddr']> | null = null;
    const { port } = await startStreamServer(async (s) => {
      await s.startRead();
      addr = s.peerAddr();
      await s.write(String(addr));
    });
    const c = await rawClient(port);
    await c.write(get('/'));
    const res = await c.response();
    const local = c.socket.localPort!;
    expect(res.text).toBe(`127.0.0.1:${local}`);
    const a = addr as unknown as ReturnType<Stream['peerAddr']>;
    expect(String(a)).toBe(`127.0.0.1:${local}`);
    expect(Array.from(a.ip)).toEqual([127, 0, 0, 1]);
    expect(a.port).toBe(local);
    expect(a.address).toBe('127.0.0.1');
    expect(a.family).toBe('IPv4');
  });
});

// ---- Expect: 100-continue ------------------------------------------------------------------------

describe('Expect: 100-continue', () => {
  it('100 Continue is sent only when the handler starts reading the body', async () => {
    let readStarted = false;
    const { port, errors } = await startStreamServer(async (s) => {
      await s.startRead();
      s.setHeader('X-Stage', 'answered');
      readStarted = true;
      const body = await s.readAll();
      await s.write(body);
    });
    const sock = await connect(port);
    sock.write('POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 7\r\nExpect: 100-continue\r\n\r\n');
    const interim = await within(readResponse(sock, { returnInformational: true }), 3000, '100 Continue');
    expect(interim.status).toBe(100);
    expect(readStarted).toBe(true);
    sock.write('payload');
    const res = await within(readResponse(sock), 3000, 'the final response');
    expect(res.status).toBe(200);
    expect((await bodyOf(res)).toString()).toBe('payload');
    expect(errors).toEqual([]);
  });

  it('a handler that answers without reading sends no 100 Continue', async () => {
    const { port } = await startStreamServer(async (s) => {
      await s.startRead();
      s.setStatus(413);
      await s.write('too big, not reading');
    });
    const c = await rawClient(port);
    await c.write('POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\nExpect: 100-continue\r\n\r\n');
    const res = await c.response();
    expect(res.status).toBe(413);
    expect(res.text).toBe('too big, not reading');
    expect(c.received.toString('latin1')).not.toContain('100 Continue');
    expect(c.received.subarray(0, 12).toString('latin1')).toBe('HTTP/1.1 413');
  });
});

// ---- HTTP/1.0 -----------------------------------------------------------------------------------

describe('HTTP/1.0 client', () => {
  it('a stream response without Content-Length is delimited by closing the connection', async () => {
    const { port, errors } = await startStreamServer(async (s) => {
      await s.startRead();
      await s.write('one,');
      await s.write('two');
      s.addTrailer('X-Never', 'sent');
    });
    const c = await rawClient(port);
    await c.write('GET /old HTTP/1.0\r\nHost: x\r\n\r\n');
    const all = await c.untilClosed();
    const h = headEnd(all);
    const head = all.toString('latin1', 0, h);
    expect(head.startsWith('HTTP/1.1 200')).toBe(true);
    expect(head).not.toMatch(/transfer-encoding/i);
    expect(head).not.toMatch(/content-length/i);
    expect(all.toString('latin1', h)).toBe('one,two');
    const res = await readResponse(all);
    expect(res.close).toBe(true);
    expect((await bodyOf(res)).toString()).toBe('one,two');
    expect(errors).toEqual([]);
  });
});
