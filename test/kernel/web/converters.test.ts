/**
 * `fromWebRequest` and `toWebResponse` over real exchanges on loopback: a web Request sent with
 * `client.dispatch`, a streamed switchyard response read as a web Response, both bodies
 * streaming (each side sees the first bytes before the other has sent the rest).
 */
import { describe, expect, it } from 'vitest';
import { ArgumentError, BytesBody, Request as SyRequest, Response as SyResponse, type Stream } from '../../../kernel/index.js';
import { fromWebRequest, toWebResponse } from '../../../kernel/web/index.js';
import { deferred, newClient, startServer, startStreamServer } from '../../helpers/client.js';

describe('fromWebRequest', () => {
  it('carries the method, URL (no fragment), fields and a fixed body', async () => {
    const web = new Request('http://example.test:8080/p/a?q=1#frag', {
      method: 'PUT',
      headers: [
        ['X-A', '1'],
        ['x-a', '2'],
        ['Content-Length', '5'],
      ],
      body: 'hello',
    });
    const req = fromWebRequest(web);
    expect(req).toBeInstanceOf(SyRequest);
    expect(req.method).toBe('PUT');
    expect(req.url).toBe('http://example.test:8080/p/a?q=1');
    expect(req.target).toBe('/p/a?q=1');
    expect(req.host).toBe('example.test:8080');
    expect(req.headers.get('x-a')).toBe('1, 2');
    expect(req.contentLength).toBe(5);
  });

  it('has no body for a request without one, and refuses a used body', async () => {
    expect(fromWebRequest(new Request('http://h.test/')).body).toBeNull();
    const used = new Request('http://h.test/', { method: 'POST', body: 'x' });
    await used.text();
    expect(() => fromWebRequest(used)).toThrow(ArgumentError);
    expect(() => fromWebRequest({ url: 'http://h.test/' } as never)).toThrow(ArgumentError);
  });

  it('streams the body: the server reads the first chunk before the second is made', async () => {
    const first = deferred<string>();
    const s = await startStreamServer(async (stream: Stream) => {
      const req = await stream.startRead();
      const chunk = await stream.read();
      first.resolve(Buffer.from(chunk!).toString());
      const rest = Buffer.from(await stream.readAll()).toString();
      await stream.write(`${req.method} ${req.headers.get('transfer-encoding')} ${rest}`);
      await stream.closeWrite();
    });
    let push!: ReadableStreamDefaultController<Uint8Array>;
    const body = new ReadableStream<Uint8Array>({ start: (c) => void (push = c) });
    const web = new Request(`${s.origin}/up`, { method: 'POST', body, duplex: 'half' } as RequestInit);
    push.enqueue(new TextEncoder().encode('one'));
    const client = newClient();
    const res = client.dispatch(fromWebRequest(web));
    expect(await first.promise).toBe('one');
    push.enqueue(new TextEncoder().encode('two'));
    push.close();
    const r = await res;
    expect(Buffer.from(await toWebResponse(r).arrayBuffer()).toString()).toBe('POST chunked two');
  });
});

describe('toWebResponse', () => {
  it('carries status, reason, fields (Set-Cookie apart) and url; drops trailers', async () => {
    const s = await startServer(
      () =>
        new SyResponse(
          201,
          [
            ['Set-Cookie', 'a=1'],
            ['Set-Cookie', 'b=2'],
            ['X-B', 'v'],
          ],
          new BytesBody('body'),
          { reason: 'Made', trailers: [['X-T', '1']] },
        ),
    );
    const r = await newClient().dispatch(Object.assign(new SyRequest('GET', '/x'), { url: `${s.origin}/x` }));
    const web = toWebResponse(r);
    expect(web).toBeInstanceOf(Response);
    expect(web.status).toBe(201);
    expect(web.statusText).toBe('Made');
    expect(web.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(web.headers.get('x-b')).toBe('v');
    expect(web.headers.has('x-t')).toBe(false);
    expect(web.url).toBe(`${s.origin}/x`);
    expect(web.redirected).toBe(false);
    expect(await web.text()).toBe('body');
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
    const r = await newClient().dispatch(Object.assign(new SyRequest('GET', '/'), { url: `${s.origin}/` }));
    const reader = toWebResponse(r).body!.getReader();
    expect(Buffer.from((await reader.read()).value!).toString()).toBe('first');
    go.resolve();
    let rest = '';
    for (let c = await reader.read(); !c.done; c = await reader.read()) rest += Buffer.from(c.value).toString();
    expect(rest).toBe('second');
  });

  it('cancelling the web body closes the switchyard body (and its connection)', async () => {
    const s = await startStreamServer(async (stream: Stream) => {
      await stream.startRead();
      await stream.write('x'.repeat(1000));
      await new Promise(() => undefined);
    });
    const r = await newClient().dispatch(Object.assign(new SyRequest('GET', '/'), { url: `${s.origin}/` }));
    const body = r.body as BytesBody;
    const web = toWebResponse(r);
    await web.body!.cancel();
    expect(body.closed).toBe(true);
    await s.closedAt(1);
  });

  it('gives null bodies for 204 and 304, and refuses a status the web type cannot hold', async () => {
    expect(toWebResponse(new SyResponse(204)).body).toBeNull();
    expect(toWebResponse(new SyResponse(304, new BytesBody(''))).body).toBeNull();
    expect(() => toWebResponse(new SyResponse(700))).toThrow(ArgumentError);
    expect(() => toWebResponse(new SyResponse(103))).toThrow(/200 to 599/);
  });

  it('keeps url, redirected and type on a clone', async () => {
    const r = new SyResponse(200, 'x');
    r.url = 'http://h.test/a';
    const web = toWebResponse(r);
    const copy = web.clone();
    expect([copy.url, copy.type, await copy.text(), await web.text()]).toEqual(['http://h.test/a', 'basic', 'x', 'x']);
  });
});
