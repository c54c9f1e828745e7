/**
 * toWebRequest: a client Request and a server Stream (body still on a loopback connection) as
 * the web's global Request; the absolute URL a server request gets.
 */
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { ArgumentError, BytesBody, ProtocolError, Request, type Stream } from '../../../kernel/index.js';
import { toWebRequest } from '../../../kernel/web/index.js';
import { webRequestUrl } from '../../../kernel/web/to-web-request.js';
import { destroyAfter } from '../../helpers/cleanup.js';
import { deferred, startStreamServer } from '../../helpers/server.js';

function serverRequest(target: string, headers: Record<string, string>, host: string | null = null): Request {
  const r = new Request('GET', target, headers);
  r.host = host;
  return r;
}

describe('webRequestUrl', () => {
  it('joins scheme, Host and a plain path without touching them', () => {
    expect(webRequestUrl(serverRequest('/a/b?x=1&y=%20', { Host: 'example.com:8080' }), false)).toBe('http://example.com:8080/a/b?x=1&y=%20');
    expect(webRequestUrl(serverRequest('/', { Host: 'example.com' }), true)).toBe('https://example.com/');
  });

  it('prefers the HTTP/2 authority, and says localhost for a request with neither', () => {
    expect(webRequestUrl(serverRequest('/x', { Host: 'a.example' }, 'b.example'), false)).toBe('http://b.example/x');
    expect(webRequestUrl(serverRequest('/x', {}), false)).toBe('http://localhost/x');
  });

  it('resolves dot segments, so a router sees the path the app will', () => {
    expect(webRequestUrl(serverRequest('/static/../admin', { Host: 'h' }), false)).toBe('http://h/admin');
    expect(webRequestUrl(serverRequest('/a/./b/%2e%2e/c', { Host: 'h' }), false)).toBe('http://h/a/c');
  });

  it('keeps a path starting with // on the request host', () => {
    expect(new URL(webRequestUrl(serverRequest('//evil.example/x', { Host: 'h' }), false)).host).toBe('h');
    expect(new URL(webRequestUrl(serverRequest('/\\evil.example/x', { Host: 'h' }), false)).host).toBe('h');
  });

  it('refuses a Host carrying user info, a path or a query (ProtocolError, answered 400)', () => {
    for (const host of ['user@h', 'h/x', 'h?x', 'h#x', 'h:99999', 'h:65536', '']) {
      expect(() => webRequestUrl(serverRequest('/', { Host: host }), false), host).toThrow(ProtocolError);
    }
    expect(webRequestUrl(serverRequest('/', { Host: 'EXAMPLE.com' }), false)).toBe('http://example.com/');
    expect(webRequestUrl(serverRequest('/', { Host: 'h:65535' }), false)).toBe('http://h:65535/');
    expect(webRequestUrl(serverRequest('/', { Host: '[::1]:80' }), false)).toBe('http://[::1]/');
  });

  it('takes each request its own origin, whatever host and scheme the one before had', () => {
    const seq: [string, boolean, string][] = [
      ['a.example', false, 'http://a.example/p'],
      ['a.example', true, 'https://a.example/p'],
      ['b.example:81', true, 'https://b.example:81/p'],
      ['A.EXAMPLE', true, 'https://a.example/p'],
      ['a.example', true, 'https://a.example/p'],
      ['a.example', false, 'http://a.example/p'],
    ];
    for (const [host, tls, url] of seq) expect(webRequestUrl(serverRequest('/p', { Host: host }), tls), `${host} ${tls}`).toBe(url);
    // A host refused once is refused every time, and does not stand for the one before.
    for (let i = 0; i < 2; i++) expect(() => webRequestUrl(serverRequest('/p', { Host: 'u@a.example' }), false)).toThrow(ProtocolError);
    expect(webRequestUrl(serverRequest('/p', { Host: 'a.example' }), false)).toBe('http://a.example/p');
  });

  it('joins a path as it is only when the URL parser would not change it', () => {
    const h = { Host: 'h' };
    expect(webRequestUrl(serverRequest('/a.b/c..d/e.?x=/.', h), false)).toBe('http://h/a.b/c..d/e.?x=/.');
    expect(webRequestUrl(serverRequest('/.hidden', h), false)).toBe('http://h/.hidden');
    expect(webRequestUrl(serverRequest('/a/..', h), false)).toBe('http://h/');
    expect(webRequestUrl(serverRequest('/é x#f', h), false)).toBe('http://h/%C3%A9%20x#f');
    expect(webRequestUrl(serverRequest('/a\\b', h), false)).toBe('http://h/a/b');
  });

  it('gives the URL the URL parser gives for every visible ASCII byte in the path and the query', () => {
    const h = { Host: 'h' };
    for (let c = 0x21; c <= 0x7e; c++) {
      const ch = String.fromCharCode(c);
      for (const target of [`/a${ch}b`, `/p?q=${ch}`]) {
        expect(webRequestUrl(serverRequest(target, h), false), target).toBe(new URL(`http://h${target}`).href);
      }
    }
  });

  it('takes an absolute-form target as it is, and refuses asterisk and authority forms', () => {
    expect(webRequestUrl(serverRequest('http://other.example/p', { Host: 'h' }), false)).toBe('http://other.example/p');
    expect(() => webRequestUrl(serverRequest('*', { Host: 'h' }), false)).toThrow(ProtocolError);
    expect(() => webRequestUrl(serverRequest('h:443', { Host: 'h' }), false)).toThrow(ProtocolError);
  });
});

