/**
 * Proxies that misbehave (small hand-written servers on loopback): closing mid-handshake,
 * SOCKS garbage, an oversized CONNECT answer head, silence and slow drips, every SOCKS5 reply
 * code, unreachable proxies, cancellation and deadlines. Each ends in a clear error, never
 * later than the connect timeout.
 */
import { describe, expect, it } from 'vitest';
import { ArgumentError, CanceledError, ConnectError, ParseError, ProtocolError, TimeoutError } from '../../../kernel/index.js';
import { MAX_INTERIM_RESPONSES } from '../../../kernel/protocol.js';
import { CONNECT_MAX_HEADER_BYTES, ProxyError, ProxyStatusError, SOCKS5_REPLIES, Socks5Error } from '../../../plugins/proxy/index.js';
import { afterBytes, afterHead, freePort, rawProxy } from '../../helpers/proxies.js';
import { makeClient, rejection } from './setup.js';

const TARGET = 'https://origin.test:8443/';
const PLAIN_TARGET = 'http://origin.test:8080/';

/** A client whose every call goes through `proxyUrl`, with a short connect timeout. */
async function through(proxyUrl: string, connectTimeout = 2000): Promise<ReturnType<typeof makeClient>> {
  return makeClient({ proxy: proxyUrl, connectTimeout });
}

/** Runs `call` and checks it failed within `limitMs`; returns the error. */
async function failsWithin(call: Promise<unknown>, limitMs: number): Promise<Error> {
  const t0 = performance.now();
  const err = await rejection(call);
  expect(performance.now() - t0).toBeLessThan(limitMs);
  return err;
}

/** A SOCKS5 server that accepts "no authentication" and then answers the CONNECT with `reply`. */
function socksAnswering(reply: Buffer | ((request: Buffer) => Buffer)) {
  return rawProxy((s) =>
    afterBytes(s, 3, () => {
      s.write(Buffer.from([5, 0]));
      // VER CMD RSV ATYP=3 LEN name PORT: read the whole request before answering.
      afterBytes(s, 5, (head) => {
        const len = head[3] === 1 ? 10 : head[3] === 4 ? 22 : 7 + head[4]!;
        afterBytes(s, Math.max(0, len - head.length), (rest) => {
          const req = Buffer.concat([head, rest]);
          s.write(typeof reply === 'function' ? reply(req) : reply);
        });
      });
    }),
  );
}

