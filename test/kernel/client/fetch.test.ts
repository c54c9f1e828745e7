/**
 * `fetch` on the kernel (`HTTP.fetch`, `client.fetch`, `kernel.fetch`) against switchyard
 * servers on loopback: the WHATWG signature, bodies both ways streaming, redirect modes, aborts,
 * errors as Node's `fetch` gives them, switchyard's options in `init.switchyard`, and the
 * plugins (cookies, decompression, retries, HTTP/2 by ALPN).
 */
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import * as HTTP from '../../../index.js';
import { ArgumentError, ConnectError, createKernel, TimeoutError, type Stream } from '../../../kernel/index.js';
import { CookieJar, presets } from '../../../plugins/index.js';
import { closeAfter, closeKernelAfter } from '../../helpers/cleanup.js';
import { closedPort, deferred, newClient, rawServer, readRequests, startServer, startStreamServer } from '../../helpers/client.js';
import { cert, h2Kernel, startServer as startH2Server } from '../../helpers/h2.js';

/** A server answering with what it received: method, target, the named fields and the body. */
async function echo() {
  return startServer((req) => {
    const h = req.headers;
    return HTTP.Response.json({
      method: req.method,
      target: req.target,
      type: h.get('Content-Type') ?? null,
      length: h.get('Content-Length') ?? null,
      te: h.get('Transfer-Encoding') ?? null,
      x: h.get('X-A') ?? null,
      ua: h.get('User-Agent') ?? null,
      body: Buffer.from(req.body as Uint8Array).toString('latin1'),
    });
  });
}

type Echoed = { method: string; target: string; type: string | null; length: string | null; te: string | null; x: string | null; ua: string | null; body: string };

async function echoed(p: Promise<Response>): Promise<Echoed> {
  return (await (await p).json()) as Echoed;
}

