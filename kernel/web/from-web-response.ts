/**
 * The web's global `Response` as a switchyard `Response`, and the one way to get at a web
 * response's body without a stream round trip when it was made from a string or bytes.
 */
import { ArgumentError } from '../errors.js';
import { IterableBody } from '../client/request-body.js';
import { describeType } from '../message/message.js';
import { Response } from '../message/response.js';
import type { Body } from '../message/body.js';
import { fromWebHeaders } from './headers.js';
import { isLight, lightBody, nativeResponse } from './light-response.js';

/** What a web response's body was made from, as far as it can be read without its stream. */
type Source = string | Uint8Array | null | undefined;

// undici (Node's fetch) keeps a response's state, and in it the body's source (the string or
// bytes it was made from), under a symbol described `state`. Reading it saves making and
// draining a ReadableStream for the most common body; where the platform keeps it elsewhere,
// the stream is read as usual. Looked up on first use: touching the platform's Response loads
// Node's fetch implementation.
let stateKey: symbol | null | undefined;

function platformStateKey(): symbol | null {
  if (stateKey === undefined) stateKey = Reflect.ownKeys(new (nativeResponse())(null)).find((k): k is symbol => typeof k === 'symbol' && k.description === 'state') ?? null;
  return stateKey;
}

/**
 * The bytes or string `response`'s body was made from, when the platform keeps them and its
 * stream was not touched yet (an instance of the platform's class or of the light one, not of a
 * subclass): null for no body, undefined when the body must be read from `response.body`.
 */
export function webBodySource(response: globalThis.Response): Source {
  if (isLight(response)) return lightBody(response);
  if (response.bodyUsed) return undefined;
  // Only the platform's class itself: a subclass (switchyard's fetch responses among them) may
  // keep its body elsewhere than the platform's state, and give it through `body`.
  const key = Object.getPrototypeOf(response) === nativeResponse().prototype ? platformStateKey() : null;
  if (key !== null) {
    const state = (response as unknown as Record<symbol, { body?: { source?: unknown; length?: number | null } | null } | undefined>)[key];
    if (state !== undefined) {
      const body = state.body;
      if (body == null) return null;
      const src = body.source;
      if (typeof src === 'string') return src;
      // A view over part of a buffer is kept whole by undici with its own length: only an exact one is used.
      if (src instanceof Uint8Array && src.byteLength === body.length) return src;
      return undefined;
    }
  }
  return response.body === null ? null : undefined;
}

/**
 * A switchyard `Response` for the web's `response`: status, status text as the reason phrase,
 * headers (each `Set-Cookie` field apart) and body: the bytes or string it was made from when
 * the platform keeps them, else its `ReadableStream` as a streamed body read as bytes are
 * written out (backpressure holds; closing the body cancels the stream). The web type has no
 * trailers, so the response has none. Throws `ArgumentError` for anything but a global
 * `Response`, and `TypeError` (as the web type does) when its body was already read.
 */
export function fromWebResponse(response: globalThis.Response): Response {
  if (!(response instanceof globalThis.Response)) throw new ArgumentError(`fromWebResponse takes a global Response, got ${describeType(response)}`);
  const src = webBodySource(response);
  let body: Body;
  if (src !== undefined) body = src;
  else {
    if (response.bodyUsed) throw new TypeError('fromWebResponse: the response body was already read');
    body = new IterableBody(response.body as ReadableStream<Uint8Array>);
  }
  return new Response(response.status, body, { headers: fromWebHeaders(response.headers), copyHeaders: false, reason: response.statusText });
}