describe('HTTP proxy: bad CONNECT answers', () => {
  it('closing before replying', async () => {
    const p = await rawProxy((s) => afterHead(s, () => s.end()));
    const err = await failsWithin((await through(`http://127.0.0.1:${p.port}`)).get(TARGET), 1500);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).address).toBe('origin.test:8443');
    expect(err.cause).toBeInstanceOf(ProxyError);
    expect(err.message).toMatch(/closed the connection during the CONNECT handshake for origin\.test:8443 \(before replying\)/);
  });

  it('closing in the middle of the answer head', async () => {
    const p = await rawProxy((s) => afterHead(s, () => s.end('HTTP/1.1 200 Conn')));
    const err = await failsWithin((await through(`http://127.0.0.1:${p.port}`)).get(TARGET), 1500);
    expect(err.cause).toBeInstanceOf(ProxyError);
    expect(err.message).toMatch(/closed the connection during the CONNECT handshake .*after 17 bytes of reply/);
  });

  it('a reset connection', async () => {
    const p = await rawProxy((s) => afterHead(s, () => s.resetAndDestroy()));
    const err = await failsWithin((await through(`http://127.0.0.1:${p.port}`)).get(TARGET), 1500);
    expect(err).toBeInstanceOf(ConnectError);
    expect(err.message).toMatch(/CONNECT handshake/);
  });

  it('an oversized answer head (over CONNECT_MAX_HEADER_BYTES) is a ProtocolError, at once', async () => {
    const p = await rawProxy((s) =>
      afterHead(s, () => {
        s.write('HTTP/1.1 200 OK\r\n');
        // Keep sending header lines; the client must stop reading at its limit, not wait for the end.
        const line = `X-Pad: ${'a'.repeat(1000)}\r\n`;
        const pump = (): void => {
          while (!s.destroyed && s.write(line));
          if (!s.destroyed) s.once('drain', pump);
        };
        pump();
      }),
    );
    const err = await failsWithin((await through(`http://127.0.0.1:${p.port}`, 10_000)).get(TARGET), 3000);
    expect(err).toBeInstanceOf(ConnectError);
    expect(err.cause).toBeInstanceOf(ProtocolError);
    expect((err.cause as ProtocolError).limit).toBe('maxHeaderBytes');
    expect(err.message).toMatch(/CONNECT answer head over the limit/);
    expect(CONNECT_MAX_HEADER_BYTES).toBe(65536);
  });

  it('one overlong line is a ProtocolError', async () => {
    const p = await rawProxy((s) => afterHead(s, () => s.write(`HTTP/1.1 200 ${'x'.repeat(20_000)}`)));
    const err = await failsWithin((await through(`http://127.0.0.1:${p.port}`, 10_000)).get(TARGET), 3000);
    expect(err.cause).toBeInstanceOf(ProtocolError);
    expect((err.cause as ProtocolError).limit).toBe('maxLineBytes');
  });

  it("endless interim (1xx) answers are a ProtocolError after the kernel's cap, not a wait for the connect timeout", async () => {
    const p = await rawProxy((s) =>
      afterHead(s, () => {
        const pump = (): void => {
          while (!s.destroyed && s.write('HTTP/1.1 100 Continue\r\n\r\n'));
          if (!s.destroyed) s.once('drain', pump);
        };
        pump();
      }),
    );
    const err = await failsWithin((await through(`http://127.0.0.1:${p.port}`, 10_000)).get(TARGET), 3000);
    expect(err).toBeInstanceOf(ConnectError);
    expect(err.cause).toBeInstanceOf(ProtocolError);
    expect(err.message).toMatch(new RegExp(`sent an invalid CONNECT answer \\(the server sent more than ${MAX_INTERIM_RESPONSES} informational \\(1xx\\) responses`));
  });

  it('an answer that is not HTTP is a ParseError', async () => {
    const p = await rawProxy((s) => afterHead(s, () => s.write('SSH-2.0-OpenSSH_9.2\r\n\r\n')));
    const err = await failsWithin((await through(`http://127.0.0.1:${p.port}`)).get(TARGET), 1500);
    expect(err.cause).toBeInstanceOf(ParseError);
    expect(err.message).toMatch(/sent an invalid CONNECT answer/);
  });

  it.each([403, 502, 301])('a %i answer is a ProxyStatusError (body ignored)', async (status) => {
    const p = await rawProxy((s) => afterHead(s, () => s.write(`HTTP/1.1 ${status} Nope\r\nContent-Length: 5\r\nX-Why: policy\r\n\r\nnope!`)));
    const err = await failsWithin((await through(`http://127.0.0.1:${p.port}`)).get(TARGET), 1500);
    const cause = err.cause as ProxyStatusError;
    expect(cause).toBeInstanceOf(ProxyStatusError);
    expect(cause.status).toBe(status);
    expect(cause.reason).toBe('Nope');
    expect(cause.headers.get('X-Why')).toBe('policy');
  });
});

