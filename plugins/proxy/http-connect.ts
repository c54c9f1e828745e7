/**
 * The HTTP `CONNECT` tunnel (RFC 9110 §9.3.6): asks an HTTP proxy for a byte stream to
 * `host:port`, with `Proxy-Authorization` from the proxy URL's user info. The answer's head is
 * read with the kernel's HTTP/1 parser under its own limits; a 2xx opens the tunnel (any
 * framing headers on it are ignored, as the RFC says), 1xx interim answers are skipped, and
 * anything else is a {@link ProxyStatusError} carrying the proxy's status and headers.
 */
import type net from 'node:net';
import { ParseError, ProtocolError, hostPort } from '../../kernel/index.js';
import { HeadParser } from '../../kernel/protocol.js';
import type { ProxyEndpoint } from './endpoint.js';
import { ProxyStatusError } from './errors.js';
import { SocketReader } from './handshake.js';

/** Largest CONNECT answer head accepted, in bytes (a proxy's error page body is never read). */
export const CONNECT_MAX_HEADER_BYTES = 65536;
/** Longest line of a CONNECT answer head, in bytes. */
export const CONNECT_MAX_LINE_BYTES = 16384;

/** Sends `CONNECT host:port` on `socket` (connected to `proxy`) and resolves once the tunnel is open. */
export async function httpConnect(socket: net.Socket, proxy: ProxyEndpoint, host: string, port: number): Promise<void> {
  const authority = hostPort(host, port);
  const reader = new SocketReader(socket, proxy, `the CONNECT handshake for ${authority}`);
  let head = `CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n`;
  if (proxy.authorization !== null) head += `Proxy-Authorization: ${proxy.authorization}\r\n`;
  socket.write(`${head}\r\n`, 'latin1');
  const parser = new HeadParser('response', { maxLineBytes: CONNECT_MAX_LINE_BYTES, maxHeaderBytes: CONNECT_MAX_HEADER_BYTES });
  for (;;) {
    try {
      await reader.readHead(parser);
    } catch (err) {
      if (err instanceof ProtocolError) {
        throw new ProtocolError(`proxy ${proxy.href} sent a CONNECT answer head over the limit (${err.message})`, { cause: err, limit: err.limit ?? undefined, line: err.line });
      }
      if (err instanceof ParseError) throw new ParseError(`proxy ${proxy.href} sent an invalid CONNECT answer: ${err.message}`, { cause: err });
      throw err;
    }
    const status = parser.status;
    if (status >= 200 && status < 300) break;
    if (status < 200 && status !== 101) {
      parser.reset();
      continue;
    }
    throw new ProxyStatusError(proxy.href, authority, status, parser.reason, parser.headers, proxy.authorization !== null);
  }
  reader.release();
}
