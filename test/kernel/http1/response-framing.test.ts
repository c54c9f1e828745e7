/**
 * The response side of the HTTP/1 framing authority: how a server's response body is delimited
 * and the head that says so.
 */
import { describe, expect, it } from 'vitest';
import { ArgumentError } from '../../../kernel/errors.js';
import { Headers } from '../../../kernel/message/headers.js';
import { buildResponseHead, responseFraming } from '../../../kernel/http1/framing.js';

describe('responseFraming', () => {
  it('no body for HEAD, 1xx, 204 and 304, whatever the length', () => {
    expect(responseFraming(200, 'HEAD', 5, 1)).toBe('none');
    expect(responseFraming(101, 'GET', -1, 1)).toBe('none');
    expect(responseFraming(204, 'GET', 0, 1)).toBe('none');
    expect(responseFraming(304, 'GET', 10, 1)).toBe('none');
  });

  it('Content-Length when the length is known, 0 included', () => {
    expect(responseFraming(200, 'GET', 11, 1)).toBe('length');
    expect(responseFraming(500, 'POST', 0, 0)).toBe('length');
  });

  it('no body for a 2xx answer to CONNECT; a non-2xx one keeps its body', () => {
    expect(responseFraming(200, 'CONNECT', 2, 1)).toBe('none');
    expect(responseFraming(299, 'CONNECT', -1, 1)).toBe('none');
    expect(responseFraming(407, 'CONNECT', 2, 1)).toBe('length');
    expect(responseFraming(300, 'CONNECT', -1, 1)).toBe('chunked');
  });

  it('unknown length: chunked for HTTP/1.1, until close for HTTP/1.0', () => {
    expect(responseFraming(200, 'GET', -1, 1)).toBe('chunked');
    expect(responseFraming(200, 'GET', -1, 0)).toBe('close');
  });
});

describe('buildResponseHead', () => {
  const h = (...pairs: [string, string][]): Headers => new Headers(pairs);

  it('a length: the handler framing fields give way to the computed Content-Length', () => {
    const head = buildResponseHead(200, '', h(['Content-Length', '99'], ['X-A', '1'], ['Transfer-Encoding', 'gzip']), 'length', 5, 'Date: d\r\n');
    expect(head).toBe('HTTP/1.1 200 OK\r\nX-A: 1\r\nContent-Length: 5\r\nDate: d\r\n\r\n');
  });

  it('chunked adds Transfer-Encoding; close adds no framing field', () => {
    expect(buildResponseHead(200, 'Fine', h(['X-A', '1']), 'chunked', -1, '')).toBe('HTTP/1.1 200 Fine\r\nX-A: 1\r\nTransfer-Encoding: chunked\r\n\r\n');
    expect(buildResponseHead(200, '', h(['Content-Length', '3']), 'close', -1, 'Connection: close\r\n')).toBe('HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n');
  });

  it('a HEAD answer says what a GET would have: the given length, or the handler own framing fields', () => {
    expect(buildResponseHead(200, '', h(), 'none', 5, '')).toBe('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n');
    expect(buildResponseHead(200, '', h(['Content-Length', '100']), 'none', 0, '')).toBe('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n');
    expect(buildResponseHead(200, '', h(['Transfer-Encoding', 'chunked']), 'none', -1, '')).toBe('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n');
    expect(buildResponseHead(200, '', h(), 'none', -1, '')).toBe('HTTP/1.1 200 OK\r\n\r\n');
  });

  it('304 keeps a Content-Length the handler set and adds none; 1xx and 204 carry no framing field', () => {
    expect(buildResponseHead(304, '', h(['Content-Length', '7']), 'none', 0, '')).toBe('HTTP/1.1 304 Not Modified\r\nContent-Length: 7\r\n\r\n');
    expect(buildResponseHead(304, '', h(), 'none', 0, '')).toBe('HTTP/1.1 304 Not Modified\r\n\r\n');
    expect(buildResponseHead(204, '', h(['Content-Length', '0'], ['X-A', '1']), 'none', 0, '')).toBe('HTTP/1.1 204 No Content\r\nX-A: 1\r\n\r\n');
    expect(buildResponseHead(101, '', h(['Transfer-Encoding', 'chunked'], ['Upgrade', 'x']), 'none', -1, '')).toBe('HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n');
  });

  it('a 2xx to CONNECT carries no framing field, whatever the handler set; a non-2xx one keeps them', () => {
    expect(buildResponseHead(200, '', h(['Content-Length', '2'], ['X-A', '1']), 'none', 2, '', 'CONNECT')).toBe('HTTP/1.1 200 OK\r\nX-A: 1\r\n\r\n');
    expect(buildResponseHead(200, '', h(['Transfer-Encoding', 'chunked']), 'none', -1, '', 'CONNECT')).toBe('HTTP/1.1 200 OK\r\n\r\n');
    expect(buildResponseHead(407, '', h(['X-A', '1']), 'length', 2, '', 'CONNECT')).toBe('HTTP/1.1 407 Proxy Authentication Required\r\nX-A: 1\r\nContent-Length: 2\r\n\r\n');
  });

  it('refuses a field value that would inject a line, and a bad reason', () => {
    expect(() => buildResponseHead(200, '', h(['X-A', 'a\r\nX-B: b']), 'length', 0, '')).toThrow(ArgumentError);
    expect(() => buildResponseHead(200, 'bad\r\n', h(), 'length', 0, '')).toThrow(ArgumentError);
  });
});