describe('SOCKS5 proxy: bad answers', () => {
  it('closing before replying to the greeting', async () => {
    const p = await rawProxy((s) => afterBytes(s, 3, () => s.end()));
    const err = await failsWithin((await through(`socks5://127.0.0.1:${p.port}`)).get(TARGET), 1500);
    expect(err).toBeInstanceOf(ConnectError);
    expect(err.message).toMatch(/closed the connection during the SOCKS5 greeting \(before replying\)/);
  });

  it('closing after the greeting, during CONNECT', async () => {
    const p = await rawProxy((s) =>
      afterBytes(s, 3, () => {
        s.write(Buffer.from([5, 0]));
        afterBytes(s, 5, () => s.end(Buffer.from([5, 0])));
      }),
    );
    const err = await failsWithin((await through(`socks5h://127.0.0.1:${p.port}`)).get(TARGET), 1500);
    expect(err.message).toMatch(/closed the connection during the SOCKS5 CONNECT to origin\.test:8443 \(after 4 bytes of reply\)/);
  });

  it('an HTTP answer instead of SOCKS is a ParseError with a hint', async () => {
    const p = await rawProxy((s) => afterBytes(s, 3, () => s.write('HTTP/1.1 400 Bad Request\r\n\r\n')));
    const err = await failsWithin((await through(`socks5://127.0.0.1:${p.port}`)).get(TARGET), 1500);
    expect(err).toBeInstanceOf(ConnectError);
    expect(err.cause).toBeInstanceOf(ParseError);
    expect(err.message).toMatch(/invalid greeting: version byte 0x48, expected 0x05 \(it looks like an HTTP answer/);
  });

  it('garbage bytes are a ParseError', async () => {
    const p = await rawProxy((s) => afterBytes(s, 3, () => s.write(Buffer.from([0x00, 0x5a, 0xde, 0xad]))));
    const err = await failsWithin((await through(`socks5://127.0.0.1:${p.port}`)).get(TARGET), 1500);
    expect(err.cause).toBeInstanceOf(ParseError);
    expect(err.message).toMatch(/version byte 0x00/);
  });

  it('a CONNECT reply with garbage is a ParseError', async () => {
    const p = await socksAnswering(Buffer.from('garbage!!!'));
    const err = await failsWithin((await through(`socks5://127.0.0.1:${p.port}`)).get(TARGET), 1500);
    expect(err.cause).toBeInstanceOf(ParseError);
    expect(err.message).toMatch(/invalid CONNECT reply/);
  });

  it('a CONNECT reply with an unknown address type is a ParseError', async () => {
    const p = await socksAnswering(Buffer.from([5, 0, 0, 9, 0, 0, 0, 0, 0, 0]));
    const err = await failsWithin((await through(`socks5://127.0.0.1:${p.port}`)).get(TARGET), 1500);
    expect(err.cause).toBeInstanceOf(ParseError);
    expect(err.message).toMatch(/unknown address type 0x09/);
  });

  it('a method the client did not offer', async () => {
    const p = await rawProxy((s) => afterBytes(s, 3, () => s.write(Buffer.from([5, 0x03]))));
    const err = await failsWithin((await through(`socks5://127.0.0.1:${p.port}`)).get(TARGET), 1500);
    expect((err.cause as Socks5Error).step).toBe('greeting');
    expect(err.message).toMatch(/chose authentication method 0x03, which was not offered/);
  });

  it.each([1, 2, 3, 4, 5, 6, 7, 8, 9, 0xff])('reply code %i is a Socks5Error naming it', async (code) => {
    const p = await socksAnswering(Buffer.from([5, code, 0, 1, 0, 0, 0, 0, 0, 0]));
    const err = await failsWithin((await through(`socks5://127.0.0.1:${p.port}`)).get(PLAIN_TARGET), 1500);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).address).toBe('origin.test:8080');
    const cause = err.cause as Socks5Error;
    expect(cause).toBeInstanceOf(Socks5Error);
    expect(cause.reply).toBe(code);
    expect(cause.step).toBe('connect');
    expect(cause.code).toBe('SWY_ERR_SOCKS5');
    const text = SOCKS5_REPLIES[code] ?? `unassigned reply code 0x${code.toString(16).padStart(2, '0')}`;
    expect(err.message).toContain(text);
  });
});