describe('toWebRequest', () => {
  it('converts a client Request: url, method, headers, bytes body', async () => {
    const r = new Request('POST', '/up', { 'Content-Type': 'text/plain', 'X-A': '1' }, 'hello');
    r.url = 'http://example.com/up';
    const w = toWebRequest(r);
    expect(w).toBeInstanceOf(globalThis.Request);
    expect(w.url).toBe('http://example.com/up');
    expect(w.method).toBe('POST');
    expect(w.headers.get('x-a')).toBe('1');
    expect(await w.text()).toBe('hello');
  });

  it('streams a streamed body, and its signal follows the request context', async () => {
    const r = new Request('PUT', '/s', { Host: 'h' }, new BytesBody('x'.repeat(50000)));
    const w = toWebRequest(r);
    expect(w.url).toBe('http://h/s');
    expect((await w.arrayBuffer()).byteLength).toBe(50000);
    expect(w.signal.aborted).toBe(false);
    r.ctx.cancel('gone');
    expect(w.signal.aborted).toBe(true);
  });

  it('rejects what is not a Request or a Stream', () => {
    expect(() => toWebRequest({} as Request)).toThrow(ArgumentError);
  });

  it('reads a server Stream body from the connection only as the web stream is read', async () => {
    let seen: Promise<string> | null = null;
    let chunks = 0;
    const first = deferred();
    const { port } = await startStreamServer(async (stream: Stream) => {
      const w = toWebRequest(stream);
      expect(w.url).toBe(`http://127.0.0.1:${port}/in?q=1`);
      const reader = w.body!.getReader();
      let text = '';
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        chunks++;
        if (chunks === 1) first.resolve();
        text += Buffer.from(value).toString();
      }
      seen = Promise.resolve(text);
      await stream.write(String(text.length));
    });
    const sock = destroyAfter(net.connect(port, '127.0.0.1'));
    await new Promise<void>((r) => sock.once('connect', () => r()));
    sock.write(`POST /in?q=1 HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n`);
    // The handler sees the first chunk while the rest is not even sent: the body streams.
    await first.promise;
    const reply = new Promise<string>((resolve) => {
      let got = '';
      sock.on('data', (c: Buffer) => {
        got += c.toString();
        if (got.includes('\r\n0\r\n\r\n') || /\r\n\r\n\d+$/.test(got)) resolve(got);
      });
    });
    sock.write('6\r\n world\r\n0\r\n\r\n');
    expect(await reply).toMatch(/^HTTP\/1\.1 200/);
    expect(await seen!).toBe('hello world');
  });
});
