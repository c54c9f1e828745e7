/**
 * Stream: one HTTP exchange on a server connection, read and written by a stream handler.
 *
 * Response states (the reference's "Server response (stream)" rows):
 * - head not started: `setStatus`/`setHeader` allowed;
 * - head started (`startWrite` or the first write): they throw `ArgumentError`;
 * - the head goes to the wire at `startWrite` or the first write; the wire frames the body. A
 *   body longer or shorter than its Content-Length throws `ProtocolError`. Over HTTP/1.1 the
 *   wire holds a fixed-length response until `closeWrite` or until the body passes
 *   `HOLD_BYTES` (4 KiB), so a handler that throws or writes the wrong number of bytes still gets
 *   a clean 500 instead of a malformed body; once bytes went out, a failure closes the
 *   connection (HTTP/2: resets the stream);
 * - a response of unknown length (chunked over HTTP/1.1) carries trailers; a response with
 *   Content-Length drops them;
 * - `closeWrite(body)` before any write hands head and body to the wire together, as a request
 *   handler's answer goes: nothing held, no chunked framing.
 */
import { Buffer } from 'node:buffer';
import type { Duplex } from 'node:stream';
import { ArgumentError, ProtocolError } from '../errors.js';
import { eqIgnoreCase, Headers, type HeaderPair, type HeadersInit } from '../message/headers.js';
import { AbstractBody } from '../message/body.js';
import type { Request } from '../message/request.js';
import { Response } from '../message/response.js';
import type { PeerAddress, ServerExchange, ServerInfo, UpgradeInfo } from '../hooks.js';
import { checkTrailerName } from '../http1/serialize.js';
import { parseContentLength } from '../http1/head-parser.js';
import { responseHasNoBody } from '../http1/framing.js';
import type { PeerAddr } from './peer.js';
import type { ExchangeWire } from './protocol-host.js';
import { publishUpgrade } from '../diagnostics.js';

const DONE: Promise<void> = Promise.resolve();

/** What a {@link Stream} needs from the server it runs on, whatever the protocol. */
export interface StreamHost {
  /** The listener, as hooks see it. */
  readonly info: ServerInfo;
  /** True when `onResponseHead` has taps (else the head is not built as a Response for them). */
  readonly tapsResponseHead: boolean;
  /** Runs the `onResponseHead` taps, if any. */
  responseHead(response: Response, request: Request): void;
}

const enum Mode {
  Undecided,
  /** No body allowed (HEAD, 1xx, 204, 304): writes are dropped. */
  None,
  /** The head went to the wire, the body is streamed through it. */
  Wire,
}

/** The Content-Length a HEAD answer declares (what a GET would send), -1 when none. */
function headLength(h: Headers): number {
  const v = h.get('Content-Length');
  return v === undefined ? -1 : parseContentLength(v);
}

/** One server exchange as a stream handler sees it. */
export class Stream implements ServerExchange {
  /** The request head; its body stays on the stream. The reference's `stream.message`. */
  readonly request: Request;
  /** The wire's protocol: `http/1.1`, `h2`. */
  readonly protocol: string;
  private readonly wire: ExchangeWire;
  private readonly host: StreamHost;
  private status = 200;
  private reason = '';
  /** Made on first use: a handler that sets no header costs none. */
  private fields: Headers | null = null;
  private trailerFields: Headers | null = null;
  private headStarted = false;
  private mode = Mode.Undecided;
  private declared = -1;
  private sent = 0;
  private writeClosed = false;
  private readClosed = false;
  private readEnded = false;
  private committed = false;

  /** @internal Made by the server's pipeline for each request, on the exchange's wire. */
  constructor(request: Request, wire: ExchangeWire, host: StreamHost) {
    this.request = request;
    this.wire = wire;
    this.host = host;
    this.protocol = wire.protocol;
  }

  /** The response headers being built. */
  private get headers(): Headers {
    return (this.fields ??= new Headers());
  }

  /** The request message (the reference's `stream.message`). */
  get message(): Request {
    return this.request;
  }

  /** The listener. */
  get server(): ServerInfo {
    return this.host.info;
  }

  /** The request head; the body stays on the stream (read it with {@link Stream.read}). */
  startRead(): Promise<Request> {
    return Promise.resolve(this.request);
  }

  /** The client's address: `String(addr)` is `ip:port`, `addr.ip` the bytes, `addr.port` the port. */
  peerAddr(): PeerAddr & PeerAddress {
    return this.wire.peerAddr();
  }

  // ---- reading -------------------------------------------------------------------------

