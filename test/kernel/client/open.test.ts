/**
 * `HTTP.open(method, url, async (stream) => …, options)`: one client exchange read and written
 * as a stream, against the project's own stream server (`listen`) and a raw TCP peer on
 * loopback. Covers the request framing seen on the server (chunked unless Content-Length is
 * given, no body for a GET without writes, exact bytes, several MiB under backpressure), the
 * read API (`startRead`, `read`, `readBytes`, `readAll`, `for await`, `closeRead`), the result
 * (the final Response, `body === null`), errors (a write on a GET, a handler that throws,
 * `peerAddr`, `StatusError` after the handler ran), full-duplex streaming, and cancellation
 * through `context` during a write.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import * as HTTP from '../../../index.js';
import { ArgumentError, CanceledError, ClientStream, RequestContext, StatusError, cancel, type Stream } from '../../../kernel/index.js';
import { FlowBody } from '../../../kernel/protocol.js';
import { deferred, newClient, okResponse, onCleanup, rawServer, readRequests, rejection, startStreamServer, waitFor, within, type RawRequest } from '../../helpers/client.js';

const MiB = 1024 * 1024;

// ---- local helpers ---------------------------------------------------------------------------

/** What the echo server saw of one request. */
interface Seen {
  method: string;
  target: string;
  te: string | undefined;
  cl: string | undefined;
  body: Buffer;
}

/**
 * A stream server that reads each request body to its end, then answers 200 with the same
 * bytes (Content-Length set); `seen` records method, framing headers and the body.
 */
async function echoServer() {
  const seen: Seen[] = [];
  const s = await startStreamServer(async (stream: Stream) => {
    const req = await stream.startRead();
    const body = Buffer.from(await stream.readAll());
    seen.push({ method: req.method, target: req.target, te: req.headers.get('Transfer-Encoding'), cl: req.headers.get('Content-Length'), body });
    stream.setHeader('Content-Type', 'application/octet-stream');
    stream.setHeader('Content-Length', String(body.length));
    stream.setHeader('X-Method', req.method);
    await stream.write(body);
    await stream.closeWrite();
  });
  return Object.assign(s, { seen });
}

/** Reads exactly `n` bytes of the response body (fewer only at its end) with `readBytes`. */
async function readExactly(stream: ClientStream, n: number): Promise<string> {
  const out = Buffer.alloc(n);
  let got = 0;
  while (got < n) {
    const k = await stream.readBytes(out.subarray(got));
    if (k === 0) break;
    got += k;
  }
  return out.subarray(0, got).toString('utf8');
}

/** Deterministic pseudo-random bytes (so a misplaced or dropped piece shows in the hash). */
function pattern(size: number, seed: number): Buffer {
  const b = Buffer.allocUnsafe(size);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < size; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    b[i] = x & 0xff;
  }
  return b;
}

function sha256(b: Uint8Array): string {
  return createHash('sha256').update(b).digest('hex');
}

const utf8 = (b: Uint8Array): string => Buffer.from(b).toString('utf8');

// ---- framing on the wire ---------------------------------------------------------------------

