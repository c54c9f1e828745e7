/**
 * Request bodies of every accepted kind, the query option, `responseStream`,
 * `statusException`, `basicauth`, `headers`, and the Client defaults (`defaultHeaders`,
 * `defaultQuery`, `defaultBasicauth`, default call options) with per-call options winning.
 * Against the project's server (and a raw server where the wire matters).
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Readable, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import * as HTTP from '../../../index.js';
import { ArgumentError, BytesBody, Client, Headers, Response, StatusError, Transport, type Request } from '../../../kernel/index.js';
import { newClient, okResponse, onCleanup, rawServer, readRequests, rejection, startServer, text, trackChild, type RawRequest } from '../../helpers/client.js';

interface Seen {
  method: string;
  target: string;
  headers: Headers;
  body: Buffer;
  remote: string;
}

/** A server that records each request and answers `ok`. */
async function recorder(answer: (req: Request) => Response = () => new Response(200, 'ok')) {
  const seen: Seen[] = [];
  const s = await startServer((req) => {
    const b = req.body;
    const body = b instanceof Uint8Array ? Buffer.from(b) : typeof b === 'string' ? Buffer.from(b) : Buffer.alloc(0);
    seen.push({ method: req.method, target: req.target, headers: req.headers, body, remote: '' });
    return answer(req);
  });
  return Object.assign(s, { seen });
}

function sha(b: Uint8Array): string {
  return createHash('sha256').update(b).digest('hex');
}

async function tempFile(data: Uint8Array): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'swy-client-'));
  onCleanup(() => rm(dir, { recursive: true, force: true }));
  const f = join(dir, 'upload.bin');
  await writeFile(f, data);
  return f;
}

function params(target: string): [string, string][] {
  const q = target.indexOf('?');
  return q < 0 ? [] : [...new URLSearchParams(target.slice(q + 1)).entries()];
}

