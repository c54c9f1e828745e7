/** A shallow copy of a response for `server.onResponseHead` taps, shared by the HTTP/1 connection and the protocol pipeline. */
import type { Headers } from '../message/headers.js';
import { Response } from '../message/response.js';

/**
 * A shallow copy of `res` with its own `headers`, for taps that must not touch the original
 * (a handler may return one Response object for many requests).
 */
export function copyResponse(res: Response, headers: Headers): Response {
  const c = new Response(res.status, res.body, {
    headers,
    copyHeaders: false,
    reason: res.reason,
    contentLength: res.contentLength,
    protoMajor: res.protoMajor,
    protoMinor: res.protoMinor,
    close: res.close,
    request: res.request,
  });
  if (res.hasTrailers) c.trailers = res.trailers.clone();
  return c;
}
