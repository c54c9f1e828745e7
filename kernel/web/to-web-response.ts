/**
 * A switchyard `Response` as the web's (the Fetch standard's global `Response`), its body a
 * byte stream read from the switchyard body as the reader asks.
 */
import { ArgumentError } from '../errors.js';
import { Buffer } from 'node:buffer';
import * as nodeStream from 'node:stream';
import { FlowBody } from '../client/flow-body.js';
import { AbstractBody, readAll, type Body } from '../message/body.js';
import type { Response } from '../message/response.js';
import { toWebHeaders } from './headers.js';
import { readableOfBody } from './readable.js';

const kUrl = Symbol('url');
const kRedirected = Symbol('redirected');
/** The switchyard body the web body is read from (null: none, as for HEAD or 204). */
const kSource = Symbol('source');
/** The web stream over {@link kSource}, made when `body` is first asked for. */
const kStream = Symbol('stream');
/** The body was taken by a reading method (`text()`, …) without a stream. */
const kUsed = Symbol('used');
/** Maps a read error of the source to the one the body fails with. */
const kFailure = Symbol('failure');
/** The fetch's signal: once it aborts, the body fails with its reason, even if its bytes are in. */
const kSignal = Symbol('signal');

const EMPTY = new Uint8Array(0);
/** Node's test for a web stream that was read from or cancelled (in `node:stream` since 16.8, not in its typings). */
const isDisturbed = (nodeStream as unknown as { isDisturbed(stream: ReadableStream): boolean }).isDisturbed;
const decoder = new TextDecoder();

/**
 * The response class, defined at its first use: reading `globalThis.Response` loads Node's
 * fetch implementation (and with it `tls` and `zlib`), which a program that never converts a
 * response should not pay for.
 */
function defineWebResponse() {
  /** The global `Response`'s constructor, typed as a plain class (its typings declare its members as fields, which a subclass cannot redefine as accessors). */
  const WebBase = globalThis.Response as unknown as new (body: null, init: globalThis.ResponseInit) => object;

  /**
   * The global `Response` with the `url`, `redirected` and `type` a fetch gives (the web type's
   * constructor leaves them empty, false and `'default'`, and has no way to set them), and a
   * body made on demand: the web `ReadableStream` (a costly object in Node) exists only once
   * `body` is read; `text()`, `arrayBuffer()`, `json()`, `bytes()` and `blob()` read the
   * switchyard body directly. Everything else (status, headers) is the web type's own.
   */
  class WebResponse extends WebBase {
    [kUrl] = '';
    [kRedirected] = false;
    [kSource]: AbstractBody | Uint8Array | null = null;
    [kStream]: ReadableStream<Uint8Array> | null = null;
    [kUsed] = false;
    [kFailure]: ((err: unknown) => unknown) | null = null;
    [kSignal]: AbortSignal | null = null;

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

    /** The body as a readable byte stream (made on first use), or null for a response without one. */
    get body(): ReadableStream<Uint8Array> | null {
      let stream = this[kStream];
      if (stream === null) {
        const src = this[kSource];
        if (src === null) return null;
        const signal = this[kSignal];
        if (signal !== null && signal.aborted) {
          // Aborted before the body was asked for: the stream is errored with the reason, as fetch's is at the abort.
          if (src instanceof AbstractBody) src.close();
          const reason: unknown = signal.reason;
          return (this[kStream] = new ReadableStream({ start: (c) => c.error(reason) }));
        }
        stream = this[kStream] = src instanceof AbstractBody ? readableOfBody(src, this[kFailure] ?? undefined) : bytesStream(this[kUsed] ? EMPTY : src);
      }
      return stream;
    }

    /** True once the body was read (or its stream disturbed). */
    get bodyUsed(): boolean {
      const stream = this[kStream];
      return this[kUsed] || (stream !== null && isDisturbed(stream));
    }

    /** The body's bytes as an ArrayBuffer. */
    async arrayBuffer(): Promise<ArrayBuffer> {
      const b = await this.consume();
      return b.byteOffset === 0 && b.byteLength === b.buffer.byteLength ? (b.buffer as ArrayBuffer) : (b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer);
    }

    /** The body's bytes. */
    async bytes(): Promise<Uint8Array> {
      const b = await this.consume();
      return b.byteOffset === 0 && b.byteLength === b.buffer.byteLength ? b : new Uint8Array(b);
    }

    /** The body decoded as UTF-8 (a BOM dropped). */
    async text(): Promise<string> {
      return decoder.decode(await this.consume());
    }

    /** The body parsed as JSON. */
    async json(): Promise<unknown> {
      return JSON.parse(await this.text()) as unknown;
    }

    /** The body as a Blob of the response's Content-Type. */
    async blob(): Promise<Blob> {
      const bytes = await this.consume();
      return new Blob([bytes], { type: (this as unknown as globalThis.Response).headers.get('content-type') ?? '' });
    }

    /** The body parsed as a form (multipart or urlencoded), by the web type's own parser. */
    async formData(): Promise<FormData> {
      const bytes = await this.consume();
      return new globalThis.Response(bytes, { headers: (this as unknown as globalThis.Response).headers }).formData();
    }

    /** A copy whose body tees this one's, keeping `url`, `redirected` and `type`. */
    clone(): WebResponse {
      if (this.bodyUsed || (this[kStream]?.locked ?? false)) throw new TypeError('Response.clone: Body has already been consumed.');
      const self = this as unknown as globalThis.Response;
      const copy = new WebResponse(null, { status: self.status, statusText: self.statusText, headers: self.headers });
      copy[kUrl] = this[kUrl];
      copy[kRedirected] = this[kRedirected];
      const stream = this.body;
      if (stream !== null) {
        const [mine, theirs] = stream.tee();
        this[kStream] = mine;
        copy[kSource] = EMPTY;
        copy[kStream] = theirs;
      }
      return copy;
    }

    /** Takes the whole body once (a second time: the standard's TypeError). */
    private async consume(): Promise<Uint8Array> {
      if (this.bodyUsed) throw new TypeError('Body is unusable: Body has already been read');
      const stream = this[kStream];
      if (stream !== null) {
        if (stream.locked) throw new TypeError('Body is unusable: Body has already been read');
        return new Uint8Array(await new globalThis.Response(stream).arrayBuffer());
      }
      this[kUsed] = true;
      const src = this[kSource];
      const signal = this[kSignal];
      if (signal !== null && signal.aborted) {
        if (src instanceof AbstractBody) src.close();
        throw signal.reason;
      }
      if (src === null) return EMPTY;
      if (!(src instanceof AbstractBody)) return src;
      try {
        return await readWhole(src);
      } catch (err) {
        const failure = this[kFailure];
        throw failure === null ? err : failure(err);
      } finally {
        src.close();
      }
    }
  }
  return WebResponse;
}

