/**
 * A switchyard `Response` as the web's (the Fetch standard's global `Response`), its body a
 * byte stream read from the switchyard body as the reader asks.
 */
import { ArgumentError } from '../errors.js';
import { AbstractBody, type Body } from '../message/body.js';
import type { Response } from '../message/response.js';
import { toWebHeaders } from './headers.js';
import { readableOfBody } from './readable.js';

const kUrl = Symbol('url');
const kRedirected = Symbol('redirected');

/** The global `Response`'s constructor, typed as a plain class (its typings declare `url`, `type`, `clone` as fields, which a subclass cannot redefine as accessors). */
const WebBase = globalThis.Response as unknown as new (body: ReadableStream<Uint8Array> | Uint8Array | string | null, init: globalThis.ResponseInit) => object;
const webClone = globalThis.Response.prototype.clone;

/**
 * The global `Response` with the `url`, `redirected` and `type` a fetch gives (the web type's
 * constructor leaves them empty, false and `'default'`, and has no way to set them).
 */
class WebResponse extends WebBase {
  [kUrl] = '';
  [kRedirected] = false;

  /** The final URL of the exchange (after redirects), '' when unknown. */
  get url(): string {
    return this[kUrl];
  }

  /** True when the exchange followed at least one redirect. */
  get redirected(): boolean {
    return this[kRedirected];
  }

  /** `'basic'`, as Node's `fetch` gives for every response it receives. */
  get type(): 'basic' {
    return 'basic';
  }

  /** A copy whose body tees this one's, keeping `url`, `redirected` and `type`. */
  clone(): WebResponse {
    const copy = webClone.call(this) as unknown as WebResponse;
    Object.setPrototypeOf(copy, WebResponse.prototype);
    copy[kUrl] = this[kUrl];
    copy[kRedirected] = this[kRedirected];
    return copy;
  }
}

/** Statuses whose response has no body in the web type (its constructor refuses one). */
function nullBodyStatus(status: number): boolean {
  return status === 101 || status === 103 || status === 204 || status === 205 || status === 304;
}

/**
 * The global `Response` for `res`: its status, reason (`statusText`), header fields (through
 * `toWebHeaders`) and `url`; the body streams (a streamed body is read as the web body is, and
 * cancelling that closes it). Trailers are dropped: the web type has none. A status outside
 * 200–599, which the web type cannot hold, is an `ArgumentError`.
 */
export function toWebResponse(res: Response): globalThis.Response {
  return webResponse(res, res.url, false, null);
}

/**
 * @internal {@link toWebResponse} with what a fetch knows besides: whether it was redirected,
 * and `failure` to map an error of the streamed body (see `readableOfBody`). A body the web
 * response cannot have (HEAD, 204, 304) is closed.
 */
export function webResponse(res: Response, url: string, redirected: boolean, failure: ((err: unknown) => unknown) | null, head = false): globalThis.Response {
  const status = res.status;
  if (status < 200 || status > 599) throw new ArgumentError(`a web Response holds a status of 200 to 599, got ${status}`);
  const out = new WebResponse(head || nullBodyStatus(status) ? drop(res.body) : webBody(res.body, failure), {
    status,
    statusText: res.reason,
    headers: toWebHeaders(res.headers),
  });
  out[kUrl] = url;
  out[kRedirected] = redirected;
  return out as unknown as globalThis.Response;
}

/** The web body of a switchyard body. */
function webBody(body: Body, failure: ((err: unknown) => unknown) | null): ReadableStream<Uint8Array> | Uint8Array | string | null {
  if (body instanceof AbstractBody) return readableOfBody(body, failure ?? undefined);
  return body;
}

/** Closes a body the web response will not carry. */
function drop(body: Body): null {
  if (body instanceof AbstractBody) body.close();
  return null;
}
