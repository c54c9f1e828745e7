/**
 * Request-target forms and Host values (RFC 9112 §3.2, RFC 9110 §7.2): what `readRequest`
 * accepts and refuses, whole and split at every byte, and what the serializer refuses to write.
 */
import { describe, expect, it } from 'vitest';
import { ArgumentError, ParseError, ProtocolError } from '../../../kernel/errors.js';
import { Headers } from '../../../kernel/message/headers.js';
import { Request } from '../../../kernel/message/request.js';
import { readRequest } from '../../../kernel/http1/read.js';
import { serializeRequestHead } from '../../../kernel/http1/serialize.js';
import { writeRequest } from '../../../kernel/http1/write.js';
import { isValidHost, requestTargetError } from '../../../kernel/http1/target.js';
import { b, MemorySink, pieces, prng } from './helpers.js';

/** `buf` as an async source, whole, a byte at a time, or in random pieces (seeded). */
function stream(buf: Uint8Array, how: 'whole' | 'bytes' | number): AsyncIterable<Uint8Array> {
  const parts = pieces(buf, typeof how === 'number' ? prng(how) : how);
  return {
    async *[Symbol.asyncIterator]() {
      for (const p of parts) yield p;
    },
  };
}

/** Reads `raw` whole, a byte at a time and in random pieces; all must agree. */
async function read(raw: string): Promise<Request> {
  let first: Request | null = null;
  for (const how of ['whole', 'bytes', 5] as const) {
    const req = await readRequest(stream(b(raw), how));
    if (first === null) first = req;
    else {
      expect(req.target).toBe(first.target);
      expect(req.headers.toArray()).toEqual(first.headers.toArray());
    }
  }
  return first!;
}

/** Asserts every split of `raw` fails with `type` and a message containing `message`. */
async function refused(raw: string, type: typeof ParseError | typeof ProtocolError, message: string): Promise<void> {
  for (const how of ['whole', 'bytes', 5] as const) {
    const err = await readRequest(stream(b(raw), how)).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err, `${JSON.stringify(raw)} (${how})`).toBeInstanceOf(type);
    expect((err as Error).constructor).toBe(type);
    expect((err as Error).message).toContain(message);
  }
}

describe('readRequest: request-target forms', () => {
  it('origin-form with any method but CONNECT', async () => {
    for (const m of ['GET', 'POST', 'OPTIONS', 'PROPFIND']) {
      expect((await read(`${m} /a/b?c=d HTTP/1.1\r\nHost: x\r\n\r\n`)).target).toBe('/a/b?c=d');
    }
  });

  it('a target that is neither a path nor an absolute URI is 400 material', async () => {
    await refused('GET foo HTTP/1.1\r\nHost: x\r\n\r\n', ParseError, 'origin-form');
    await refused('GET foo/bar HTTP/1.1\r\nHost: x\r\n\r\n', ParseError, 'origin-form');
    await refused('GET ?q HTTP/1.1\r\nHost: x\r\n\r\n', ParseError, 'origin-form');
    await refused('GET http:/a HTTP/1.1\r\nHost: x\r\n\r\n', ParseError, 'origin-form');
    await refused('GET 1http://a/ HTTP/1.1\r\nHost: x\r\n\r\n', ParseError, 'origin-form');
  });

  it('absolute-form: accepted, and its authority replaces the Host value (RFC 9112 §3.2.2)', async () => {
    const req = await read('GET http://a/ HTTP/1.1\r\nHost: other.example\r\n\r\n');
    expect(req.target).toBe('http://a/');
    expect(req.headers.getAll('Host')).toEqual(['a']);
    expect(req.host).toBe('a');
    const q = await read('POST https://[::1]:8443?x HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n');
    expect(q.headers.get('Host')).toBe('[::1]:8443');
    // HTTP/1.0 needs no Host; the target's authority supplies one.
    const old = await read('GET http://b.example:8080/p HTTP/1.0\r\n\r\n');
    expect(old.headers.get('Host')).toBe('b.example:8080');
    expect(old.host).toBe('b.example:8080');
  });

  it('absolute-form with userinfo, an empty host or a bad port is refused', async () => {
    await refused('GET http://user@a/ HTTP/1.1\r\nHost: a\r\n\r\n', ParseError, 'userinfo');
    await refused('GET http://u:p@a/ HTTP/1.1\r\nHost: a\r\n\r\n', ParseError, 'userinfo');
    await refused('GET http:///x HTTP/1.1\r\nHost: a\r\n\r\n', ParseError, 'invalid host');
    await refused('GET http://a:b/ HTTP/1.1\r\nHost: a\r\n\r\n', ParseError, 'invalid host');
    await refused('GET http://a%zz/ HTTP/1.1\r\nHost: a\r\n\r\n', ParseError, 'invalid host');
  });

  it('authority-form only with CONNECT, and CONNECT only with it', async () => {
    expect((await read('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n')).target).toBe('example.com:443');
    expect((await read('CONNECT [2001:db8::1]:443 HTTP/1.1\r\nHost: x\r\n\r\n')).target).toBe('[2001:db8::1]:443');
    await refused('GET host:443 HTTP/1.1\r\nHost: x\r\n\r\n', ParseError, 'origin-form');
    await refused('CONNECT / HTTP/1.1\r\nHost: x\r\n\r\n', ParseError, 'CONNECT needs a host:port');
    await refused('CONNECT example.com HTTP/1.1\r\nHost: x\r\n\r\n', ParseError, 'CONNECT needs a host:port');
    await refused('CONNECT example.com: HTTP/1.1\r\nHost: x\r\n\r\n', ParseError, 'CONNECT needs a host:port');
    await refused('CONNECT http://a:1/ HTTP/1.1\r\nHost: x\r\n\r\n', ParseError, 'CONNECT needs a host:port');
    await refused('CONNECT :443 HTTP/1.1\r\nHost: x\r\n\r\n', ParseError, 'CONNECT needs a host:port');
    await refused('CONNECT u@a:443 HTTP/1.1\r\nHost: x\r\n\r\n', ParseError, 'CONNECT needs a host:port');
  });

  it('asterisk-form only with OPTIONS', async () => {
    expect((await read('OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n')).target).toBe('*');
    await refused('GET * HTTP/1.1\r\nHost: x\r\n\r\n', ParseError, 'only for OPTIONS');
    await refused('OPTIONS ** HTTP/1.1\r\nHost: x\r\n\r\n', ParseError, 'origin-form');
  });

  it('CTLs and DEL in the target are refused', async () => {
    for (const c of ['\x01', '\x1f', '\x7f', '\t']) await refused(`GET /a${c}b HTTP/1.1\r\nHost: x\r\n\r\n`, ParseError, '');
  });
});