let WebResponseClass: ReturnType<typeof defineWebResponse> | null = null;

/** All of a streamed body: into one buffer of its length when it is known, else chunk by chunk. */
async function readWhole(body: AbstractBody): Promise<Uint8Array> {
  if (body instanceof FlowBody) return body.readRest();
  const known = body.length;
  if (known < 0) return readAll(body);
  const out = new Uint8Array(known);
  let at = 0;
  while (at < known) {
    const n = await body.read(out.subarray(at));
    if (n === 0) break;
    at += n;
  }
  return at === known ? out : out.subarray(0, at);
}

/** A byte stream of `bytes` (copied: the stream takes its buffer over). */
function bytesStream(bytes: Uint8Array): ReadableStream<Uint8Array> {
  return new ReadableStream({
    type: 'bytes',
    start(controller) {
      if (bytes.length > 0) controller.enqueue(new Uint8Array(bytes));
      controller.close();
    },
  });
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
 * `failure` to map an error of the streamed body (see `readableOfBody`), and its `signal`. A
 * body the web response cannot have (HEAD, 204, 304) is closed.
 */
export function webResponse(res: Response, url: string, redirected: boolean, failure: ((err: unknown) => unknown) | null, head = false, signal: AbortSignal | null = null): globalThis.Response {
  const status = res.status;
  if (status < 200 || status > 599) throw new ArgumentError(`a web Response holds a status of 200 to 599, got ${status}`);
  const out = new (WebResponseClass ??= defineWebResponse())(null, { status, statusText: res.reason, headers: toWebHeaders(res.headers) });
  out[kUrl] = url;
  out[kRedirected] = redirected;
  out[kFailure] = failure;
  out[kSignal] = signal;
  out[kSource] = head || nullBodyStatus(status) ? drop(res.body) : sourceOf(res.body);
  return out as unknown as globalThis.Response;
}

/** What the web body is read from: a streamed body as it is, anything else as bytes. */
function sourceOf(body: Body): AbstractBody | Uint8Array {
  if (body instanceof AbstractBody || body instanceof Uint8Array) return body;
  return body === null ? EMPTY : Buffer.from(body, 'utf8');
}

/** Closes a body the web response will not carry. */
function drop(body: Body): null {
  if (body instanceof AbstractBody) body.close();
  return null;
}