describe('no hang beyond connectTimeout', () => {
  it('a proxy that never answers CONNECT: TimeoutError("connect") at connectTimeout', async () => {
    const p = await rawProxy(() => undefined);
    const err = await failsWithin((await through(`http://127.0.0.1:${p.port}`, 300)).get(TARGET), 1500);
    expect(err).toBeInstanceOf(TimeoutError);
    const t = err as TimeoutError;
    expect(t.operation).toBe('connect');
    expect(t.timeoutMs).toBe(300);
    expect(t.elapsedMs).toBeGreaterThanOrEqual(290);
    expect(t.message).toMatch(/connectTimeout of 300 ms passed during the CONNECT handshake with proxy http:\/\/127\.0\.0\.1:\d+ for origin\.test:8443/);
  });

  it('a proxy dripping a valid head one byte at a time: TimeoutError at connectTimeout', async () => {
    const p = await rawProxy((s) =>
      afterHead(s, () => {
        const text = `HTTP/1.1 200 OK\r\n${'X-Slow: 1\r\n'.repeat(1000)}`;
        let i = 0;
        const t = setInterval(() => {
          if (s.destroyed || i >= text.length) clearInterval(t);
          else s.write(text[i++]!);
        }, 20);
        s.on('close', () => clearInterval(t));
      }),
    );
    const err = await failsWithin((await through(`http://127.0.0.1:${p.port}`, 400)).get(TARGET), 1500);
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as TimeoutError).operation).toBe('connect');
  });

  it('a silent SOCKS5 proxy: TimeoutError("connect")', async () => {
    const p = await rawProxy(() => undefined);
    const err = await failsWithin((await through(`socks5://127.0.0.1:${p.port}`, 300)).get(TARGET), 1500);
    expect(err).toBeInstanceOf(TimeoutError);
    expect(err.message).toMatch(/during the SOCKS5 handshake/);
  });

  it('the TLS handshake after the tunnel shares the same connectTimeout', async () => {
    // CONNECT succeeds at once, then the "origin" never answers the ClientHello.
    const p = await rawProxy((s) => afterHead(s, () => s.write('HTTP/1.1 200 Connection established\r\n\r\n')));
    const err = await failsWithin((await through(`http://127.0.0.1:${p.port}`, 400)).get(TARGET), 1500);
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as TimeoutError).operation).toBe('tls_handshake');
    expect((err as TimeoutError).elapsedMs).toBeLessThan(1000);
  });

  it('a request deadline earlier than connectTimeout ends the handshake with TimeoutError("request")', async () => {
    const p = await rawProxy(() => undefined);
    const client = await through(`http://127.0.0.1:${p.port}`, 10_000);
    const err = await failsWithin(client.get(TARGET, { requestTimeout: 250 }), 1500);
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as TimeoutError).operation).toBe('request');
  });

  it('an AbortSignal cancels the handshake', async () => {
    const p = await rawProxy(() => undefined);
    const client = await through(`socks5://127.0.0.1:${p.port}`, 10_000);
    const ac = new AbortController();
    const call = client.get(TARGET, { signal: ac.signal });
    setTimeout(() => ac.abort(), 100);
    const err = await failsWithin(call, 1500);
    expect(err).toBeInstanceOf(CanceledError);
  });
});

describe('unreachable and unsupported proxies', () => {
  it('a proxy that refuses connections: ConnectError for the proxy address', async () => {
    const port = await freePort();
    const err = await failsWithin((await through(`http://127.0.0.1:${port}`)).get(TARGET), 1500);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).address).toBe(`127.0.0.1:${port}`);
    expect((err.cause as NodeJS.ErrnoException).code).toBe('ECONNREFUSED');
  });

  it('an https:// proxy: ArgumentError, and no connection to it', async () => {
    const p = await rawProxy((s) => s.destroy());
    const client = await through(`https://127.0.0.1:${p.port}`);
    for (const url of [TARGET, PLAIN_TARGET]) {
      const err = await rejection(client.get(url));
      expect(err).toBeInstanceOf(ArgumentError);
      expect(err.message).toMatch(/https:\/\/ proxy/);
    }
    expect(p.connections).toBe(0);
  });

  it('a proxy option of the wrong type is an ArgumentError', async () => {
    const client = await makeClient();
    await expect(client.get(TARGET, { proxy: 42 as never })).rejects.toThrow(ArgumentError);
    await expect(client.get(TARGET, { proxy: 'socks4://127.0.0.1:1' })).rejects.toThrow(/unsupported proxy scheme/);
  });
});

describe('the proxy is left in a clean state', () => {
  it('after a failed handshake the socket to the proxy is closed', async () => {
    let closed = 0;
    const p = await rawProxy((s) => {
      s.on('close', () => closed++);
      afterHead(s, () => s.write('HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="x"\r\n\r\n'));
    });
    const client = await through(`http://127.0.0.1:${p.port}`);
    const err = await rejection(client.get(TARGET));
    expect((err.cause as ProxyStatusError).status).toBe(407);
    expect(err.message).toMatch(/proxy authentication required \(put user:password in the proxy URL\)/);
    await new Promise<void>((resolve) => {
      const check = (): void => (closed === 1 ? resolve() : void setTimeout(check, 10));
      check();
    });
    expect(client.transport.connectionCount()).toBe(0);
  });
});