describe('request bodies', () => {
  it('a string is sent UTF-8 with its Content-Length', async () => {
    const s = await recorder();
    await HTTP.post(`${s.origin}/s`, { body: 'héllo wörld' });
    expect(s.seen[0]!.body.toString('utf8')).toBe('héllo wörld');
    expect(s.seen[0]!.headers.get('Content-Length')).toBe(String(Buffer.byteLength('héllo wörld')));
    expect(s.seen[0]!.headers.has('Transfer-Encoding')).toBe(false);
  });

  it('bytes are sent as they are (all 256 byte values)', async () => {
    const s = await recorder();
    const data = new Uint8Array(1024);
    for (let i = 0; i < data.length; i++) data[i] = i & 255;
    await HTTP.put(`${s.origin}/b`, { body: data });
    expect(Buffer.compare(s.seen[0]!.body, Buffer.from(data))).toBe(0);
    expect(s.seen[0]!.headers.get('Content-Length')).toBe('1024');
  });

  it('a Node Readable (fs.createReadStream of a temp file) is streamed chunked, bytes intact', async () => {
    const s = await recorder();
    const data = randomBytes(700_000);
    const file = await tempFile(data);
    await HTTP.post(`${s.origin}/file`, { body: createReadStream(file, { highWaterMark: 65536 }) });
    expect(s.seen[0]!.headers.get('Transfer-Encoding')).toMatch(/chunked/i);
    expect(s.seen[0]!.headers.has('Content-Length')).toBe(false);
    expect(s.seen[0]!.body.length).toBe(data.length);
    expect(sha(s.seen[0]!.body)).toBe(sha(data));
  });

  it('an async iterable of strings and bytes is sent chunked (checked on the wire)', async () => {
    const raw = await rawServer((sock) => {
      readRequests(sock, (r) => {
        got.push(r);
        sock.write(okResponse());
      });
    });
    const got: RawRequest[] = [];
    async function* gen(): AsyncGenerator<string | Uint8Array> {
      yield 'alpha-';
      yield Buffer.from('beta-');
      yield new Uint8Array([0x67, 0x61, 0x6d, 0x6d, 0x61]);
    }
    const res = await HTTP.post(`${raw.origin}/gen`, { body: gen() });
    expect(res.status).toBe(200);
    expect(got[0]!.headers.get('transfer-encoding')).toBe('chunked');
    expect(got[0]!.headers.has('content-length')).toBe(false);
    expect(got[0]!.body.toString()).toBe('alpha-beta-gamma');
  });

  it('a Readable.from() stream and an array of buffers are accepted', async () => {
    const s = await recorder();
    await HTTP.post(`${s.origin}/r1`, { body: Readable.from([Buffer.from('one,'), Buffer.from('two')]) });
    await HTTP.post(`${s.origin}/r2`, { body: [Buffer.from('x'), Buffer.from('y')] });
    expect(s.seen.map((x) => x.body.toString())).toEqual(['one,two', 'xy']);
  });

  it('an AbstractBody (BytesBody) with a known length is sent with Content-Length', async () => {
    const s = await recorder();
    await HTTP.post(`${s.origin}/bb`, { body: new BytesBody('bytes-body!') });
    expect(s.seen[0]!.body.toString()).toBe('bytes-body!');
    expect(s.seen[0]!.headers.get('Content-Length')).toBe('11');
  });

  it('a plain object is sent form-urlencoded with Content-Type, repeated keys from arrays', async () => {
    const s = await recorder();
    await HTTP.post(`${s.origin}/form`, { body: { name: 'a b&c', tag: ['x', 'y'], n: 3, ok: true } });
    const seen = s.seen[0]!;
    expect(seen.headers.get('Content-Type')).toBe('application/x-www-form-urlencoded');
    expect([...new URLSearchParams(seen.body.toString()).entries()]).toEqual([
      ['name', 'a b&c'],
      ['tag', 'x'],
      ['tag', 'y'],
      ['n', '3'],
      ['ok', 'true'],
    ]);
  });

  it('json: JSON.stringify(value) with Content-Type application/json, on every verb and request()', async () => {
    const s = await recorder();
    const value = { name: 'ä', list: [1, 2], nested: { ok: true } };
    await HTTP.post(`${s.origin}/j`, { json: value });
    await HTTP.put(`${s.origin}/j`, { json: [1, 'two'] });
    await HTTP.patch(`${s.origin}/j`, null, undefined, { json: 'text' });
    await HTTP.request('QUERY', `${s.origin}/j`, { json: null });
    await newClient().post(`${s.origin}/j`, { json: 0 });
    expect(s.seen.map((x) => x.body.toString())).toEqual([JSON.stringify(value), '[1,"two"]', '"text"', 'null', '0']);
    for (const x of s.seen) expect(x.headers.get('Content-Type')).toBe('application/json');
    expect(s.seen[0]!.headers.get('Content-Length')).toBe(String(Buffer.byteLength(JSON.stringify(value))));
    // The response side: res.json<T>() parses a received body.
    const echo = await startServer((req) => new Response(200, req.body as Uint8Array));
    const got = (await HTTP.post(`${echo.origin}/`, { json: value })).json<typeof value>();
    expect(got.nested.ok).toBe(true);
  });

  it('json keeps a Content-Type the caller set', async () => {
    const s = await recorder();
    await HTTP.post(`${s.origin}/j`, { json: { a: 1 }, headers: { 'Content-Type': 'application/merge-patch+json' } });
    expect(s.seen[0]!.headers.get('Content-Type')).toBe('application/merge-patch+json');
    expect(s.seen[0]!.body.toString()).toBe('{"a":1}');
  });

  it('json with body, json in open(), and a value with no JSON form are ArgumentErrors; nothing is sent', async () => {
    const s = await recorder();
    const both = await rejection(HTTP.post(`${s.origin}/j`, { json: { a: 1 }, body: 'x' }));
    expect(both).toBeInstanceOf(ArgumentError);
    expect(both.message).toMatch(/json and body cannot be combined/);
    expect(await rejection(HTTP.post(`${s.origin}/j`, { 'Content-Type': 'text/plain' }, 'x', { json: 1 }))).toBeInstanceOf(ArgumentError);
    expect(await rejection(HTTP.open('POST', `${s.origin}/j`, () => undefined, { json: 1 }))).toBeInstanceOf(ArgumentError);
    const fn = await rejection(HTTP.post(`${s.origin}/j`, { json: () => 1 }));
    expect(fn).toBeInstanceOf(ArgumentError);
    expect(fn.message).toMatch(/function has no JSON form/);
    const big = await rejection(HTTP.post(`${s.origin}/j`, { json: { n: 1n } }));
    expect(big).toBeInstanceOf(ArgumentError);
    expect(big.message).toMatch(/BigInt/);
    expect(s.seen).toHaveLength(0);
  });

  it('URLSearchParams is sent form-urlencoded; a caller Content-Type is kept', async () => {
    const s = await recorder();
    await HTTP.post(`${s.origin}/usp`, {
      body: new URLSearchParams([
        ['k', 'v 1'],
        ['k', 'v2'],
      ]),
    });
    await HTTP.post(`${s.origin}/usp2`, { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' }, { a: '1' });
    expect(s.seen[0]!.headers.get('Content-Type')).toBe('application/x-www-form-urlencoded');
    expect([...new URLSearchParams(s.seen[0]!.body.toString()).entries()]).toEqual([
      ['k', 'v 1'],
      ['k', 'v2'],
    ]);
    expect(s.seen[1]!.headers.getAll('Content-Type')).toEqual(['application/x-www-form-urlencoded; charset=utf-8']);
    expect(s.seen[1]!.body.toString()).toBe('a=1');
  });

  it('QUERY with an object body is form-urlencoded too', async () => {
    const s = await recorder();
    await HTTP.query(`${s.origin}/search`, { body: { q: 'cats & dogs', limit: 10 } });
    await HTTP.query(`${s.origin}/search2`, null, new URLSearchParams({ q: 'x' }));
    expect(s.seen[0]!.method).toBe('QUERY');
    expect(s.seen[0]!.headers.get('Content-Type')).toBe('application/x-www-form-urlencoded');
    expect([...new URLSearchParams(s.seen[0]!.body.toString()).entries()]).toEqual([
      ['q', 'cats & dogs'],
      ['limit', '10'],
    ]);
    expect(s.seen[1]!.headers.get('Content-Type')).toBe('application/x-www-form-urlencoded');
    expect(s.seen[1]!.body.toString()).toBe('q=x');
  });

  it('a body stream that fails rejects the call with its error and closes the connection', async () => {
    const raw = await rawServer(() => undefined);
    async function* failing(): AsyncGenerator<string> {
      yield 'first part;';
      throw new Error('disk on fire');
    }
    const c = newClient();
    const err = await rejection(c.post(`${raw.origin}/up`, { body: failing() }));
    expect(err.message).toBe('disk on fire');
    raw.sockets[0]!.resume();
    await raw.closedAt(1);
    expect(c.transport.connectionCount()).toBe(0);
  });

  it('framing headers that contradict the body are an ArgumentError before any byte is sent', async () => {
    const bytes: Buffer[] = [];
    const raw = await rawServer((sock) => sock.on('data', (d: Buffer) => bytes.push(d)));
    const c = newClient();
    async function* parts(): AsyncGenerator<string> {
      yield 'abc';
    }
    const cases: [string, Promise<unknown>, RegExp][] = [
      // The server would read 'he' as the body and 'llo' as the start of the next request.
      ['a Content-Length shorter than the body', c.post(`${raw.origin}/a`, { body: 'hello', headers: { 'Content-Length': '3' } }), /Content-Length header 3 does not match the body length 5/],
      [
        'Content-Length with Transfer-Encoding',
        c.post(`${raw.origin}/b`, { body: 'hello', headers: { 'Content-Length': '5', 'Transfer-Encoding': 'chunked' } }),
        /both Content-Length and Transfer-Encoding/,
      ],
      ['a Transfer-Encoding not ending in chunked', c.post(`${raw.origin}/c`, { body: parts(), headers: { 'Transfer-Encoding': 'gzip' } }), /must end with chunked/],
      ['a Content-Length that is not a number', c.post(`${raw.origin}/d`, { body: parts(), headers: { 'Content-Length': 'abc' } }), /invalid Content-Length header "abc"/],
    ];
    for (const [name, call, message] of cases) {
      const err = await rejection(call);
      expect(err, name).toBeInstanceOf(ArgumentError);
      expect(err.message, name).toMatch(message);
    }
    for (let i = 1; i <= raw.connections; i++) await raw.closedAt(i);
    expect(Buffer.concat(bytes).length).toBe(0);
  });

  it('framing headers that agree with the body are sent as they are, once', async () => {
    const got: RawRequest[] = [];
    const raw = await rawServer((sock) => readRequests(sock, (r) => (got.push(r), sock.write(okResponse()))));
    const c = newClient();
    async function* parts(): AsyncGenerator<string> {
      yield 'ab';
      yield 'c';
    }
    await c.post(`${raw.origin}/a`, { body: 'hello', headers: { 'content-length': '5' } });
    await c.post(`${raw.origin}/b`, { body: parts(), headers: { 'Content-Length': '3' } });
    await c.post(`${raw.origin}/c`, { body: parts(), headers: { 'Transfer-Encoding': 'chunked' } });
    expect(got.map((r) => [r.head.match(/content-length/gi)?.length ?? 0, r.head.match(/transfer-encoding/gi)?.length ?? 0, r.body.toString()])).toEqual([
      [1, 0, 'hello'],
      [1, 0, 'abc'],
      [0, 1, 'abc'],
    ]);
  });

  it('an empty streamed body on a GET sends no Content-Length (RFC 9110 §8.6); on a POST it sends Content-Length: 0', async () => {
    const got: RawRequest[] = [];
    const raw = await rawServer((sock) => readRequests(sock, (r) => (got.push(r), sock.write(okResponse()))));
    const c = newClient();
    await c.get(`${raw.origin}/g`, { body: new BytesBody(new Uint8Array(0)) });
    await c.post(`${raw.origin}/p`, { body: new BytesBody(new Uint8Array(0)) });
    expect(got[0]!.headers.has('content-length')).toBe(false);
    expect(got[0]!.headers.has('transfer-encoding')).toBe(false);
    expect(got[1]!.headers.get('content-length')).toBe('0');
  });

  it('an unsupported body type is an ArgumentError', async () => {
    const s = await recorder();
    expect(await rejection(HTTP.post(`${s.origin}/bad`, { body: new Date() as unknown as string }))).toBeInstanceOf(ArgumentError);
    expect(await rejection(HTTP.post(`${s.origin}/bad`, { body: 42 as unknown as string }))).toBeInstanceOf(ArgumentError);
  });
});

describe('query', () => {
  it('is appended to an existing query string; repeated keys are kept', async () => {
    const s = await recorder();
    await HTTP.get(`${s.origin}/p?a=1&a=2`, {
      query: [
        ['a', '3'],
        ['b', 'x y'],
        ['b', 'z'],
      ],
    });
    expect(params(s.seen[0]!.target)).toEqual([
      ['a', '1'],
      ['a', '2'],
      ['a', '3'],
      ['b', 'x y'],
      ['b', 'z'],
    ]);
  });

  it('accepts an object (arrays repeat the key) and URLSearchParams; the fragment is not sent', async () => {
    const s = await recorder();
    await HTTP.get(`${s.origin}/o?keep=1#frag`, { query: { t: ['1', '2'], u: 'ü&=' } });
    await HTTP.get(`${s.origin}/u`, { query: new URLSearchParams('x=1&x=2') });
    expect(s.seen[0]!.target.startsWith('/o?')).toBe(true);
    expect(s.seen[0]!.target).not.toContain('frag');
    expect(params(s.seen[0]!.target)).toEqual([
      ['keep', '1'],
      ['t', '1'],
      ['t', '2'],
      ['u', 'ü&='],
    ]);
    expect(params(s.seen[1]!.target)).toEqual([
      ['x', '1'],
      ['x', '2'],
    ]);
  });

  it('works for QUERY with a body at the same time', async () => {
    const s = await recorder();
    await HTTP.query(`${s.origin}/q?a=1`, { query: { b: '2' }, body: { c: '3' } });
    expect(params(s.seen[0]!.target)).toEqual([
      ['a', '1'],
      ['b', '2'],
    ]);
    expect(s.seen[0]!.body.toString()).toBe('c=3');
  });
});

describe('responseStream', () => {
  it('writes a 4 MiB body into a Writable, bytes intact, and leaves body null', async () => {
    const data = randomBytes(4 * 1024 * 1024);
    const s = await startServer(() => new Response(200, data));
    const chunks: Buffer[] = [];
    let writes = 0;
    const sink = new Writable({
      highWaterMark: 65536,
      write(chunk: Buffer, _enc, cb) {
        writes++;
        chunks.push(Buffer.from(chunk));
        // Asynchronous consumer: exercises backpressure.
        setImmediate(cb);
      },
    });
    const res = await HTTP.get(`${s.origin}/big`, { responseStream: sink });
    expect(res.status).toBe(200);
    expect(res.body).toBeNull();
    // As stream.pipeline does: the sink is ended, and the call resolved after its 'finish'.
    expect(sink.writableFinished).toBe(true);
    const got = Buffer.concat(chunks);
    expect(got.length).toBe(data.length);
    expect(sha(got)).toBe(sha(data));
    expect(writes).toBeGreaterThan(1);
  });

  it('a chunked response is streamed too; an empty body writes nothing', async () => {
    const s = await startServer((req) => (req.target === '/empty' ? new Response(204) : new Response(200, new BytesBody(Buffer.alloc(300_000, 7)))));
    const parts: Buffer[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _e, cb) {
        parts.push(Buffer.from(chunk));
        cb();
      },
    });
    const res = await HTTP.get(`${s.origin}/chunked`, { responseStream: { stream: sink, end: false } });
    expect(res.body).toBeNull();
    expect(Buffer.concat(parts).equals(Buffer.alloc(300_000, 7))).toBe(true);
    parts.length = 0;
    const r2 = await HTTP.get(`${s.origin}/empty`, { responseStream: sink });
    expect(r2.status).toBe(204);
    expect(r2.body).toBeNull();
    expect(parts).toHaveLength(0);
    expect(sink.writableFinished).toBe(true);
  });

  it('into a file: the file is complete and closed when the call resolves', async () => {
    const data = randomBytes(1024 * 1024 + 5);
    const s = await startServer(() => new Response(200, data));
    const file = await tempFile(new Uint8Array(0));
    const sink = createWriteStream(file);
    await HTTP.get(`${s.origin}/file`, { responseStream: sink });
    expect(sink.closed).toBe(true);
    expect(sha(await readFile(file))).toBe(sha(data));
  });

  it('process.stdout is never ended (the script prints after the call)', async () => {
    const script = `
      import * as HTTP from './index.ts';
      const s = await HTTP.serve(() => new HTTP.Response(200, 'body\\n'), { host: '127.0.0.1', port: 0 });
      await HTTP.get('http://127.0.0.1:' + s.port + '/', { responseStream: process.stdout });
      console.log('after');
      await s.close();`;
    const root = fileURLToPath(new URL('../../..', import.meta.url));
    const child = trackChild(spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] }));
    let out = '';
    let err = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(err).toBe('');
    expect(out).toBe('body\nafter\n');
    expect(code).toBe(0);
  });

  it('end: false leaves the sink open across calls; the caller ends it', async () => {
    const s = await startServer((req) => new Response(200, req.target));
    const parts: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _e, cb) {
        parts.push(chunk.toString());
        cb();
      },
    });
    await HTTP.get(`${s.origin}/one`, { responseStream: { stream: sink, end: false } });
    await HTTP.get(`${s.origin}/two`, { responseStream: { stream: sink, end: false } });
    expect(sink.writableEnded).toBe(false);
    expect(parts.join('')).toBe('/one/two');
    sink.end();
  });

  it('a call that fails mid-body destroys the sink with the error (end: false leaves it alone)', async () => {
    const raw = await rawServer((sock) => {
      readRequests(sock, () => {
        // Promises 100 bytes, sends 5, and closes.
        sock.end('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nhello');
      });
    });
    const sink = new Writable({ write: (_c, _e, cb) => cb() });
    const err = await rejection(newClient().get(`${raw.origin}/cut`, { responseStream: sink }));
    expect(sink.destroyed).toBe(true);
    expect(sink.errored).toBe(err);
    const owned = new Writable({ write: (_c, _e, cb) => cb() });
    await rejection(newClient().get(`${raw.origin}/cut`, { responseStream: { stream: owned, end: false } }));
    expect(owned.destroyed).toBe(false);
    owned.end();
  });

  it('a call that fails before the response destroys the sink too', async () => {
    const raw = await rawServer((sock) => sock.destroy());
    const sink = new Writable({ write: (_c, _e, cb) => cb() });
    await rejection(newClient().get(`${raw.origin}/refused`, { responseStream: sink }));
    expect(sink.destroyed).toBe(true);
  });

  it('a sink that fails while the body is written rejects the call with its error (no hang, no unhandled error event)', async () => {
    const s = await startServer(() => new Response(200, new BytesBody(Buffer.alloc(1024 * 1024, 1))));
    // Fails after the write was taken (write() said true): the error comes while the call waits for more body.
    const sink = new Writable({
      highWaterMark: 8 * 1024 * 1024,
      write: (_c, _e, cb) => setImmediate(() => cb(new Error('disk full'))),
    });
    const err = await rejection(HTTP.get(`${s.origin}/big`, { responseStream: sink }));
    expect(err.message).toBe('disk full');
    // The connection was not left half-read in the pool: the server still answers.
    expect((await HTTP.get(`${s.origin}/again`)).status).toBe(200);
  });

  it('a buffered chunked response keeps its trailers on response.trailers', async () => {
    const raw = await rawServer((sock) => {
      readRequests(sock, () => {
        sock.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n5\r\nhello\r\n0\r\nX-Sum: 5\r\n\r\n');
      });
    });
    const c = newClient();
    for (let i = 0; i < 2; i++) {
      // The second call takes the pooled connection (the client's short path).
      const res = await c.get(`${raw.origin}/t`);
      expect(text(res)).toBe('hello');
      expect(res.trailers.get('X-Sum')).toBe('5');
    }
    const plain = await c.get(`${raw.origin}/t`, { statusException: false });
    expect(plain.hasTrailers).toBe(true);
  });

  it('a responseStream that is not a Writable is an ArgumentError', async () => {
    const s = await recorder();
    expect(await rejection(HTTP.get(`${s.origin}/`, { responseStream: {} as Writable }))).toBeInstanceOf(ArgumentError);
    const sink = new Writable({ write: (_c, _e, cb) => cb() });
    expect(await rejection(HTTP.get(`${s.origin}/`, { responseStream: { stream: sink, end: 'no' as unknown as boolean } }))).toBeInstanceOf(ArgumentError);
    expect(await rejection(HTTP.get(`${s.origin}/`, { responseStream: { stream: sink, close: false } as never }))).toBeInstanceOf(ArgumentError);
  });
});