describe('open: request framing', () => {
  it('writes are sent chunked when no Content-Length is given; the server gets the exact bytes', async () => {
    const s = await echoServer();
    const res = await HTTP.open('POST', `${s.origin}/up`, async (stream) => {
      await stream.write('hello ');
      await stream.write(Buffer.from('wörld'));
      await stream.write(new Uint8Array([0, 1, 2, 255]));
      const head = await stream.startRead();
      expect(head.status).toBe(200);
      expect(head.headers.get('X-Method')).toBe('POST');
      expect(Buffer.from(await stream.readAll())).toEqual(Buffer.concat([Buffer.from('hello wörld'), Buffer.from([0, 1, 2, 255])]));
    });
    expect(s.seen).toHaveLength(1);
    expect(s.seen[0]!.method).toBe('POST');
    expect(s.seen[0]!.target).toBe('/up');
    expect(s.seen[0]!.te).toBe('chunked');
    expect(s.seen[0]!.cl).toBeUndefined();
    expect(s.seen[0]!.body).toEqual(Buffer.concat([Buffer.from('hello wörld'), Buffer.from([0, 1, 2, 255])]));
    expect(res.status).toBe(200);
  });

  it('with a Content-Length header the body is sent with that length, not chunked', async () => {
    const s = await echoServer();
    const res = await HTTP.open(
      'PUT',
      `${s.origin}/fixed`,
      async (stream) => {
        await stream.write('hello ');
        await stream.write('world');
        await stream.startRead();
        expect(utf8(await stream.readAll())).toBe('hello world');
      },
      { headers: { 'Content-Length': '11' } },
    );
    expect(res.status).toBe(200);
    expect(s.seen[0]!.method).toBe('PUT');
    expect(s.seen[0]!.cl).toBe('11');
    expect(s.seen[0]!.te).toBeUndefined();
    expect(s.seen[0]!.body.toString()).toBe('hello world');
  });

  it('on the wire: a chunked body is each write as one chunk, then the last chunk', async () => {
    const got = deferred<RawRequest>();
    let wire = Buffer.alloc(0);
    const raw = await rawServer((socket) => {
      socket.on('data', (d: Buffer) => (wire = Buffer.concat([wire, d])));
      readRequests(socket, (r) => {
        got.resolve(r);
        socket.write(okResponse('done'));
      });
    });
    const res = await HTTP.open('POST', `${raw.origin}/wire`, async (stream) => {
      await stream.write('abc');
      await stream.write('defgh');
      const head = await stream.startRead();
      expect(head.status).toBe(200);
      expect(utf8(await stream.readAll())).toBe('done');
    });
    expect(res.status).toBe(200);
    const r = await within(got.promise, 5000, 'the raw server to read the request');
    expect(r.head).toMatch(/^POST \/wire HTTP\/1\.1\r\n/);
    expect(r.headers.get('transfer-encoding')).toBe('chunked');
    expect(r.headers.has('content-length')).toBe(false);
    const text = wire.toString('latin1');
    expect(text.slice(text.indexOf('\r\n\r\n') + 4)).toBe('3\r\nabc\r\n5\r\ndefgh\r\n0\r\n\r\n');
  });

  it('a GET without writes has no body on the wire (no Content-Length, no Transfer-Encoding, nothing after the head)', async () => {
    const got = deferred<RawRequest>();
    let wire = Buffer.alloc(0);
    const raw = await rawServer((socket) => {
      socket.on('data', (d: Buffer) => (wire = Buffer.concat([wire, d])));
      readRequests(socket, (r) => {
        got.resolve(r);
        socket.write(okResponse('body of the GET'));
      });
    });
    const res = await HTTP.open('GET', `${raw.origin}/g?x=1`, async (stream) => {
      const head = await stream.startRead();
      expect(head.status).toBe(200);
      expect(utf8(await stream.readAll())).toBe('body of the GET');
    });
    expect(res.status).toBe(200);
    const r = await within(got.promise, 5000, 'the raw server to read the GET');
    expect(r.method).toBe('GET');
    expect(r.target).toBe('/g?x=1');
    expect(r.headers.has('content-length')).toBe(false);
    expect(r.headers.has('transfer-encoding')).toBe(false);
    expect(wire.toString('latin1').endsWith('\r\n\r\n')).toBe(true);
    expect(wire.length).toBe(wire.indexOf('\r\n\r\n') + 4);
  });

  it('several MiB in pieces arrive intact and chunked, and writes wait for the connection (backpressure)', async () => {
    const TOTAL = 32 * MiB;
    const PIECE = 64 * 1024;
    const data = pattern(TOTAL, 7);
    let acked = 0;
    let serverRead = 0;
    let maxAhead = 0;
    const s = await startStreamServer(async (stream) => {
      const req = await stream.startRead();
      const h = createHash('sha256');
      for await (const chunk of stream) {
        serverRead += chunk.length;
        // How far the client's resolved writes are ahead of what the server has read.
        maxAhead = Math.max(maxAhead, acked - serverRead);
        h.update(chunk);
      }
      const summary = JSON.stringify({ te: req.headers.get('Transfer-Encoding') ?? null, cl: req.headers.get('Content-Length') ?? null, n: serverRead, sha: h.digest('hex') });
      stream.setHeader('Content-Type', 'application/json');
      await stream.write(summary);
    });
    const res = await HTTP.open('POST', `${s.origin}/big`, async (stream) => {
      for (let off = 0; off < TOTAL; off += PIECE) {
        await stream.write(data.subarray(off, off + PIECE));
        acked += PIECE;
      }
      await stream.startRead();
      const summary = JSON.parse(utf8(await stream.readAll())) as { te: string | null; cl: string | null; n: number; sha: string };
      expect(summary).toEqual({ te: 'chunked', cl: null, n: TOTAL, sha: sha256(data) });
    });
    expect(res.status).toBe(200);
    expect(res.body).toBeNull();
    // Without backpressure every write resolves at once and the client runs 32 MiB ahead of the
    // server; with it, only what the socket buffers hold can be ahead.
    expect(maxAhead).toBeLessThan(TOTAL / 2);
  });

  it('several MiB with a Content-Length are sent as a fixed-length body', async () => {
    const TOTAL = 6 * MiB + 123;
    const data = pattern(TOTAL, 99);
    const s = await startStreamServer(async (stream) => {
      const req = await stream.startRead();
      const body = await stream.readAll();
      await stream.write(JSON.stringify({ te: req.headers.get('Transfer-Encoding') ?? null, cl: req.headers.get('Content-Length') ?? null, n: body.length, sha: sha256(body) }));
    });
    await HTTP.open(
      'POST',
      `${s.origin}/big-fixed`,
      async (stream) => {
        for (let off = 0; off < TOTAL; off += 100_000) await stream.write(data.subarray(off, off + 100_000));
        await stream.startRead();
        expect(JSON.parse(utf8(await stream.readAll()))).toEqual({ te: null, cl: String(TOTAL), n: TOTAL, sha: sha256(data) });
      },
      { headers: { 'Content-Length': String(TOTAL) } },
    );
  });
});

