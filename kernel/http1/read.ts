/**
 * `readRequest` and `readResponse`: read one HTTP/1 message head from a byte source and return
 * the message with a body that streams the rest.
 */
import { ParseError } from '../errors.js';
import { nobody, type Body } from '../message/body.js';
import { Request } from '../message/request.js';
import { Response } from '../message/response.js';
import { ByteReader, type ByteSourceInit } from './byte-reader.js';
import { requestBodyKind, responseBodyKind, type BodyKind } from './framing.js';
import { HeadParser, type HeadLimits } from './head-parser.js';
import { IncomingBody } from './incoming-body.js';

/** Options of {@link readRequest}. */
export interface ReadRequestOptions extends HeadLimits {}

/** Options of {@link readResponse}. */
export interface ReadResponseOptions extends HeadLimits {
  /** The request this response answers: sets `response.request`, and a HEAD or CONNECT request changes the framing. */
  request?: Request | null;
  /** Method of the request, when no `request` is given. */
  method?: string;
  /**
   * Return interim 1xx responses (100 Continue, 103 Early Hints, ...) instead of skipping them.
   * Default false. 101 Switching Protocols is always returned: it ends HTTP/1 on the connection.
   */
  returnInformational?: boolean;
  /** Called with each interim 1xx response that is skipped. */
  onInformational?: (response: Response) => void;
}

/** Reads one head into `parser`; the bytes after it go back into `reader`. */
async function readHead(reader: ByteReader, parser: HeadParser, what: string): Promise<void> {
  for (;;) {
    const chunk = await reader.read();
    if (chunk === null) {
      const seen = parser.bytesSeen;
      throw new ParseError(seen === 0 ? `stream ended before a ${what} head arrived` : `stream ended inside the ${what} head (after ${seen} bytes)`);
    }
    const n = parser.execute(chunk, 0, chunk.length);
    if (parser.complete) {
      if (n < chunk.length) reader.unread(chunk.subarray(n));
      return;
    }
  }
}

function makeBody(reader: ByteReader, kind: BodyKind, parser: HeadParser): Body {
  if (kind === 'none' || (kind === 'length' && parser.contentLength === 0)) return nobody;
  return new IncomingBody(reader, kind, parser.contentLength, {
    maxLineBytes: parser.maxLineBytes,
    maxHeaderBytes: parser.maxHeaderBytes,
    headBytes: parser.headBytes,
  });
}

/**
 * Reads exactly one request head from `source` and returns the request; its body streams the
 * rest of the message from the same source.
 *
 * Body: `nobody` (the shared empty `Uint8Array`) when the framing says the body is empty (no
 * Content-Length or Transfer-Encoding, or `Content-Length: 0`); otherwise an
 * {@link IncomingBody} (fixed length or chunked). `contentLength` is the Content-Length, 0 for
 * no body, -1 for chunked. `host` is the Host header or null; `close` is true when the
 * connection must close after this request (`Connection: close`, or HTTP/1.0 without
 * keep-alive). Headers keep arrival order with canonical names. After reading a chunked body
 * to the end, `trailers(request.body)` returns its trailers (without the fields that may not
 * trail, which are dropped).
 *
 * For pipelining and keep-alive, read the body to its end before reading the next request from
 * the same source. A stream or async iterable source keeps its reader between calls (see
 * {@link ByteReader.from}); a Uint8Array source is read from its start on each call, so pass a
 * `ByteReader` over it to read several messages.
 *
 * Throws `ParseError` for bytes that do not parse (including a stream that ends before or
 * inside the head, a request target its method may not use and an invalid Host value) and
 * `ProtocolError` for framing conflicts, a missing (HTTP/1.1) or repeated Host, and exceeded
 * limits. An absolute-form target's authority replaces the Host value (RFC 9112 §3.2.2).
 */
export async function readRequest(source: ByteSourceInit, options: ReadRequestOptions = {}): Promise<Request> {
  const reader = ByteReader.from(source);
  const parser = new HeadParser('request', options);
  await readHead(reader, parser, 'request');
  const kind = requestBodyKind(parser);
  const body = makeBody(reader, kind, parser);
  // An absolute-form target has put its authority there (RFC 9112 §3.2.2).
  const host = parser.headers.get('Host') ?? null;
  return new Request(parser.method, parser.target, {
    headers: parser.headers,
    copyHeaders: false,
    body,
    host,
    contentLength: kind === 'chunked' ? -1 : kind === 'none' ? 0 : parser.contentLength,
    protoMajor: 1,
    protoMinor: parser.versionMinor,
    close: !parser.keepAlive,
  });
}

/**
 * Reads one response from `source` (client side). Interim 1xx responses are skipped (passed to
 * `onInformational`) unless `returnInformational` is set; 101 Switching Protocols is returned
 * with no body, the bytes after its head staying in the source for the new protocol.
 *
 * Body: `nobody` for HEAD responses, 1xx, 204, 304, 2xx to CONNECT and `Content-Length: 0`;
 * otherwise an {@link IncomingBody}: fixed length, chunked, or until the stream ends (no
 * Content-Length, or a Transfer-Encoding whose final coding is not chunked). `close` is true
 * when the connection cannot be reused (`Connection: close`, HTTP/1.0 without keep-alive, or a
 * body delimited by the end of the stream). Errors as for {@link readRequest}.
 */
export async function readResponse(source: ByteSourceInit, options: ReadResponseOptions = {}): Promise<Response> {
  const reader = ByteReader.from(source);
  const request = options.request ?? null;
  const method = request !== null ? request.method : options.method;
  const parser = new HeadParser('response', options);
  for (;;) {
    await readHead(reader, parser, 'response');
    const status = parser.status;
    const kind = responseBodyKind(parser, method);
    const body = makeBody(reader, kind, parser);
    const response = new Response(status, body, {
      headers: parser.headers,
      copyHeaders: false,
      reason: parser.reason,
      contentLength: kind === 'length' ? parser.contentLength : kind === 'none' ? 0 : -1,
      protoMajor: 1,
      protoMinor: parser.versionMinor,
      close: !parser.keepAlive || kind === 'close',
      request,
    });
    if (status >= 200 || status === 101 || options.returnInformational === true) return response;
    options.onInformational?.(response);
    parser.reset();
  }
}