describe('fetch: the response', () => {
  it('resolves to a global Response with status, statusText, headers, url, type and redirected', async () => {
    const s = await startServer(
      () =>
        new HTTP.Response(
          201,
          [
            ['X-B', '1'],
            ['x-b', '2'],
            ['Set-Cookie', 'a=1'],
            ['Set-Cookie', 'b=2'],
          ],
          'made',
          { reason: 'Created Here' },
        ),
    );
    const res = await HTTP.fetch(`${s.origin}/a/b?c=d#frag`);
    expect(res).toBeInstanceOf(Response);
    expect(res.status).toBe(201);
    expect(res.ok).toBe(true);
    expect(res.statusText).toBe('Created Here');
    expect(res.headers).toBeInstanceOf(Headers);
    expect(res.headers.get('x-b')).toMatch(/^1, ?2$/);
    expect(res.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(res.url).toBe(`${s.origin}/a/b?c=d`);
    expect(res.type).toBe('basic');
    expect(res.redirected).toBe(false);
    expect(res.bodyUsed).toBe(false);
    expect(await res.text()).toBe('made');
    expect(res.bodyUsed).toBe(true);
  });

  it('resolves on any status (no status exception) and has no body for HEAD, 204 and 304', async () => {
    const s = await startServer((req) => (req.target === '/404' ? new HTTP.Response(404, 'missing') : req.target === '/204' ? new HTTP.Response(204) : new HTTP.Response(304)));
    const missing = await HTTP.fetch(`${s.origin}/404`);
    expect([missing.status, missing.ok, await missing.text()]).toEqual([404, false, 'missing']);
    expect((await HTTP.fetch(`${s.origin}/204`)).body).toBeNull();
    expect((await HTTP.fetch(`${s.origin}/304`)).body).toBeNull();
    const head = await HTTP.fetch(`${s.origin}/404`, { method: 'HEAD' });
    expect([head.status, head.body]).toEqual([404, null]);
  });

  it('streams the body: the first chunk is read before the server sends the rest', async () => {
    const go = deferred();
    const s = await startStreamServer(async (stream: Stream) => {
      await stream.startRead();
      await stream.write('first');
      await go.promise;
      await stream.write('second');
      await stream.closeWrite();
    });
    const res = await HTTP.fetch(s.origin);
    const reader = res.body!.getReader();
    expect(Buffer.from((await reader.read()).value!).toString()).toBe('first');
    go.resolve();
    let rest = '';
    for (let c = await reader.read(); !c.done; c = await reader.read()) rest += Buffer.from(c.value).toString();
    expect(rest).toBe('second');
  });

  it('reuses the connection once a body is read to its end', async () => {
    const s = await startServer(() => new HTTP.Response(200, 'x'.repeat(50000)));
    const client = newClient();
    for (let i = 0; i < 3; i++) expect((await (await client.fetch(s.origin)).arrayBuffer()).byteLength).toBe(50000);
    expect(s.connections).toBe(1);
  });

  it('cancelling the body closes its connection', async () => {
    const s = await startStreamServer(async (stream: Stream) => {
      await stream.startRead();
      await stream.write('x'.repeat(1000));
      await new Promise(() => undefined);
    });
    const res = await newClient().fetch(s.origin);
    await res.body!.cancel();
    await s.closedAt(1);
  });
});

describe('fetch: the request', () => {
  it('takes a URL string, a URL object, or a global Request (init over it)', async () => {
    const s = await echo();
    expect((await echoed(HTTP.fetch(`${s.origin}/s`))).target).toBe('/s');
    expect((await echoed(HTTP.fetch(new URL(`${s.origin}/u?q=1`)))).target).toBe('/u?q=1');
    const req = new Request(`${s.origin}/r`, { method: 'PUT', headers: { 'X-A': 'req' }, body: 'from request' });
    expect(await echoed(HTTP.fetch(req))).toMatchObject({ method: 'PUT', target: '/r', x: 'req', body: 'from request', type: 'text/plain;charset=UTF-8' });
    const again = new Request(`${s.origin}/r2`, { method: 'POST', headers: { 'X-A': 'req' }, body: 'x' });
    expect(await echoed(HTTP.fetch(again, { method: 'PATCH', headers: { 'X-A': 'init' }, body: 'init body' }))).toMatchObject({ method: 'PATCH', x: 'init', body: 'init body' });
  });

  it('normalizes methods as the standard does and refuses bad ones with TypeError', async () => {
    const s = await echo();
    expect((await echoed(HTTP.fetch(s.origin, { method: 'post', body: '' }))).method).toBe('POST');
    expect((await echoed(HTTP.fetch(s.origin, { method: 'delete' }))).method).toBe('DELETE');
    expect((await echoed(HTTP.fetch(s.origin, { method: 'patch', body: 'p' }))).method).toBe('patch');
    for (const m of ['CONNECT', 'trace', 'TRACK', 'bad method', '']) await expect(HTTP.fetch(s.origin, { method: m })).rejects.toThrow(TypeError);
    await expect(HTTP.fetch(s.origin, { method: 'GET', body: 'x' })).rejects.toThrow(TypeError);
    await expect(HTTP.fetch(s.origin, { method: 'HEAD', body: 'x' })).rejects.toThrow(TypeError);
  });

  it('refuses a bad URL, credentials in the URL, and a scheme it does not speak, with TypeError', async () => {
    await expect(HTTP.fetch('not a url')).rejects.toThrow(TypeError);
    await expect(HTTP.fetch('http://user:pw@127.0.0.1/')).rejects.toThrow(/credentials/);
    const ftp = await HTTP.fetch('ftp://127.0.0.1/').catch((e: unknown) => e as TypeError);
    expect(ftp).toBeInstanceOf(TypeError);
    expect((ftp as TypeError).message).toBe('fetch failed');
    expect((ftp as TypeError).cause).toBeInstanceOf(ArgumentError);
  });

  it('takes headers as a record, pairs or a Headers, combined as the web type combines them', async () => {
    const s = await echo();
    expect((await echoed(HTTP.fetch(s.origin, { headers: { 'x-a': ' padded ' } }))).x).toBe('padded');
    expect(
      (
        await echoed(
          HTTP.fetch(s.origin, {
            headers: [
              ['X-A', '1'],
              ['x-a', '2'],
            ],
          }),
        )
      ).x,
    ).toBe('1, 2');
    expect((await echoed(HTTP.fetch(s.origin, { headers: new Headers({ 'X-A': 'h' }) }))).x).toBe('h');
    await expect(HTTP.fetch(s.origin, { headers: { 'bad name': 'x' } })).rejects.toThrow(TypeError);
    await expect(HTTP.fetch(s.origin, { headers: { 'x-a': 'a\r\nb' } })).rejects.toThrow(TypeError);
    // Unless set, the client's User-Agent.
    expect((await echoed(HTTP.fetch(s.origin))).ua).toMatch(/^switchyard\//);
    expect((await echoed(HTTP.fetch(s.origin, { headers: { 'user-agent': 'me' } }))).ua).toBe('me');
  });

  it('sends each body type with its length and Content-Type', async () => {
    const s = await echo();
    const post = (body: RequestInit['body'], headers?: RequestInit['headers']): Promise<Echoed> => echoed(HTTP.fetch(s.origin, { method: 'POST', body, headers }));
    expect(await post('héllo')).toMatchObject({ type: 'text/plain;charset=UTF-8', length: '6', body: Buffer.from('héllo').toString('latin1') });
    expect(await post('x', { 'content-type': 'text/x' })).toMatchObject({ type: 'text/x' });
    expect(await post(new TextEncoder().encode('bytes'))).toMatchObject({ type: null, length: '5', body: 'bytes' });
    const view = new Uint8Array([0x61, 0x62, 0x63, 0x64]).subarray(1, 3);
    expect(await post(view)).toMatchObject({ length: '2', body: 'bc' });
    expect(await post(new Uint16Array([0x6261]).buffer)).toMatchObject({ length: '2', body: 'ab' });
    expect(await post(new URLSearchParams({ a: '1', b: 'x y' }))).toMatchObject({ type: 'application/x-www-form-urlencoded;charset=UTF-8', body: 'a=1&b=x+y' });
    expect(await post(new Blob(['bl', 'ob'], { type: 'app/blob' }))).toMatchObject({ type: 'app/blob', length: '4', te: null, body: 'blob' });
    const form = new FormData();
    form.set('field', 'value');
    const sent = await post(form);
    expect(sent.type).toMatch(/^multipart\/form-data; boundary=/);
    expect(sent.body).toContain('name="field"');
    expect(sent.body).toContain('value');
  });

  it('copies a byte body when called: changing the buffer afterwards changes nothing sent', async () => {
    const s = await echo();
    const bytes = new TextEncoder().encode('before');
    const p = HTTP.fetch(s.origin, { method: 'POST', body: bytes });
    bytes.set(new TextEncoder().encode('AFTER!'));
    expect((await echoed(p)).body).toBe('before');
  });

  it('streams a ReadableStream body (duplex: half required): the server reads the first chunk before the second exists', async () => {
    const first = deferred<string>();
    const s = await startStreamServer(async (stream: Stream) => {
      const req = await stream.startRead();
      first.resolve(Buffer.from((await stream.read())!).toString());
      const rest = Buffer.from(await stream.readAll()).toString();
      await stream.write(`${req.headers.get('transfer-encoding')} ${rest}`);
      await stream.closeWrite();
    });
    let push!: ReadableStreamDefaultController<Uint8Array>;
    const body = new ReadableStream<Uint8Array>({ start: (c) => void (push = c) });
    await expect(HTTP.fetch(s.origin, { method: 'POST', body: new ReadableStream() })).rejects.toThrow(/duplex/);
    const p = HTTP.fetch(s.origin, { method: 'POST', body, duplex: 'half' } as RequestInit);
    push.enqueue(new TextEncoder().encode('one'));
    expect(await first.promise).toBe('one');
    push.enqueue(new TextEncoder().encode('two'));
    push.close();
    expect(await (await p).text()).toBe('chunked two');
  });

  it('refuses a Request whose body was used', async () => {
    const s = await echo();
    const used = new Request(s.origin, { method: 'POST', body: 'x' });
    await used.text();
    await expect(HTTP.fetch(used)).rejects.toThrow(TypeError);
  });
});

/** A server whose /r/<status> redirects to /to with that status; /to answers with the method and body. */
async function redirecting() {
  return startServer((req) => {
    const m = /^\/r\/(\d+)$/.exec(req.target);
    if (m !== null) return new HTTP.Response(Number(m[1]), { Location: '/to' }, 'hop');
    if (req.target === '/loop') return new HTTP.Response(302, { Location: '/loop' }, '');
    return new HTTP.Response(200, `${req.method} ${Buffer.from(req.body as Uint8Array).toString()}`);
  });
}

describe('fetch: redirect modes', () => {
  it('follow (default): the final response, redirected, url the last one; 303 and POST 301/302 become GET', async () => {
    const s = await redirecting();
    const res = await HTTP.fetch(`${s.origin}/r/302`);
    expect([res.status, res.redirected, res.url, await res.text()]).toEqual([200, true, `${s.origin}/to`, 'GET ']);
    for (const [status, method, want] of [
      [301, 'POST', 'GET '],
      [302, 'POST', 'GET '],
      [303, 'POST', 'GET '],
      [303, 'PUT', 'GET '],
      [307, 'POST', 'POST b'],
      [308, 'PUT', 'PUT b'],
    ] as const) {
      expect(await (await HTTP.fetch(`${s.origin}/r/${status}`, { method, body: 'b' })).text()).toBe(want);
    }
  });

  it('manual: the 3xx as it is, its Location readable', async () => {
    const s = await redirecting();
    const res = await HTTP.fetch(`${s.origin}/r/301`, { redirect: 'manual' });
    expect([res.status, res.redirected, res.url, res.headers.get('location'), await res.text()]).toEqual([301, false, `${s.origin}/r/301`, '/to', 'hop']);
  });

  it('error: a redirect rejects with TypeError, and the connection is not left busy', async () => {
    const s = await redirecting();
    const client = newClient();
    const err = await client.fetch(`${s.origin}/r/307`, { redirect: 'error' }).catch((e: unknown) => e as TypeError);
    expect(err).toBeInstanceOf(TypeError);
    expect((err as TypeError).message).toBe('fetch failed');
    expect(((err as TypeError).cause as Error).message).toMatch(/redirect/);
    expect((await (await client.fetch(`${s.origin}/to`, { redirect: 'error' })).text()).startsWith('GET')).toBe(true);
  });

  it('a redirect mode from a given Request applies', async () => {
    const s = await redirecting();
    const res = await HTTP.fetch(new Request(`${s.origin}/r/302`, { redirect: 'manual' }));
    expect(res.status).toBe(302);
    await expect(HTTP.fetch(new Request(`${s.origin}/r/302`, { redirect: 'error' }))).rejects.toThrow('fetch failed');
  });

  it('too many redirects rejects with TypeError whose cause is the redirects error', async () => {
    const s = await redirecting();
    const err = await HTTP.fetch(`${s.origin}/loop`).catch((e: unknown) => e as TypeError);
    expect(err).toBeInstanceOf(TypeError);
    expect((err as TypeError).cause).toBeInstanceOf(HTTP.TooManyRedirectsError);
  });
});

describe('fetch: abort', () => {
  it('an aborted signal rejects with its reason (an AbortError DOMException by default) and sends nothing', async () => {
    const s = await echo();
    const ac = new AbortController();
    ac.abort();
    const err = await HTTP.fetch(s.origin, { signal: ac.signal }).catch((e: unknown) => e as DOMException);
    expect(err).toBeInstanceOf(DOMException);
    expect((err as DOMException).name).toBe('AbortError');
    expect(s.connections).toBe(0);
    const why = new Error('mine');
    await expect(HTTP.fetch(s.origin, { signal: AbortSignal.abort(why) })).rejects.toBe(why);
  });

  it('an abort while waiting for the head rejects with the reason and closes the connection', async () => {
    const arrived = deferred();
    const s = await startStreamServer(async (stream: Stream) => {
      await stream.startRead();
      arrived.resolve();
      await new Promise(() => undefined);
    });
    const ac = new AbortController();
    const p = newClient().fetch(s.origin, { signal: ac.signal });
    await arrived.promise;
    const why = new Error('stop');
    ac.abort(why);
    await expect(p).rejects.toBe(why);
    await s.closedAt(1);
  });

  it('an abort while the body is read errors the body with the reason', async () => {
    const s = await startStreamServer(async (stream: Stream) => {
      await stream.startRead();
      await stream.write('part');
      await new Promise(() => undefined);
    });
    const ac = new AbortController();
    const res = await newClient().fetch(s.origin, { signal: ac.signal });
    const reader = res.body!.getReader();
    await reader.read();
    const pending = reader.read();
    ac.abort();
    const err = await pending.catch((e: unknown) => e as DOMException);
    expect((err as DOMException).name).toBe('AbortError');
    await s.closedAt(1);
  });

  it("a given Request's signal aborts the fetch", async () => {
    const s = await echo();
    const ac = new AbortController();
    ac.abort(new Error('from request'));
    await expect(HTTP.fetch(new Request(s.origin, { signal: ac.signal }))).rejects.toThrow('from request');
  });
});

describe('fetch: failures', () => {
  it('a network failure rejects with TypeError("fetch failed") whose cause is the switchyard error', async () => {
    const port = await closedPort();
    const err = await HTTP.fetch(`http://127.0.0.1:${port}/`).catch((e: unknown) => e as TypeError);
    expect(err).toBeInstanceOf(TypeError);
    expect((err as TypeError).message).toBe('fetch failed');
    expect((err as TypeError).cause).toBeInstanceOf(ConnectError);
  });

  it('a connection cut in the body errors the body with TypeError("terminated")', async () => {
    const raw = await rawServer((sock) => readRequests(sock, () => sock.end('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npart')));
    const res = await newClient().fetch(raw.origin);
    const err = await res.text().catch((e: unknown) => e as TypeError);
    expect(err).toBeInstanceOf(TypeError);
    expect((err as TypeError).message).toBe('terminated');
    expect((err as TypeError).cause).toBeInstanceOf(Error);
  });
});

describe('fetch: init.switchyard', () => {
  it('takes call options (a timeout fails as fetch failed, caused by TimeoutError)', async () => {
    const s = await startStreamServer(async (stream: Stream) => {
      await stream.startRead();
      await new Promise(() => undefined);
    });
    const err = await HTTP.fetch(s.origin, { switchyard: { responseHeaderTimeout: 50 } }).catch((e: unknown) => e as TypeError);
    expect(err).toBeInstanceOf(TypeError);
    expect((err as TypeError).cause).toBeInstanceOf(TimeoutError);
  });

  it('refuses unknown names, in init and in init.switchyard, with ArgumentError naming the nearest', async () => {
    const s = await echo();
    await expect(HTTP.fetch(s.origin, { redirects: 'manual' } as RequestInit)).rejects.toThrow(/unknown option "redirects" \(did you mean redirect\?\)/);
    await expect(HTTP.fetch(s.origin, { requestTimeout: 5 } as RequestInit)).rejects.toThrow(/init\.switchyard/);
    await expect(HTTP.fetch(s.origin, { switchyard: { requestTimeot: 5 } } as never)).rejects.toThrow(/did you mean requestTimeout/);
    const covered = await HTTP.fetch(s.origin, { switchyard: { headers: {} } } as never).catch((e: unknown) => e as ArgumentError);
    expect(covered).toBeInstanceOf(ArgumentError);
    expect((covered as ArgumentError).message).toMatch(/init\.headers/);
    expect(s.connections).toBe(0);
  });
});

describe('fetch: plugins and entry points', () => {
  it('cookies: a jar stores Set-Cookie and sends it on the next fetch', async () => {
    const s = await startServer((req) => (req.target === '/set' ? new HTTP.Response(200, { 'Set-Cookie': 'sid=42; Path=/' }, '') : new HTTP.Response(200, req.headers.get('Cookie') ?? 'none')));
    const client = closeAfter(new HTTP.Client({ cookiejar: new CookieJar() }));
    await (await client.fetch(`${s.origin}/set`)).arrayBuffer();
    expect(await (await client.fetch(`${s.origin}/get`)).text()).toBe('sid=42');
    const jar = new CookieJar();
    await (await HTTP.fetch(`${s.origin}/set`, { switchyard: { cookiejar: jar } })).arrayBuffer();
    expect(await (await HTTP.fetch(`${s.origin}/get`, { switchyard: { cookiejar: jar } })).text()).toBe('sid=42');
  });

  it('decompression: a gzip body is read decoded, as it streams', async () => {
    const s = await startServer((req) => new HTTP.Response(200, { 'Content-Encoding': 'gzip' }, gzipSync(`plain ${req.headers.get('Accept-Encoding')}`)));
    expect(await (await HTTP.fetch(s.origin)).text()).toMatch(/^plain .*gzip/);
  });

  it('retries: an idempotent fetch that meets a 503 is sent again', async () => {
    let n = 0;
    const s = await startServer(() => (++n === 1 ? new HTTP.Response(503, { 'Retry-After': '0' }, 'busy') : new HTTP.Response(200, `attempt ${n}`)));
    expect(await (await HTTP.fetch(s.origin)).text()).toBe('attempt 2');
  });

  it('HTTP/2 by ALPN on https, and h2c with httpVersion in init.switchyard', async () => {
    const tls = await startH2Server((req) => new HTTP.Response(200, `h${req.protoMajor}`), { secure: true });
    const client = closeAfter(new HTTP.Client({ kernel: await h2Kernel(), tlsConfig: { ca: cert.cert } }));
    const res = await client.fetch(`https://127.0.0.1:${tls.port}/`);
    expect([res.statusText, await res.text()]).toEqual(['', 'h2']);
    const plain = await startH2Server((req) => new HTTP.Response(200, `h${req.protoMajor}`));
    expect(await (await client.fetch(`http://127.0.0.1:${plain.port}/`, { switchyard: { httpVersion: 'h2' } })).text()).toBe('h2');
  });

  it("kernel.fetch runs the kernel's plugins on a client it keeps; a kernel without redirects cannot follow one", async () => {
    const s = await redirecting();
    const full = closeKernelAfter(createKernel().register(presets.defaults));
    expect((await full.fetch(`${s.origin}/r/302`)).redirected).toBe(true);
    const bare = closeKernelAfter(createKernel());
    const err = await bare.fetch(`${s.origin}/r/302`).catch((e: unknown) => e as TypeError);
    expect(err).toBeInstanceOf(TypeError);
    expect(((err as TypeError).cause as Error).message).toMatch(/no redirects plugin/);
    expect((await bare.fetch(`${s.origin}/r/302`, { redirect: 'manual' })).status).toBe(302);
  });
});