// ---- reading -----------------------------------------------------------------------------------

describe('open: reading the response', () => {
  /** A server answering a chunked body written in three pieces: `alpha-`, `beta-`, `gamma`. */
  async function piecesServer() {
    return startStreamServer(async (stream) => {
      await stream.startRead();
      await stream.readAll();
      stream.setHeader('X-Pieces', '3');
      await stream.write('alpha-');
      await stream.write('beta-');
      await stream.write('gamma');
    });
  }

  it('read() returns chunks then null; the result is the final Response with body === null', async () => {
    const s = await piecesServer();
    const chunks: string[] = [];
    let handlerValue: unknown;
    const res = await HTTP.open('GET', `${s.origin}/r`, async (stream) => {
      const head = await stream.startRead();
      expect(head.status).toBe(200);
      expect(head.headers.get('X-Pieces')).toBe('3');
      for (;;) {
        const c = await stream.read();
        if (c === null) break;
        chunks.push(utf8(c));
      }
      expect(await stream.read()).toBeNull();
      handlerValue = 'the handler value';
      return handlerValue;
    });
    expect(chunks.join('')).toBe('alpha-beta-gamma');
    expect(res).toBeInstanceOf(HTTP.Response);
    expect(res.status).toBe(200);
    expect(res.headers.get('X-Pieces')).toBe('3');
    expect(res.body).toBeNull();
    expect(res.url).toBe(`${s.origin}/r`);
    expect(res).not.toBe(handlerValue);
  });

  it('readBytes fills a small buffer across chunk boundaries, then returns 0', async () => {
    const s = await piecesServer();
    await HTTP.open('GET', `${s.origin}/rb`, async (stream) => {
      await stream.startRead();
      const dst = new Uint8Array(4);
      const parts: string[] = [];
      for (;;) {
        const n = await stream.readBytes(dst);
        if (n === 0) break;
        expect(n).toBeLessThanOrEqual(4);
        parts.push(Buffer.from(dst.subarray(0, n)).toString());
      }
      expect(parts.join('')).toBe('alpha-beta-gamma');
      expect(await stream.readBytes(dst)).toBe(0);
    });
  });

  it('for await iterates the body; readAll after a partial readBytes returns the rest', async () => {
    const s = await piecesServer();
    await HTTP.open('GET', `${s.origin}/it`, async (stream) => {
      let all = '';
      for await (const c of stream) all += utf8(c);
      expect(all).toBe('alpha-beta-gamma');
    });
    await HTTP.open('GET', `${s.origin}/mixed`, async (stream) => {
      expect(await readExactly(stream, 3)).toBe('alp');
      expect(utf8(await stream.readAll())).toBe('ha-beta-gamma');
    });
  });

  it('read() without startRead() first finishes the request and reads the body', async () => {
    const s = await echoServer();
    await HTTP.open('POST', `${s.origin}/implicit`, async (stream) => {
      await stream.write('implicit start');
      expect(utf8(await stream.readAll())).toBe('implicit start');
    });
    expect(s.seen[0]!.body.toString()).toBe('implicit start');
  });

  it('a handler that never reads: open still resolves and the connection is reused', async () => {
    const s = await echoServer();
    const client = newClient();
    const a = await client.open('POST', `${s.origin}/a`, async (stream) => {
      await stream.write('unread');
    });
    const b = await client.open('POST', `${s.origin}/b`, async (stream) => {
      await stream.write('second');
      expect(utf8(await stream.readAll())).toBe('second');
    });
    expect(a.status).toBe(200);
    expect(a.body).toBeNull();
    expect(b.status).toBe(200);
    expect(s.seen.map((x) => x.body.toString())).toEqual(['unread', 'second']);
    expect(s.connections).toBe(1);
  });

  it('closeRead() discards the rest of a large body, returns the Response, and the connection is not reused', async () => {
    const s = await startStreamServer(async (stream) => {
      await stream.startRead();
      const piece = Buffer.alloc(64 * 1024, 0x61);
      try {
        for (let i = 0; i < 128; i++) await stream.write(piece); // 8 MiB, chunked
      } catch {
        // The client went away: expected.
      }
    });
    const client = newClient();
    let first = 0;
    const res = await client.open('GET', `${s.origin}/huge`, async (stream) => {
      const c = await stream.read();
      first = c?.length ?? 0;
      const r = await stream.closeRead();
      expect(r.status).toBe(200);
      expect(await stream.read()).toBeNull();
      expect(await stream.readBytes(new Uint8Array(10))).toBe(0);
    });
    expect(first).toBeGreaterThan(0);
    expect(res.status).toBe(200);
    expect(res.body).toBeNull();
    await within(s.closedAt(1), 5000, 'the connection of the discarded body to close');
    const again = await client.open('GET', `${s.origin}/huge`, async (stream) => {
      await stream.closeRead();
    });
    expect(again.status).toBe(200);
    expect(s.connections).toBe(2);
  });
});