describe('statusException', () => {
  it('by default a status >= 300 that is not a redirect throws StatusError with the full response, body included', async () => {
    const s = await startServer((req) => new Response(Number(req.target.slice(1)), { 'X-Why': 'because' }, `body of ${req.target}`));
    // A plain client: no retry plugin re-sending the 5xx ones.
    const c = newClient();
    expect(await rejection(HTTP.get(`${s.origin}/404`))).toBeInstanceOf(StatusError);
    for (const status of [304, 400, 404, 418, 500, 503]) {
      const err = await rejection(c.get(`${s.origin}/${status}`));
      expect(err).toBeInstanceOf(StatusError);
      const e = err as StatusError;
      expect(e.status).toBe(status);
      expect(e.response.status).toBe(status);
      if (status !== 304) {
        expect(e.response.headers.get('X-Why')).toBe('because');
        expect(text(e.response)).toBe(`body of /${status}`);
      }
      expect(e.response.url).toBe(`${s.origin}/${status}`);
    }
    // The body was read: the connection stayed reusable across all of them.
    expect(c.transport.connectionCount()).toBe(1);
    expect(s.connections).toBe(2);
  });

  it('a redirect status without a redirect plugin is returned, not thrown', async () => {
    const s = await startServer(() => new Response(302, { Location: '/elsewhere' }, 'moved'));
    const c = newClient(); // no kernel: no redirects plugin
    const res = await c.get(`${s.origin}/r`);
    expect(res.status).toBe(302);
    expect(text(res)).toBe('moved');
  });

  it('statusException: false returns the response', async () => {
    const s = await startServer(() => new Response(404, 'not here'));
    const res = await HTTP.get(`${s.origin}/x`, { statusException: false });
    expect(res.status).toBe(404);
    expect(text(res)).toBe('not here');
  });
});

