/**
 * Client errors with real peers: ConnectError (refused port), DNSError (`.invalid` name),
 * TLS (self-signed certificate without and with `tlsConfig.ca`, a name mismatch), and the
 * codec's ParseError / ProtocolError for truncated bodies, oversized heads and malformed
 * status lines sent by raw servers. After each failure the client keeps working.
 */
import { describe, expect, it } from 'vitest';
import { ConnectError, DNSError, ParseError, ProtocolError, Response, TLSHandshakeError, Transport } from '../../../kernel/index.js';
import { selfSignedCertificate, type SelfSignedCertificate } from '../../../tls/self-signed.js';
import { closedPort, newClient, okResponse, rawServer, readRequests, rejection, startServer, startTlsServer, text, within } from '../../helpers/client.js';

/** A raw server that answers every request with `reply` (then optionally ends the socket). */
async function replies(reply: string | Buffer, end = false) {
  return rawServer((sock) => {
    readRequests(sock, () => {
      sock.write(reply);
      if (end) sock.end();
    });
  });
}

describe('connect errors', () => {
  it('a refused port is a ConnectError with the address and the cause', async () => {
    const port = await closedPort();
    const c = newClient();
    const err = await rejection(c.get(`http://127.0.0.1:${port}/`));
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).address).toBe(`127.0.0.1:${port}`);
    expect(((err as ConnectError).cause as NodeJS.ErrnoException).code).toBe('ECONNREFUSED');
    expect(c.transport.connectionCount()).toBe(0);
  });

  it('an unresolvable name (.invalid) is a DNSError with the hostname', async () => {
    const c = newClient();
    const err = await within(rejection(c.get('http://no-such-host.switchyard.invalid:8080/x')), 8000, 'the DNS failure');
    expect(err).toBeInstanceOf(DNSError);
    expect((err as DNSError).hostname).toBe('no-such-host.switchyard.invalid');
    expect((err as DNSError).cause).toBeInstanceOf(Error);
  });
});

describe('TLS', () => {
  let cert: SelfSignedCertificate | null = null;
  const certificate = (): SelfSignedCertificate => (cert ??= selfSignedCertificate());

  async function httpsServer(c: SelfSignedCertificate = certificate()) {
    return startTlsServer((req) => new Response(200, `secure ${req.target}`), c);
  }

  it('a self-signed certificate without tlsConfig.ca is a TLSHandshakeError', async () => {
    const s = await httpsServer();
    const c = newClient();
    const err = await rejection(c.get(`https://127.0.0.1:${s.port}/`));
    expect(err).toBeInstanceOf(TLSHandshakeError);
    expect((err as TLSHandshakeError).cause).toBeInstanceOf(Error);
    expect(c.transport.connectionCount()).toBe(0);
    // It says how to trust the certificate, and carries Node's reason for programs (a command line) to act on.
    expect((err as TLSHandshakeError).certificateError).toBe('DEPTH_ZERO_SELF_SIGNED_CERT');
    expect(err.message).toBe(
      "TLS handshake failed: self-signed certificate; the server's certificate is not signed by a CA this client trusts: pass that CA's certificate as tlsConfig: { ca } (tls: { ca } for WebSockets.open), or for a test only turn checking off with tlsConfig: { rejectUnauthorized: false }",
    );
  });

  it('succeeds with tlsConfig: { ca } (by IP and by name) and reuses the TLS connection', async () => {
    const s = await httpsServer();
    const c = newClient({ tlsConfig: { ca: certificate().cert } });
    expect(text(await c.get(`https://127.0.0.1:${s.port}/a`))).toBe('secure /a');
    expect(text(await c.get(`https://127.0.0.1:${s.port}/b`))).toBe('secure /b');
    expect(s.connections).toBe(1);
    const byName = newClient({ transport: new Transport({ tlsConfig: { ca: certificate().cert } }) });
    expect(text(await byName.get(`https://localhost:${s.port}/n`))).toBe('secure /n');
    byName.transport.close();
  });

  it('rejectUnauthorized: false accepts the certificate', async () => {
    const s = await httpsServer();
    const c = newClient({ tlsConfig: { rejectUnauthorized: false } });
    expect((await c.get(`https://127.0.0.1:${s.port}/`)).status).toBe(200);
  });

  it('a certificate for another name fails; tlsConfig.servername selects the name to check', async () => {
    const other = selfSignedCertificate({ hosts: ['service.test'] });
    const s = await httpsServer(other);
    const c = newClient({ tlsConfig: { ca: other.cert } });
    const err = await rejection(c.get(`https://127.0.0.1:${s.port}/`));
    expect(err).toBeInstanceOf(TLSHandshakeError);
    expect((err as TLSHandshakeError).certificateError).toBe('ERR_TLS_CERT_ALTNAME_INVALID');
    expect(err.message).toMatch(/the certificate is for another name: connect by a name it lists, or set tlsConfig: \{ servername \}/);
    const named = newClient({ tlsConfig: { ca: other.cert, servername: 'service.test' } });
    expect(text(await named.get(`https://127.0.0.1:${s.port}/sni`))).toBe('secure /sni');
  });

  it('an https:// URL to a plain HTTP server is a TLSHandshakeError', async () => {
    const s = await startServer(() => new Response(200, 'plain'));
    const c = newClient();
    const err = await rejection(c.get(`https://127.0.0.1:${s.port}/`));
    expect(err).toBeInstanceOf(TLSHandshakeError);
    // Not a certificate matter: nothing about trusting one.
    expect((err as TLSHandshakeError).certificateError).toBeNull();
    expect(err.message).not.toMatch(/tlsConfig/);
  });
});