describe('open: closeRead when the rest of the body already arrived', () => {
  for (const [name, framing] of [
    ['32 KiB with a Content-Length', 'length'],
    ['32 KiB chunked', 'chunked'],
  ] as const) {
    it(`${name}: the connection is still closed, not reused`, async () => {
      const body = Buffer.alloc(32 * 1024, 0x62);
      const s = await startStreamServer(async (stream) => {
        await stream.startRead();
        if (framing === 'length') stream.setHeader('Content-Length', String(body.length));
        await stream.write(body);
      });
      const client = newClient();
      const res = await client.open('GET', `${s.origin}/small`, async (stream) => {
        const head = await stream.startRead();
        await waitFor(() => (head.body as FlowBody).complete, 3000, 'the whole body to arrive');
        expect((await stream.read())?.length).toBeGreaterThan(0);
        expect((await stream.closeRead()).status).toBe(200);
      });
      expect(res.status).toBe(200);
      await within(s.closedAt(1), 3000, 'the connection of the closeRead exchange to close');
      expect(client.transport.connectionCount()).toBe(0);
      await client.open('GET', `${s.origin}/next`, async (stream) => {
        await stream.closeRead();
      });
      expect(s.connections).toBe(2);
    });
  }

  it('a body read to its end, or left unread (open reads it out), keeps the connection for reuse', async () => {
    const s = await startStreamServer(async (stream) => {
      await stream.startRead();
      stream.setHeader('Content-Length', '5');
      await stream.write('hello');
    });
    const client = newClient();
    await client.open('GET', `${s.origin}/1`, async (stream) => {
      expect(utf8(await stream.readAll())).toBe('hello');
    });
    await client.open('GET', `${s.origin}/2`, async (stream) => {
      const head = await stream.startRead();
      await waitFor(() => (head.body as FlowBody).complete, 3000, 'the whole body to arrive');
    });
    await client.open('GET', `${s.origin}/3`, async () => undefined);
    expect(s.connections).toBe(1);
    expect(client.transport.idleConnectionCount()).toBe(1);
  });
});

// ---- errors ------------------------------------------------------------------------------------

