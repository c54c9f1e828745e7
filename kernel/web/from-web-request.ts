/**
 * The web's request (the Fetch standard's global `Request`) as a switchyard `Request`, ready
 * for `client.dispatch`: its body streams from the web body as the connection takes it.
 */
import { ArgumentError } from '../errors.js';
import { IterableBody } from '../client/request-body.js';
import { Request } from '../message/request.js';
import { fromWebHeaders } from './headers.js';

/**
 * A switchyard `Request` for `request`: its method, URL (`url`, `host` and the target; the
 * fragment dropped, as fetch does), header fields (through `fromWebHeaders`) and body, read
 * from the web body's stream as it is sent (chunked unless the fields hold a Content-Length).
 * The request's `signal` is not carried: pass it as the call's `signal` option. A request whose
 * body was read already is an `ArgumentError`.
 */
export function fromWebRequest(request: globalThis.Request): Request {
  if (!(request instanceof globalThis.Request)) throw new ArgumentError("fromWebRequest(request) takes a global Request (the Fetch standard's)");
  if (request.bodyUsed) throw new ArgumentError("fromWebRequest(request): the request's body was read already; pass request.clone() before reading it");
  const url = new URL(request.url);
  url.hash = '';
  const headers = fromWebHeaders(request.headers);
  const stream = request.body;
  let length = 0;
  if (stream !== null) {
    const cl = headers.get('content-length');
    length = cl !== undefined && /^\d+$/.test(cl) ? Number(cl) : -1;
  }
  const req = new Request(request.method, url.pathname + url.search, {
    headers,
    body: stream === null ? null : new IterableBody(stream),
    host: url.host,
    contentLength: length,
    copyHeaders: false,
  });
  req.url = url.href;
  return req;
}