describe('readRequest: Host', () => {
  it('an HTTP/1.1 request needs exactly one Host; HTTP/1.0 may have none', async () => {
    await refused('GET / HTTP/1.1\r\n\r\n', ProtocolError, 'no Host header');
    await refused('GET / HTTP/1.1\r\nAccept: */*\r\n\r\n', ProtocolError, 'no Host header');
    await refused('GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n', ProtocolError, 'more than one Host');
    await refused('GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n', ProtocolError, 'more than one Host');
    expect((await read('GET / HTTP/1.0\r\n\r\n')).host).toBe(null);
  });

  it('valid values: reg-names, IPv4, IPv6 and IPvFuture literals, ports, percent-encoding, empty', async () => {
    for (const host of [
      'example.com',
      'example.com:8080',
      'EXAMPLE.com',
      '127.0.0.1:80',
      '[::1]:8080',
      '[::1]',
      '[2001:db8::7]',
      '[v1.fe80::a+en1]',
      'xn--bcher-kva.example',
      'a%41b',
      "a-b_c~d!$&'()*+,;=",
      'a:',
      '',
    ]) {
      const req = await read(`GET / HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
      expect(req.headers.get('Host'), host).toBe(host);
    }
  });

  it('a Host that is not host[:port] is refused', async () => {
    for (const host of [
      'example.com/path',
      'a b',
      'a:b',
      'a:80:90',
      'a:-1',
      'user@a',
      '[::1',
      '::1',
      '[zz]',
      '[::1]x',
      '[::1]:a',
      '[fe80::1%eth0]',
      'a%zz',
      'a%4',
      'a"b',
      'a<b',
      'a\\b',
      'a?b',
      'a#b',
      'a\x80b',
      'caf\xe9',
    ]) {
      await refused(`GET / HTTP/1.1\r\nHost: ${host}\r\n\r\n`, ParseError, 'invalid Host');
    }
  });

  it('OWS around the value is not part of it', async () => {
    expect((await read('GET / HTTP/1.1\r\nHost: \t a.example:1 \t\r\n\r\n')).headers.get('Host')).toBe('a.example:1');
  });
});

describe('target.ts', () => {
  it('isValidHost and requestTargetError agree with the reader', () => {
    expect(isValidHost('a.example:443')).toBe(true);
    expect(isValidHost('a b')).toBe(false);
    expect(requestTargetError('GET', '/x')).toBe(null);
    expect(requestTargetError('CONNECT', 'a:1')).toBe(null);
    expect(requestTargetError('CONNECT', '/x')).toMatch(/CONNECT/);
    expect(requestTargetError('GET', 'ftp://a/x')).toBe(null);
    expect(requestTargetError('GET', 'mailto:a@b')).toMatch(/origin-form/);
  });
});

describe('serializeRequestHead / writeRequest: targets and Host', () => {
  it('refuses a target its method may not use', () => {
    for (const [m, t] of [
      ['GET', 'foo'],
      ['GET', 'host:443'],
      ['GET', '*'],
      ['CONNECT', '/'],
      ['CONNECT', 'host'],
      ['GET', 'http://u@a/'],
    ]) {
      expect(() => serializeRequestHead(m!, t!, null, 'h', 'none'), `${m} ${t}`).toThrow(ArgumentError);
    }
    expect(serializeRequestHead('OPTIONS', '*', null, 'h', 'none')).toBe('OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n');
  });

  it('refuses a Host that is not host[:port], from the headers or the host option', () => {
    expect(() => serializeRequestHead('GET', '/', new Headers([['Host', 'a/b']]), null, 'none')).toThrow(/invalid Host "a\/b"/);
    expect(() => serializeRequestHead('GET', '/', null, 'a b', 'none')).toThrow(ArgumentError);
    expect(() => serializeRequestHead('GET', '/', null, 'user@a', 'none')).toThrow(ArgumentError);
    expect(serializeRequestHead('GET', '/', null, '[::1]:8080', 'none')).toBe('GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n');
  });

  it('without a Host, sends the target authority, or an empty Host (RFC 9110 §7.2), so the request reads back', async () => {
    expect(serializeRequestHead('GET', 'http://a.example:81/x', null, null, 'none')).toBe('GET http://a.example:81/x HTTP/1.1\r\nHost: a.example:81\r\n\r\n');
    expect(serializeRequestHead('CONNECT', 'a.example:443', null, null, 'none')).toBe('CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n');
    expect(serializeRequestHead('GET', '/x', null, null, 'none')).toBe('GET /x HTTP/1.1\r\nHost: \r\n\r\n');
    const sink = new MemorySink();
    await writeRequest(sink, new Request('GET', '/x'));
    const back = await readRequest(sink.bytes);
    expect(back.headers.get('Host')).toBe('');
  });
});