describe('open: errors', () => {
  it('a write on a GET throws ArgumentError (no body is sent)', async () => {
    const s = await echoServer();
    let thrown: unknown = null;
    const res = await HTTP.open('GET', `${s.origin}/nobody`, async (stream) => {
      try {
        await stream.write('x');
      } catch (err) {
        thrown = err;
      }
      await stream.startRead();
    });
    expect(thrown).toBeInstanceOf(ArgumentError);
    expect(res.status).toBe(200);
    expect(s.seen[0]!.method).toBe('GET');
    expect(s.seen[0]!.body.length).toBe(0);
    expect(s.seen[0]!.te).toBeUndefined();
    expect(s.seen[0]!.cl).toBeUndefined();
    // Uncaught in the handler, it is what open rejects with.
    const err = await rejection(
      HTTP.open('GET', `${s.origin}/nobody`, async (stream) => {
        await stream.write('x');
      }),
    );
    expect(err).toBeInstanceOf(ArgumentError);
  });

  it('peerAddr() on a client stream throws ArgumentError', async () => {
    const s = await echoServer();
    let thrown: unknown = null;
    await HTTP.open('GET', `${s.origin}/peer`, async (stream) => {
      try {
        stream.peerAddr();
      } catch (err) {
        thrown = err;
      }
      await stream.startRead();
    });
    expect(thrown).toBeInstanceOf(ArgumentError);
  });

  it('a handler that throws while the response streams: open rejects with that very error and the connection closes', async () => {
    const s = await startStreamServer(async (stream) => {
      await stream.startRead();
      await stream.readAll();
      const piece = Buffer.alloc(64 * 1024, 0x63);
      try {
        for (let i = 0; i < 128; i++) await stream.write(piece); // 8 MiB: still arriving when the handler throws
      } catch {
        // The client went away: expected.
      }
    });
    const client = newClient();
    const boom = new Error('handler failed on purpose');
    const err = await rejection(
      client.open('POST', `${s.origin}/throw`, async (stream) => {
        await stream.write('request body');
        await stream.startRead();
        await stream.read();
        throw boom;
      }),
    );
    expect(err).toBe(boom);
    await within(s.closedAt(1), 5000, 'the connection of the failed exchange to close');
    const ok = await client.open('POST', `${s.origin}/after`, async (stream) => {
      await stream.write('x');
      await stream.closeRead();
    });
    expect(ok.status).toBe(200);
    expect(s.connections).toBe(2);
  });

  it('a handler that throws after a small response fully arrived: open rejects with it; the clean exchange may be reused', async () => {
    const s = await echoServer();
    const client = newClient();
    const boom = new Error('handler failed after the head');
    const err = await rejection(
      client.open('POST', `${s.origin}/throw`, async (stream) => {
        await stream.write('partial');
        await stream.startRead();
        throw boom;
      }),
    );
    expect(err).toBe(boom);
    const ok = await client.open('POST', `${s.origin}/after`, async (stream) => {
      await stream.write('fresh');
      expect(utf8(await stream.readAll())).toBe('fresh');
    });
    expect(ok.status).toBe(200);
  });

  it('a handler that throws mid-upload: the server never gets the truncated body as a complete request', async () => {
    const s = await echoServer();
    const client = newClient();
    const boom = new Error('upload aborted by the handler');
    const err = await rejection(
      client.open('POST', `${s.origin}/abort`, async (stream) => {
        await stream.write('first half, ');
        throw boom;
      }),
    );
    expect(err).toBe(boom);
    // Either the server reads a complete request (the bug) or the connection closes under it.
    await waitFor(() => s.seen.length > 0 || s.closedConnections > 0, 5000, 'the server to see a request or a closed connection');
    expect(s.seen.map((x) => `${x.target} ${x.body.toString()}`)).toEqual([]);
    await within(s.closedAt(1), 5000, 'the connection of the aborted upload to close');
    // A later exchange goes over a new connection.
    await client.open('POST', `${s.origin}/next`, async (stream) => {
      await stream.write('next');
      await stream.startRead();
    });
    expect(s.connections).toBe(2);
    expect(s.seen.map((x) => x.target)).toEqual(['/next']);
  });

  it('404: StatusError after the handler ran (status and response); statusException: false resolves', async () => {
    const s = await startStreamServer(async (stream) => {
      await stream.startRead();
      await stream.readAll();
      stream.setStatus(404);
      await stream.write('no such thing');
    });
    let ran = false;
    let bodySeen = '';
    const err = await rejection(
      HTTP.open('GET', `${s.origin}/missing`, async (stream) => {
        const head = await stream.startRead();
        expect(head.status).toBe(404);
        bodySeen = utf8(await stream.readAll());
        ran = true;
      }),
    );
    expect(ran).toBe(true);
    expect(bodySeen).toBe('no such thing');
    expect(err).toBeInstanceOf(StatusError);
    expect((err as StatusError).status).toBe(404);
    expect((err as StatusError).response.status).toBe(404);
    expect((err as StatusError).response.body).toBeNull();

    let ran2 = false;
    const res = await HTTP.open(
      'GET',
      `${s.origin}/missing`,
      async (stream) => {
        await stream.startRead();
        ran2 = true;
      },
      { statusException: false },
    );
    expect(ran2).toBe(true);
    expect(res.status).toBe(404);
    expect(res.body).toBeNull();
  });
});

