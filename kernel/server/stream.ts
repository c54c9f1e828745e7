/**
 * Stream: one HTTP exchange on a server connection, read and written by a stream handler.
 *
 * Response states (the reference's "Server response (stream)" rows):
 * - head not started: `setStatus`/`setHeader` allowed;
 * - head started (`startWrite` or the first write): they throw `ArgumentError`;
 * - a fixed-length (Content-Length) HTTP/1 response holds head and body until `closeWrite`,
 *   or until the body passes 4 KiB, so a handler that throws or writes the wrong number of
 *   bytes still gets a clean 500 instead of a malformed body; once streaming, a failure
 *   closes the connection;
 * - chunked responses send the head at once and carry trailers; a response with
 *   Content-Length drops them.
 */
import { Buffer } from 'node:buffer';
import type { Duplex } from 'node:stream';
import { ArgumentError, ProtocolError } from '../errors.js';
import { Headers, type HeaderPair, type HeadersInit } from '../message/headers.js';
import type { Request } from '../message/request.js';
import { Response } from '../message/response.js';
import type { PeerAddress, ServerExchange, ServerInfo, UpgradeInfo } from '../hooks.js';
import { checkTrailerName, encodeChunk, serializeFields, serializeLastChunk, serializeStatusLine } from '../http1/serialize.js';
import { parseContentLength } from '../http1/head-parser.js';
import { statusHasNoBody } from '../http1/framing.js';
import type { PeerAddr } from './peer.js';

/** A fixed-length body is held (not sent) until it grows past this many bytes. */
export const HOLD_BYTES = 4096;

/**
 * What a {@link Stream} needs from the connection it runs on, whatever the protocol: the
 * request body, the peer, the hooks. HTTP/1 adds byte-level writing ({@link StreamConnection});
 * a protocol that frames messages itself (HTTP/2) writes through a {@link ResponseWire}.
 */
export interface ExchangeConnection {
  /** The listener, as hooks see it. */
  readonly info: ServerInfo;
  /** The client's address. */
  peerAddr(): PeerAddr;
  /** Next chunk of the request body, or null at its end. */
  readBody(): Promise<Uint8Array | null>;
  /** Stops delivering the request body (the rest is discarded) and closes after this exchange. */
  discardBody(): void;
  /** Sends `100 Continue` if the request asked for it and it was not sent yet. */
  sendContinue(): void;
  /** Runs the `onResponseHead` taps, if any. */
  responseHead(response: Response, request: Request): void;
  /** True while the response can still be written. */
  readonly writable: boolean;
  /**
   * Hands the connection's socket to the caller (HTTP/1 only; absent on protocols that
   * multiplex, such as HTTP/2): paused, without the connection's listeners, with the bytes
   * already read past the request head, and its server.
   */
  takeSocket?(): { socket: Duplex } & UpgradeInfo;
}

/** @internal What a {@link Stream} needs from an HTTP/1 connection: the neutral part plus byte-level writing. */
export interface StreamConnection extends ExchangeConnection {
  /** Queues bytes (latin1 for strings) on the socket; a Promise when the socket asks to wait. */
  send(data: Uint8Array | string): Promise<void> | undefined;
  /** `Date` and Connection fields `headers` lacks for this exchange, and whether the connection closes after it. */
  connectionFields(close: boolean, headers: Headers): { fields: string; close: boolean };
}

/**
 * The response side of one exchange on a protocol that frames messages itself (HTTP/2): the
 * {@link Stream} decides status, headers, length and trailers, the wire puts them on the
 * connection. Each method returns a Promise when the peer asks to wait (flow control).
 */
