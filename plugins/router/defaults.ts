/**
 * The router's built-in answers: an empty 404 for a path without a route, an empty 405 with
 * `Allow` for a path whose routes do not take the method; for request and stream handlers.
 */
import { Headers, Response, type Stream } from '../../kernel/index.js';

/** The default 404 of a request handler: empty body. */
export function notFoundResponse(): Response {
  return new Response(404);
}

/** The default 405 of a request handler: empty body, `Allow` listing the accepted methods. */
export function methodNotAllowedResponse(allow: string): Response {
  return new Response(405, null, { headers: [['Allow', allow]] });
}

/** Writes an empty response with `status` on a stream. */
export async function emptyStreamResponse(stream: Stream, status: number): Promise<void> {
  stream.setStatus(status);
  await stream.closeWrite();
}

/**
 * A custom 405 handler's response with `Allow` added when it set none. The response is copied
 * rather than changed: a handler may return one Response object for many requests.
 */
export function withAllow(res: Response, allow: string): Response {
  if (!(res instanceof Response) || res.headers.has('Allow')) return res;
  const headers: Headers = res.headers.clone();
  headers.set('Allow', allow);
  const copy = new Response(res.status, res.body, {
    headers,
    copyHeaders: false,
    reason: res.reason,
    contentLength: res.contentLength,
    close: res.close,
    request: res.request,
  });
  if (res.hasTrailers) copy.trailers = res.trailers;
  return copy;
}