describe('headers and basicauth', () => {
  it('headers as an object, pairs or a Headers are sent; repeated names kept', async () => {
    const s = await recorder();
    await HTTP.get(`${s.origin}/1`, { headers: { 'X-One': '1', 'x-two': 'two' } });
    await HTTP.get(`${s.origin}/2`, {
      headers: [
        ['X-Rep', 'a'],
        ['X-Rep', 'b'],
      ],
    });
    await HTTP.get(`${s.origin}/3`, { headers: new Headers([['X-H', 'h']]) });
    expect(s.seen[0]!.headers.get('X-One')).toBe('1');
    expect(s.seen[0]!.headers.get('X-Two')).toBe('two');
    expect(s.seen[1]!.headers.getAll('X-Rep').join(',').replace(/\s/g, '')).toBe('a,b');
    expect(s.seen[2]!.headers.get('X-H')).toBe('h');
  });

  it('basicauth sets Authorization: Basic base64(user:password)', async () => {
    const s = await recorder();
    await HTTP.get(`${s.origin}/a`, { basicauth: ['alice', 'pa:ss wörd'] });
    expect(s.seen[0]!.headers.get('Authorization')).toBe(`Basic ${Buffer.from('alice:pa:ss wörd').toString('base64')}`);
  });

  it('user info in the URL becomes basic auth and is not sent in the target', async () => {
    const s = await recorder();
    await HTTP.get(`http://bob:s%40cret@127.0.0.1:${s.port}/u`);
    expect(s.seen[0]!.headers.get('Authorization')).toBe(`Basic ${Buffer.from('bob:s@cret').toString('base64')}`);
    expect(s.seen[0]!.target).toBe('/u');
    expect(s.seen[0]!.headers.get('Host')).toBe(`127.0.0.1:${s.port}`);
  });
});