export interface ResponseWire {
  /** The protocol's ALPN name, such as `h2` (what `stream.protocol` and `exchange.protocol` say). */
  readonly protocol: string;
  /**
   * Sends the response head. `contentLength` is the body's length, -1 when unknown; `end`:
   * nothing follows (no body, no trailers). The wire drops the framing and connection-specific
   * fields `headers` may hold (Content-Length, Transfer-Encoding, Connection, …) and adds its
   * own; it must not change `headers` (a Response may be answered to many requests).
   * `trailers`: false when the caller knows none will follow the body (default true: the
   * wire must be ready to send them at `end`).
   */
  head(status: number, headers: Headers, contentLength: number, end: boolean, trailers?: boolean): void;
  /**
   * Sends body bytes (a string is UTF-8); `end` ends the body with them (no trailers follow).
   * The Promise resolves once the peer's flow control lets more follow. Without `end` the
   * caller may reuse `bytes` once it resolves (the wire copies what it keeps), unless it gives
   * them away (`owned`); with `end` the wire may keep them (a response's own body).
   */
  data(bytes: Uint8Array | string, end: boolean, owned?: boolean): Promise<void> | undefined;
  /**
   * Resolves once the wire would take a chunk without waiting (a Promise when the peer's flow
   * control holds it back): a producer of body bytes waits here before it reads or makes them.
   */
  ready(): Promise<void> | undefined;
  /** Ends the body, sending `trailers` when there are any. */
  end(trailers: Headers | null): Promise<void> | undefined;
  /** Abandons a response whose head went out (HTTP/2: RST_STREAM): the peer sees it incomplete. */
  abort(error: unknown): void;
}