  /** The next chunk of the request body, or null at its end. */
  async read(): Promise<Uint8Array | null> {
    if (this.readClosed || this.readEnded) return null;
    if (!this.headStarted) this.wire.sendContinue();
    const chunk = await this.wire.readBody();
    if (chunk === null) this.readEnded = true;
    return chunk;
  }

  /** Reads up to `dst.length` body bytes into `dst`; resolves to the count, 0 at the end. */
  async readBytes(dst: Uint8Array): Promise<number> {
    if (!(dst instanceof Uint8Array)) throw new ArgumentError(`readBytes takes a Uint8Array, got ${typeof dst}`);
    if (dst.length === 0) return 0;
    let pending = this.leftover;
    if (pending === null) {
      pending = await this.read();
      if (pending === null) return 0;
    }
    const n = Math.min(dst.length, pending.length);
    dst.set(pending.subarray(0, n), 0);
    this.leftover = n < pending.length ? pending.subarray(n) : null;
    return n;
  }

  private leftover: Uint8Array | null = null;

  /** Reads the rest of the body into one buffer; `limit` bounds it (ProtocolError past it). */
  async readAll(limit = Infinity): Promise<Uint8Array> {
    const chunks: Uint8Array[] = [];
    let total = 0;
    if (this.leftover !== null) {
      chunks.push(this.leftover);
      total = this.leftover.length;
      this.leftover = null;
    }
    for (;;) {
      const c = await this.read();
      if (c === null) break;
      total += c.length;
      if (total > limit) throw new ProtocolError(`request body exceeds ${limit} bytes`, { limit: 'maxBodyBytes' });
      chunks.push(c);
    }
    return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total);
  }

  /** Iterates the request body chunk by chunk. */
  async *[Symbol.asyncIterator](): AsyncGenerator<Uint8Array> {
    if (this.leftover !== null) {
      const l = this.leftover;
      this.leftover = null;
      yield l;
    }
    for (;;) {
      const c = await this.read();
      if (c === null) return;
      yield c;
    }
  }

  /**
   * Closes the read side: unread body bytes are discarded and the connection is closed after
   * this exchange instead of reused. Returns the response being built.
   */
  closeRead(): Response {
    if (!this.readClosed) {
      this.readClosed = true;
      if (!this.readEnded) this.wire.discardBody();
    }
    return this.response();
  }

  // ---- the response head ---------------------------------------------------------------

  /** Sets the response status; before the head starts, else `ArgumentError`. */
  setStatus(status: number, reason = ''): void {
    this.checkHeadOpen('setStatus');
    if (!Number.isInteger(status) || status < 100 || status > 999) throw new ArgumentError(`status must be an integer 100..999, got ${String(status)}`);
    if (status < 200) throw new ArgumentError(`setStatus(${status}): interim 1xx responses are sent by the server itself`);
    this.status = status;
    this.reason = reason;
  }

  /** Sets a response header, replacing earlier values; before the head starts, else `ArgumentError`. */
  setHeader(name: string | HeaderPair, value?: string): void {
    this.checkHeadOpen('setHeader');
    if (Array.isArray(name)) {
      value = name[1];
      name = name[0];
    }
    if (typeof name !== 'string' || typeof value !== 'string') throw new ArgumentError('setHeader takes (name, value) strings or a [name, value] pair');
    this.headers.set(name as string, value);
  }

  /** Adds a response header value (Set-Cookie stays separate); before the head starts. */
  appendHeader(name: string, value: string): void {
    this.checkHeadOpen('appendHeader');
    this.headers.append(name, value);
  }

  /**
   * Adds trailers, sent after a chunked body (dropped for a response with Content-Length).
   * Throws `ArgumentError` for a field that may not trail (Content-Length, Transfer-Encoding,
   * Host, Content-Type, Authorization, ...: `FORBIDDEN_TRAILERS`, RFC 9110 §6.5.1); when given
   * several fields, none is added then.
   */
  addTrailer(nameOrHeaders: string | HeaderPair | HeadersInit, value?: string): void {
    if (this.writeClosed) throw new ArgumentError('addTrailer after closeWrite');
    if (typeof nameOrHeaders === 'string') {
      if (typeof value !== 'string') throw new ArgumentError(`addTrailer(${JSON.stringify(nameOrHeaders)}, value) needs a string value`);
      checkTrailerName(nameOrHeaders);
      (this.trailerFields ??= new Headers()).append(nameOrHeaders, value);
    } else if (Array.isArray(nameOrHeaders) && nameOrHeaders.length === 2 && typeof nameOrHeaders[0] === 'string') {
      checkTrailerName(nameOrHeaders[0]);
      (this.trailerFields ??= new Headers()).append(nameOrHeaders[0], String(nameOrHeaders[1]));
    } else {
      const add = new Headers(nameOrHeaders as HeadersInit);
      for (const name of add._names) checkTrailerName(name);
      const t = (this.trailerFields ??= new Headers());
      for (const [k, v] of add) t.push(k, v);
    }
  }

  /** True once the head has started (after `startWrite` or the first write). */
  get headersSent(): boolean {
    return this.headStarted;
  }

  private checkHeadOpen(what: string): void {
    if (this.headStarted) throw new ArgumentError(`${what}: the response head has already started (after startWrite or the first write)`);
  }

  /**
   * Takes the connection over for another protocol (WebSockets): the handler writes the
   * `101` itself and owns the socket from here; the server forgets the connection once the
   * handler returns (it is no longer counted by `close()`/`forceClose()`). The socket comes
   * paused; `head` holds the bytes the client sent past the request head; `server` and `host`
   * are the server's, as a `server.onUpgrade` tap gets them (`host.onGoingAway`). Throws
   * `ArgumentError` once any of the response was written, when the request still has an
   * unread body, or over a protocol that cannot hand a socket over (HTTP/2).
   */
  upgrade(): { socket: Duplex } & UpgradeInfo {
    if (this.upgraded) throw new ArgumentError('the stream was already upgraded');
    if (this.headStarted || this.writeClosed) throw new ArgumentError('cannot upgrade: the response has already started');
    const take = this.wire.takeSocket;
    if (take === undefined) throw new ArgumentError(`cannot upgrade a ${this.protocol} stream: only HTTP/1.1 connections can change protocol`);
    const taken = take.call(this.wire);
    publishUpgrade(this.request);
    this.upgraded = true;
    this.headStarted = true;
    this.committed = true;
    this.writeClosed = true;
    this.readClosed = true;
    const listeners = this.upgradeListeners;
    if (listeners !== null) {
      this.upgradeListeners = null;
      try {
        for (const l of listeners) l();
      } catch (err) {
        // The caller gets the error instead of the socket, so nobody would close it.
        taken.socket.destroy();
        throw err;
      }
    }
    return taken;
  }

  /** True once {@link Stream.upgrade} handed the socket over. */
  get isUpgraded(): boolean {
    return this.upgraded;
  }

  /**
   * Runs `listener` once {@link Stream.upgrade} has handed the socket over, while the new
   * protocol is only starting (an access log records the switch here, not when the
   * connection ends); at once if the stream was upgraded already. A listener that throws
   * fails the upgrade: the socket is destroyed and `upgrade()` throws that error.
   */
  onUpgraded(listener: () => void): void {
    if (typeof listener !== 'function') throw new ArgumentError(`onUpgraded(listener): listener must be a function, got ${typeof listener}`);
    if (this.upgraded) listener();
    else (this.upgradeListeners ??= []).push(listener);
  }

  private upgraded = false;
  private upgradeListeners: (() => void)[] | null = null;

  /** The response as built so far (status, headers, trailers). */
  response(): Response {
    const r = new Response(this.status, null, { headers: this.headers, copyHeaders: false, reason: this.reason, request: this.request });
    if (this.trailerFields !== null) r.trailers = this.trailerFields;
    return r;
  }

  /**
   * Starts the response: after this, status and headers are fixed. A chunked response sends
   * its head now; a fixed-length one holds it with the body (see the module notes).
   */
  startWrite(): Response {
    if (!this.headStarted) this.decide();
    return this.response();
  }

  private decide(ending = false): void {
    const h = this.settle();
    const wire = this.wire;
    if (this.mode === Mode.None) {
      this.writeClosed = ending;
      wire.head(this.status, h, headLength(h), true, false, this.reason);
      return;
    }
    if (ending && this.declared <= 0 && this.trailerFields === null) {
      this.writeClosed = true;
      wire.head(this.status, h, 0, true, false, this.reason);
      return;
    }
    wire.head(this.status, h, this.declared, false, true, this.reason);
  }

  /**
   * Fixes the head before it goes to the wire: `onResponseHead` taps, then whether a body may
   * follow (`mode`) and its declared length (`length` when no Content-Length field gives one,
   * -1: none). Returns the headers to send.
   */
  private settle(length = -1): Headers {
    this.headStarted = true;
    if (this.host.tapsResponseHead) {
      const r = this.response();
      this.host.responseHead(r, this.request);
      // A tap may have changed the status (headers are shared with `r`).
      this.status = r.status;
      this.reason = r.reason;
    }
    const h = this.headers;
    h.delete('Transfer-Encoding');
    this.committed = true;
    if (responseHasNoBody(this.status, this.request.method)) {
      this.mode = Mode.None;
      if (this.status === 204 || this.status < 200) h.delete('Content-Length');
      return h;
    }
    const cl = h.indexOf('Content-Length');
    if (cl >= 0) {
      const n = parseContentLength(h.getAll('Content-Length').join(', '));
      if (n < 0) throw new ArgumentError(`invalid Content-Length header "${h.valueAt(cl)}"`);
      this.declared = n;
    } else if (length >= 0) this.declared = length;
    this.mode = Mode.Wire;
    return h;
  }

  // ---- writing -------------------------------------------------------------------------

  /** Writes body bytes (a string is UTF-8); starts the head when needed. */
  write(data: Uint8Array | string): Promise<void> {
    try {
      if (this.writeClosed) throw new ArgumentError('write after closeWrite');
      return this.send(typeof data === 'string' ? Buffer.from(data, 'utf8') : data, typeof data === 'string') ?? DONE;
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** `write` without its Promise when the wire does not ask to wait; `owned`: the bytes are the stream's own. */
  private send(bytes: Uint8Array, owned: boolean): Promise<void> | undefined {
    if (!(bytes instanceof Uint8Array)) throw new ArgumentError(`write takes a Uint8Array or string, got ${typeof bytes}`);
    if (!this.headStarted) this.decide();
    if (!this.wire.writable) throw new ProtocolError('cannot write: the client closed the connection');
    if (bytes.length === 0) return undefined;
    if (this.mode === Mode.None) return undefined;
    if (this.declared >= 0 && this.sent + bytes.length > this.declared) {
      throw new ProtocolError(`response body exceeds its Content-Length of ${this.declared} bytes`);
    }
    this.sent += bytes.length;
    // The wire copies what it keeps, as its protocol lets it out.
    return this.wire.data(bytes, false, owned);
  }

  /**
   * Ends the response body: a held fixed-length response goes out now (or, when its length
   * is wrong, fails with ProtocolError so the server can still answer 500); a chunked one
   * sends the last chunk and its trailers.
   *
   * `last` (a string is UTF-8) is the body's last bytes, as if written just before. When
   * nothing was written yet, it is the whole body: the head, with its `Content-Length` (the
   * one set, else the body's own; chunked instead when trailers were added), and the body go
   * to the wire together, as a request handler's answer does: the cheapest way to send a
   * short response. The wire may keep `last` until it is sent: do not change its bytes
   * afterwards. `ArgumentError` after the response ended.
   */
  closeWrite(last?: Uint8Array | string): Promise<void> {
    try {
      return this.finishWrite(last) ?? DONE;
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** @internal {@link Stream.closeWrite} without its Promise when the wire does not ask to wait (the server's and the fetch handler's). */
  finishWrite(last?: Uint8Array | string): Promise<void> | undefined {
    if (last !== undefined) {
      if (typeof last !== 'string' && !(last instanceof Uint8Array)) throw new ArgumentError(`closeWrite takes a Uint8Array or string, got ${typeof last}`);
      if (last.length > 0 && this.writeClosed) throw new ArgumentError('closeWrite(data) after closeWrite');
    }
    if (last !== undefined && last.length > 0) {
      if (!this.headStarted && this.trailerFields === null) return this.whole(last);
      const w = this.send(typeof last === 'string' ? Buffer.from(last, 'utf8') : last, typeof last === 'string');
      if (w !== undefined) return w.then(() => this.finishWrite());
    }
    if (this.writeClosed) return undefined;
    if (!this.headStarted) {
      // Nothing written: an empty body. Without a declared length, say 0 rather than chunked.
      if (!responseHasNoBody(this.status, this.request.method) && (this.fields === null || (!this.fields.has('Content-Length') && !this.fields.has('Transfer-Encoding')))) {
        this.headers.set('Content-Length', '0');
      }
      this.decide(true);
    }
    if (this.mode === Mode.None) {
      // The head went out with the body's end (a wire may still hold it until now).
      this.writeClosed = true;
      return this.wire.end(null);
    }
    if (this.writeClosed) {
      // Ended with the head itself (nothing to send): a wire that holds the head lets it go now.
      return this.wire.end(null);
    }
    if (this.declared >= 0 && this.sent !== this.declared) {
      // Nothing went out yet (the wire still holds it): the exchange can still be answered 500.
      const held = this.wire.committed === false;
      if (!held) this.writeClosed = true;
      throw new ProtocolError(
        `response body has ${this.sent} bytes but Content-Length says ${this.declared}${held ? '' : this.protocol === 'http/1.1' ? '; the connection is closed' : '; the stream is reset'}`,
      );
    }
    this.writeClosed = true;
    return this.wire.end(this.trailerFields !== null && this.trailerFields.size > 0 ? this.trailerFields : null);
  }

  /** The whole body, before the head: head and body in one go to the wire (no chunked framing, no held copy). */
  private whole(body: Uint8Array | string): Promise<void> | undefined {
    // A string goes to the wire as it is; only its length is needed here.
    const n = typeof body === 'string' ? Buffer.byteLength(body, 'utf8') : body.length;
    const h0 = this.headers;
    // The whole body's length, for the wire when no Content-Length field says it.
    let length = -1;
    if (!h0.has('Content-Length')) {
      // `onResponseHead` taps see the field the response will have; without taps the length
      // goes to the wire as a number, which writes the field itself (no string made and parsed back).
      if (this.host.tapsResponseHead) h0.set('Content-Length', String(n));
      else length = n;
    }
    const h = this.settle(length);
    const wire = this.wire;
    if (this.mode === Mode.None) {
      // HEAD, 204, 304: the head says what a GET would get (as a request handler's answer does); the body is dropped.
      this.writeClosed = true;
      // The field the body's length would have made (a 204 or 1xx has none).
      if (length >= 0 && this.status !== 204 && this.status >= 200) h.set('Content-Length', String(length));
      wire.head(this.status, h, headLength(h), true, false, this.reason);
      return wire.end(null);
    }
    if (this.declared !== n) {
      // A length the handler set that the body does not match: as a write then closeWrite
      // would go (the failure tells which).
      wire.head(this.status, h, this.declared, false, true, this.reason);
      const w = this.send(typeof body === 'string' ? Buffer.from(body, 'utf8') : body, typeof body === 'string');
      return w === undefined ? this.finishWrite() : w.then(() => this.finishWrite());
    }
    if (!wire.writable) throw new ProtocolError('cannot write: the client closed the connection');
    this.sent = n;
    this.writeClosed = true;
    wire.head(this.status, h, n, false, false, this.reason);
    return wire.data(body, true);
  }

  /** @internal True once any byte of the response went out (a failure then closes the connection or resets the stream). */
  get isCommitted(): boolean {
    return this.committed && this.wire.committed !== false;
  }

  /** @internal True when the response was ended cleanly. */
  get isWriteClosed(): boolean {
    return this.writeClosed;
  }

  /** @internal True when the body was read to its end (or discarded). */
  get bodyDone(): boolean {
    return this.readEnded || this.readClosed;
  }
}

/** Writes a whole Response through a stream (a hook's answer in stream-handler mode; `streamHandler`). */
export async function writeResponseToStream(stream: Stream, res: Response): Promise<void> {
  stream.setStatus(res.status, res.reason);
  if (res.close) stream.setHeader('Connection', 'close');
  for (const [k, v] of res.headers) {
    if (eqIgnoreCase(k, 'content-length') || eqIgnoreCase(k, 'transfer-encoding')) continue;
    stream.appendHeader(k, v);
  }
  // Before any byte: trailers that may not be sent are refused while a 500 can still go out.
  if (res.hasTrailers) stream.addTrailer(res.trailers);
  const body = res.body;
  if (body instanceof AbstractBody) {
    const known = res.contentLength >= 0 ? res.contentLength : body.length;
    if (known >= 0) stream.setHeader('Content-Length', String(known));
    else if (res.headers.has('Content-Length')) stream.setHeader('Content-Length', res.headers.get('Content-Length')!);
    try {
      for await (const chunk of body) await stream.write(chunk);
    } finally {
      body.close();
    }
  } else if (body !== null && body.length > 0) {
    // The length set first, so trailers (dropped with it) do not make it chunked.
    stream.setHeader('Content-Length', String(typeof body === 'string' ? Buffer.byteLength(body, 'utf8') : body.length));
    await stream.closeWrite(body);
    return;
  } else if (res.headers.has('Content-Length') && (stream.request.method === 'HEAD' || res.status === 304)) {
    stream.setHeader('Content-Length', res.headers.get('Content-Length')!);
  }
  await stream.closeWrite();
}