describe('Client defaults', () => {
  it('defaultHeaders are added unless the call sets them (any case)', async () => {
    const s = await recorder();
    const c = newClient({ defaultHeaders: { 'X-Default': 'd', 'X-Over': 'client', Accept: 'text/plain' } });
    await c.get(`${s.origin}/1`);
    await c.get(`${s.origin}/2`, { headers: { 'x-over': 'call' } });
    expect(s.seen[0]!.headers.get('X-Default')).toBe('d');
    expect(s.seen[0]!.headers.get('X-Over')).toBe('client');
    expect(s.seen[0]!.headers.get('Accept')).toBe('text/plain');
    expect(s.seen[1]!.headers.get('X-Default')).toBe('d');
    expect(s.seen[1]!.headers.getAll('X-Over')).toEqual(['call']);
  });

  it('defaultQuery is added; keys of the call override matching defaults', async () => {
    const s = await recorder();
    const c = newClient({ defaultQuery: { key: 'k0', lang: 'en' } });
    await c.get(`${s.origin}/1`);
    await c.get(`${s.origin}/2?x=1`, { query: { lang: 'fr' } });
    await c.get(`${s.origin}/3`, {
      query: [
        ['lang', 'de'],
        ['lang', 'it'],
      ],
    });
    expect(params(s.seen[0]!.target)).toEqual([
      ['key', 'k0'],
      ['lang', 'en'],
    ]);
    const p2 = params(s.seen[1]!.target);
    expect(p2).toContainEqual(['x', '1']);
    expect(p2).toContainEqual(['key', 'k0']);
    expect(p2).toContainEqual(['lang', 'fr']);
    expect(p2).not.toContainEqual(['lang', 'en']);
    const p3 = params(s.seen[2]!.target);
    expect(p3.filter((p) => p[0] === 'lang')).toEqual([
      ['lang', 'de'],
      ['lang', 'it'],
    ]);
  });

  it('defaultBasicauth applies only when the call passes neither basicauth nor Authorization', async () => {
    const s = await recorder();
    const c = newClient({ defaultBasicauth: ['def', 'pw'] });
    await c.get(`${s.origin}/1`);
    await c.get(`${s.origin}/2`, { basicauth: ['call', 'pw2'] });
    await c.get(`${s.origin}/3`, { headers: { authorization: 'Bearer tok' } });
    const auth = s.seen.map((x) => x.headers.getAll('Authorization'));
    expect(auth[0]).toEqual([`Basic ${Buffer.from('def:pw').toString('base64')}`]);
    expect(auth[1]).toEqual([`Basic ${Buffer.from('call:pw2').toString('base64')}`]);
    expect(auth[2]).toEqual(['Bearer tok']);
  });

  it('default call options apply unless the call passes its own (per-call options win)', async () => {
    const s = await startServer(() => new Response(500, 'boom'));
    const c = newClient({ statusException: false });
    const res = await c.get(`${s.origin}/`);
    expect(res.status).toBe(500);
    const err = await rejection(c.get(`${s.origin}/`, { statusException: true }));
    expect(err).toBeInstanceOf(StatusError);
    const strict = newClient({ statusException: true });
    expect((await strict.get(`${s.origin}/`, { statusException: false })).status).toBe(500);
  });

  it('Client rejects bad defaults with ArgumentError', () => {
    expect(() => new Client({ defaultBasicauth: ['x'] as unknown as [string, string] })).toThrow(ArgumentError);
    expect(() => new Client({ requestTimeout: -5 })).toThrow(ArgumentError);
    expect(() => new Client({ transport: {} as Transport })).toThrow(ArgumentError);
  });
});