describe('bad responses', () => {
  it('a truncated Content-Length body (10 of 100 bytes, then close) is a ParseError', async () => {
    const raw = await replies('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789', true);
    const c = newClient();
    const err = await rejection(c.get(`${raw.origin}/trunc`));
    expect(err).toBeInstanceOf(ParseError);
    expect(err.message).toMatch(/truncated|closed/i);
    expect(c.transport.connectionCount()).toBe(0);
  });

  it('a truncated chunked body is a ParseError', async () => {
    const raw = await replies('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n', true);
    const c = newClient();
    expect(await rejection(c.get(`${raw.origin}/`))).toBeInstanceOf(ParseError);
  });

  it('a connection closed inside the head is a ParseError', async () => {
    const raw = await replies('HTTP/1.1 200 OK\r\nContent-Le', true);
    const c = newClient();
    expect(await rejection(c.get(`${raw.origin}/`))).toBeInstanceOf(ParseError);
  });

  it('a truncated body seen through dispatch fails the body read with ParseError', async () => {
    const raw = await replies('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789', true);
    const c = newClient();
    const { Request } = await import('../../../kernel/index.js');
    const res = await c.dispatch(Object.assign(new Request('GET', '/'), { url: `${raw.origin}/` }));
    expect(res.status).toBe(200);
    const err = await rejection(
      (async () => {
        for await (const _ of res.body as AsyncIterable<Uint8Array>) void _;
      })(),
    );
    expect(err).toBeInstanceOf(ParseError);
  });

  it('a status line longer than maxLineBytes (Client option) is a ProtocolError', async () => {
    const raw = await replies(`HTTP/1.1 200 ${'R'.repeat(500)}\r\nContent-Length: 2\r\n\r\nok`);
    const c = newClient({ maxLineBytes: 200 });
    const err = await rejection(c.get(`${raw.origin}/`));
    expect(err).toBeInstanceOf(ProtocolError);
    expect((err as ProtocolError).limit).toBe('maxLineBytes');
    // The default limit (64 KiB) takes the same response.
    expect(text(await newClient().get(`${raw.origin}/`))).toBe('ok');
  });

  it('a header line longer than the default maxLineBytes (64 KiB) is a ProtocolError', async () => {
    const raw = await replies(`HTTP/1.1 200 OK\r\nX-Big: ${'v'.repeat(70_000)}\r\nContent-Length: 2\r\n\r\nok`);
    const err = await rejection(newClient().get(`${raw.origin}/`));
    expect(err).toBeInstanceOf(ProtocolError);
    expect((err as ProtocolError).limit).toBe('maxLineBytes');
  });

  it('a header block larger than maxHeaderBytes (Transport option) is a ProtocolError', async () => {
    const fields = Array.from({ length: 40 }, (_, i) => `X-Field-${i}: ${'h'.repeat(80)}\r\n`).join('');
    const raw = await replies(`HTTP/1.1 200 OK\r\n${fields}Content-Length: 2\r\n\r\nok`);
    const c = newClient({ transport: new Transport({ maxHeaderBytes: 1024 }) });
    const err = await rejection(c.get(`${raw.origin}/`));
    expect(err).toBeInstanceOf(ProtocolError);
    expect((err as ProtocolError).limit).toBe('maxHeaderBytes');
    c.transport.close();
  });

  it('per-call maxLineBytes / maxHeaderBytes apply to that call', async () => {
    const raw = await replies(`HTTP/1.1 200 ${'R'.repeat(500)}\r\nContent-Length: 2\r\n\r\nok`);
    const c = newClient();
    const err = await rejection(c.get(`${raw.origin}/`, { maxLineBytes: 200 }));
    expect(err).toBeInstanceOf(ProtocolError);
    const err2 = await rejection(c.get(`${raw.origin}/`, { maxHeaderBytes: 256 }));
    expect(err2).toBeInstanceOf(ProtocolError);
  });

  it.each([
    ['a non-numeric status', 'HTTP/1.1 abc OK\r\nContent-Length: 0\r\n\r\n'],
    ['a four-digit status', 'HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n'],
    ['no HTTP version', 'FOO 200 OK\r\nContent-Length: 0\r\n\r\n'],
    ['HTTP/0.9-style body without a head', '<html>hello</html>\r\n\r\n'],
    ['a bare LF status line', 'HTTP/1.1 200 OK\nContent-Length: 0\n\n'],
    ['a header without a colon', 'HTTP/1.1 200 OK\r\nNoColonHere\r\nContent-Length: 0\r\n\r\n'],
  ])('%s is a ParseError', async (_what, reply) => {
    const raw = await replies(reply);
    const c = newClient();
    expect(await rejection(c.get(`${raw.origin}/`))).toBeInstanceOf(ParseError);
    expect(c.transport.connectionCount()).toBe(0);
  });

  it('interim 1xx responses (103 Early Hints, an unsolicited 100) are skipped; the final one is returned', async () => {
    const raw = await replies('HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfinal');
    const c = newClient();
    const res = await c.get(`${raw.origin}/`);
    expect(res.status).toBe(200);
    expect(text(res)).toBe('final');
    expect(text(await c.get(`${raw.origin}/`))).toBe('final');
    expect(raw.connections).toBe(1);
  });

  it('conflicting Content-Length values are a ProtocolError', async () => {
    const raw = await replies('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok');
    expect(await rejection(newClient().get(`${raw.origin}/`))).toBeInstanceOf(ProtocolError);
  });

  it('a reset in the middle of the body propagates the transport error as it is', async () => {
    const raw = await rawServer((sock) => {
      readRequests(sock, () => {
        sock.write('HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\npartial', () => sock.resetAndDestroy());
      });
    });
    const err = await rejection(newClient().get(`${raw.origin}/`));
    expect((err as NodeJS.ErrnoException).code === 'ECONNRESET' || err instanceof ParseError).toBe(true);
  });

  it('after each kind of failure the same client keeps working', async () => {
    const good = await rawServer((sock) => readRequests(sock, () => sock.write(okResponse('fine'))));
    const bad = await replies('HTTP/1.1 abc\r\n\r\n');
    const c = newClient();
    await rejection(c.get(`${bad.origin}/`));
    await rejection(c.get(`http://127.0.0.1:${await closedPort()}/`));
    expect(text(await c.get(`${good.origin}/`))).toBe('fine');
  });
});