const enum Mode {
  Undecided,
  /** Content-Length, head and body held in memory. */
  Held,
  /** Content-Length, head sent, streaming. */
  Fixed,
  Chunked,
  /** HTTP/1.0 peer, unknown length: bytes until close. */
  Raw,
  /** No body allowed (HEAD, 1xx, 204, 304): writes are dropped. */
  None,
  /** A {@link ResponseWire} frames the message (HTTP/2): head sent, body streamed through it. */
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
  /** `http/1.1`, or the wire's protocol (`h2`). */
  readonly protocol: string;
  private readonly conn: ExchangeConnection;
  /** Set on protocols that frame messages themselves (HTTP/2); null on HTTP/1. */
  private readonly wire: ResponseWire | null;
  private status = 200;
  private reason = '';
  private readonly headers = new Headers();
  private trailerFields: Headers | null = null;
  private headStarted = false;
  private mode = Mode.Undecided;
  private declared = -1;
  private sent = 0;
  private held: Uint8Array[] | null = null;
  private heldBytes = 0;
  private writeClosed = false;
  private readClosed = false;
  private readEnded = false;
  private closeAfter = false;
  private committed = false;
  private readonly isHead: boolean;

  /** @internal Made by the server for each request: HTTP/1 passes its connection, other protocols a wire too. */
  constructor(request: Request, conn: StreamConnection);
  constructor(request: Request, conn: ExchangeConnection, wire: ResponseWire);
  constructor(request: Request, conn: ExchangeConnection, wire: ResponseWire | null = null) {
    this.request = request;
    this.conn = conn;
    this.wire = wire;
    this.protocol = wire === null ? 'http/1.1' : wire.protocol;
    this.isHead = request.method === 'HEAD';
  }

  /** The HTTP/1 connection (only ever called when `wire` is null). */
  private get h1(): StreamConnection {
    return this.conn as StreamConnection;
  }

  /** The request message (the reference's `stream.message`). */
  get message(): Request {
    return this.request;
  }

  /** The listener. */
  get server(): ServerInfo {
    return this.conn.info;
  }

  /** The request head; the body stays on the stream (read it with {@link Stream.read}). */
  startRead(): Promise<Request> {
    return Promise.resolve(this.request);
  }

  /** The client's address: `String(addr)` is `ip:port`, `addr.ip` the bytes, `addr.port` the port. */
  peerAddr(): PeerAddr & PeerAddress {
    return this.conn.peerAddr();
  }

  // ---- reading -------------------------------------------------------------------------

  /** The next chunk of the request body, or null at its end. */
  async read(): Promise<Uint8Array | null> {
    if (this.readClosed || this.readEnded) return null;
    if (!this.headStarted) this.conn.sendContinue();
    const chunk = await this.conn.readBody();
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
      if (!this.readEnded) {
        this.closeAfter = true;
        this.conn.discardBody();
      }
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
    const take = this.conn.takeSocket;
    if (take === undefined) throw new ArgumentError(`cannot upgrade a ${this.protocol} stream: only HTTP/1.1 connections can change protocol`);
    const taken = take.call(this.conn);
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
    this.headStarted = true;
    const r = this.response();
    this.conn.responseHead(r, this.request);
    // A tap may have changed the status (headers are shared with `r`).
    this.status = r.status;
    this.reason = r.reason;
    const h = this.headers;
    if (this.wire !== null) {
      this.decideWire(this.wire, h, ending);
      return;
    }
    if (statusHasNoBody(this.status) || this.isHead) {
      this.mode = Mode.None;
      if (this.status === 204 || this.status < 200) {
        h.delete('Content-Length');
        h.delete('Transfer-Encoding');
      }
      return;
    }
    const cl = h.indexOf('Content-Length');
    if (cl >= 0) {
      const n = parseContentLength(h.getAll('Content-Length').join(', '));
      if (n < 0) throw new ArgumentError(`invalid Content-Length header "${h.valueAt(cl)}"`);
      h.delete('Transfer-Encoding');
      this.declared = n;
      this.mode = Mode.Held;
      this.held = [];
      return;
    }
    h.delete('Transfer-Encoding');
    if (this.request.protoMinor === 0) {
      this.mode = Mode.Raw;
      this.closeAfter = true;
    } else {
      this.mode = Mode.Chunked;
      h.push('Transfer-Encoding', 'chunked');
    }
    this.sendHead(null);
  }

  /**
   * The head on a wire (HTTP/2): sent now (at `startWrite` or the first
   * write), as HTTP/1 does; the wire frames the body, so only the declared length is checked here.
   */
  private decideWire(wire: ResponseWire, h: Headers, ending: boolean): void {
    h.delete('Transfer-Encoding');
    if (statusHasNoBody(this.status) || this.isHead) {
      this.mode = Mode.None;
      if (this.status === 204 || this.status < 200) h.delete('Content-Length');
      this.writeClosed = ending;
      this.committed = true;
      wire.head(this.status, h, headLength(h), true);
      return;
    }
    const cl = h.indexOf('Content-Length');
    if (cl >= 0) {
      const n = parseContentLength(h.getAll('Content-Length').join(', '));
      if (n < 0) throw new ArgumentError(`invalid Content-Length header "${h.valueAt(cl)}"`);
      this.declared = n;
    }
    this.mode = Mode.Wire;
    this.committed = true;
    if (ending && this.declared <= 0 && this.trailerFields === null) {
      this.writeClosed = true;
      wire.head(this.status, h, 0, true);
      return;
    }
    wire.head(this.status, h, this.declared, false);
  }

  /** Serializes and sends the head, with `body` (already framed) behind it in one write. */
  private sendHead(body: Uint8Array | null): Promise<void> | undefined {
    const { fields, close } = this.h1.connectionFields(this.closeAfter, this.headers);
    this.closeAfter = close;
    const head = serializeStatusLine(this.status, this.reason) + serializeFields(this.headers, -1, false) + fields + '\r\n';
    this.committed = true;
    if (body === null || body.length === 0) return this.h1.send(head);
    const out = Buffer.allocUnsafe(head.length + body.length);
    out.write(head, 0, 'latin1');
    out.set(body, head.length);
    return this.h1.send(out);
  }

  // ---- writing -------------------------------------------------------------------------

  /** Writes body bytes (a string is UTF-8); starts the head when needed. */
  async write(data: Uint8Array | string): Promise<void> {
    if (this.writeClosed) throw new ArgumentError('write after closeWrite');
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    if (!(bytes instanceof Uint8Array)) throw new ArgumentError(`write takes a Uint8Array or string, got ${typeof data}`);
    if (!this.headStarted) this.decide();
    if (!this.conn.writable) throw new ProtocolError('cannot write: the client closed the connection');
    if (bytes.length === 0) return;
    switch (this.mode) {
      case Mode.None:
        return;
      case Mode.Held: {
        if (this.heldBytes + bytes.length > this.declared) {
          throw new ProtocolError(`response body exceeds its Content-Length of ${this.declared} bytes`);
        }
        if (this.heldBytes + bytes.length <= HOLD_BYTES) {
          // Copy: the caller may reuse its buffer once write resolves.
          this.held!.push(Buffer.from(bytes));
          this.heldBytes += bytes.length;
          return;
        }
        // Past 4 KiB: send head and what was held, then stream.
        const all = Buffer.concat([...this.held!, bytes]);
        this.held = null;
        this.mode = Mode.Fixed;
        this.sent = all.length;
        await this.sendHead(all);
        return;
      }
      case Mode.Fixed: {
        if (this.sent + bytes.length > this.declared) {
          throw new ProtocolError(`response body exceeds its Content-Length of ${this.declared} bytes`);
        }
        this.sent += bytes.length;
        await this.h1.send(bytes);
        return;
      }
      case Mode.Chunked:
        await this.h1.send(encodeChunk(bytes));
        return;
      case Mode.Raw:
        await this.h1.send(bytes);
        return;
      case Mode.Wire: {
        if (this.declared >= 0 && this.sent + bytes.length > this.declared) {
          throw new ProtocolError(`response body exceeds its Content-Length of ${this.declared} bytes`);
        }
        this.sent += bytes.length;
        // The wire copies what it keeps, slice by slice, as flow control lets it out.
        await this.wire!.data(bytes, false);
        return;
      }
    }
  }

  /**
   * Ends the response body: a held fixed-length response goes out now (or, when its length
   * is wrong, fails with ProtocolError so the server can still answer 500); a chunked one
   * sends the last chunk and its trailers.
   */
  async closeWrite(): Promise<void> {
    if (this.writeClosed) return;
    if (!this.headStarted) {
      // Nothing written: an empty body. Without a declared length, say 0 rather than chunked.
      if (!this.isHead && !this.headers.has('Content-Length') && !this.headers.has('Transfer-Encoding') && !statusHasNoBody(this.status)) {
        this.headers.set('Content-Length', '0');
      }
      this.decide(true);
    }
    switch (this.mode) {
      case Mode.None:
        if (this.wire !== null) {
          this.writeClosed = true;
          return;
        }
        this.writeClosed = true;
        await this.sendHead(null);
        return;
      case Mode.Held: {
        if (this.heldBytes !== this.declared) {
          throw new ProtocolError(`response body has ${this.heldBytes} bytes but Content-Length says ${this.declared}`);
        }
        this.writeClosed = true;
        const body = this.held!.length === 1 ? this.held![0]! : Buffer.concat(this.held!, this.heldBytes);
        this.held = null;
        await this.sendHead(body);
        return;
      }
      case Mode.Fixed:
        if (this.sent !== this.declared) {
          this.writeClosed = true;
          throw new ProtocolError(`response body has ${this.sent} bytes but Content-Length says ${this.declared}; the connection is closed`);
        }
        this.writeClosed = true;
        return;
      case Mode.Chunked:
        this.writeClosed = true;
        await this.h1.send(serializeLastChunk(this.trailerFields));
        return;
      case Mode.Wire:
        if (this.writeClosed) return;
        this.writeClosed = true;
        if (this.declared >= 0 && this.sent !== this.declared) {
          throw new ProtocolError(`response body has ${this.sent} bytes but Content-Length says ${this.declared}; the stream is reset`);
        }
        await this.wire!.end(this.trailerFields !== null && this.trailerFields.size > 0 ? this.trailerFields : null);
        return;
      case Mode.Raw:
        this.writeClosed = true;
        return;
      default:
        this.writeClosed = true;
    }
  }

  /** @internal True once any byte of the response went out (a failure then closes the connection). */
  get isCommitted(): boolean {
    return this.committed;
  }

  /** @internal True when the response was ended cleanly. */
  get isWriteClosed(): boolean {
    return this.writeClosed;
  }

  /** @internal True when the connection must close after this exchange. */
  get mustClose(): boolean {
    return this.closeAfter;
  }

  /** @internal True when the body was read to its end (or discarded). */
  get bodyDone(): boolean {
    return this.readEnded || this.readClosed;
  }
}