// ---- full duplex -------------------------------------------------------------------------------

describe('open: full duplex on HTTP/1.1', () => {
  it('the client reads the echo of chunk 1 before it writes chunk 2', async () => {
    const order: string[] = [];
    const s = await startStreamServer(async (stream) => {
      await stream.startRead();
      stream.setHeader('Content-Type', 'application/octet-stream');
      stream.startWrite(); // chunked: the head goes out now, before the request body ended
      for await (const chunk of stream) {
        order.push(`server got ${utf8(chunk)}`);
        await stream.write(chunk);
      }
      order.push('server saw the end');
    });
    const res = await within(
      HTTP.open('POST', `${s.origin}/duplex`, async (stream) => {
        await stream.write('ping-1');
        const head = await stream.startRead({ closeWrite: false });
        expect(head.status).toBe(200);
        expect(await readExactly(stream, 6)).toBe('ping-1');
        order.push('client read echo 1');
        await stream.write('ping-2');
        expect(await readExactly(stream, 6)).toBe('ping-2');
        order.push('client read echo 2');
        stream.closeWrite();
        expect(utf8(await stream.readAll())).toBe('');
      }),
      10_000,
      'the full-duplex exchange',
    );
    expect(res.status).toBe(200);
    expect(order).toEqual(['server got ping-1', 'client read echo 1', 'server got ping-2', 'client read echo 2', 'server saw the end']);
  });
});

// ---- cancellation ------------------------------------------------------------------------------

describe('open: cancellation', () => {
  it('cancel(context) during a write: the write and open reject with CanceledError and the connection closes', async () => {
    const serverHead = deferred();
    const release = deferred();
    onCleanup(() => release.resolve());
    let serverRead: string | Error = 'not yet';
    const s = await startStreamServer(async (stream) => {
      await stream.startRead();
      serverHead.resolve();
      await release.promise; // reads nothing until then: the client's big write stalls
      try {
        serverRead = `complete body of ${(await stream.readAll()).length} bytes`;
      } catch (err) {
        serverRead = err as Error;
      }
    });
    const ctx = new RequestContext();
    const writing = deferred();
    let writeError: unknown = null;
    let bigSettled = false;
    const opened = HTTP.open(
      'POST',
      `${s.origin}/cancel`,
      async (stream) => {
        await stream.write('start');
        const big = stream.write(Buffer.alloc(32 * MiB, 0x62));
        big.then(
          () => (bigSettled = true),
          () => (bigSettled = true),
        );
        writing.resolve();
        try {
          await big;
        } catch (err) {
          writeError = err;
          throw err;
        }
      },
      { context: ctx },
    );
    const outcome = rejection(opened);
    await within(Promise.all([serverHead.promise, writing.promise]), 5000, 'the upload to start');
    // 32 MiB cannot pass a server that reads nothing: the write is still in progress.
    expect(bigSettled).toBe(false);
    const t0 = performance.now();
    cancel(ctx, { message: 'upload stopped by the user' });
    const err = await within(outcome, 5000, 'open to reject after cancel');
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(err).toBeInstanceOf(CanceledError);
    expect(err.message).toContain('upload stopped by the user');
    expect(HTTP.canceled(ctx)).toBe(true);
    // The server, reading on now, finds the connection cut short (not a complete body).
    release.resolve();
    await within(s.closedAt(1), 5000, 'the canceled connection to close');
    await waitFor(() => serverRead !== 'not yet', 5000, 'the server handler to finish reading');
    expect(serverRead).toBeInstanceOf(Error);
    // The write in progress stops with the cancellation; it must not resolve as if sent.
    expect(writeError).toBeInstanceOf(CanceledError);
  });

  it('a context canceled before open: rejects with CanceledError and the handler gets no response', async () => {
    const s = await echoServer();
    const ctx = new RequestContext();
    cancel(ctx, { message: 'too late' });
    let headError: unknown = null;
    const err = await rejection(
      HTTP.open(
        'GET',
        `${s.origin}/pre`,
        async (stream) => {
          try {
            await stream.startRead();
          } catch (e) {
            headError = e;
            throw e;
          }
        },
        { context: ctx },
      ),
    );
    expect(err).toBeInstanceOf(CanceledError);
    expect(err.message).toContain('too late');
    expect(headError).toBe(err);
    expect(s.seen).toEqual([]);
  });
});
