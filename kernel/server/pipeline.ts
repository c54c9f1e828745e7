/**
 * The server's pipeline for connections a protocol plugin took over (HTTP/2 by ALPN, h2c):
 * the plugin parses its frames and hands each exchange to {@link ProtocolHost.runExchange}
 * with an {@link ExchangeWire}; the kernel runs it exactly as it runs an HTTP/1 exchange:
 * `onRequest` taps, the request handler (body buffered up to `maxBodyBytes`, 413 past it) or
 * the stream handler (on the kernel's own {@link Stream}), `onResponseHead`, 500 for a handler
 * that throws before the head went out (else the exchange is aborted), and the error reporter.
 * The plugin registers each connection so `close()` (graceful: GOAWAY, then let exchanges in
 * flight finish) and `forceClose()` (drop them) reach it.
 *
 * HTTP/1 never comes here: its connection keeps its own hot path.
 */
import { Buffer } from 'node:buffer';
import type { Duplex } from 'node:stream';
import { ArgumentError, ProtocolError, TimeoutError } from '../errors.js';
import type { ServerExchange, ServerHooks, ServerInfo, Tapped } from '../hooks.js';
import { AbstractBody, type Body } from '../message/body.js';
import { eqIgnoreCase, Headers } from '../message/headers.js';
import { requestFromWire, type Request } from '../message/request.js';
import { Response } from '../message/response.js';
import { statusHasNoBody } from '../http1/framing.js';
import { checkTrailers } from '../http1/serialize.js';
import { notAResponse } from './handler-result.js';
import type { RequestHandler, StreamHandler } from './h1-connection.js';
import { statusFor, writeResponseToStream } from './h1-connection.js';
import type { ResolvedServerOptions } from './options.js';
import type { PeerAddr } from './peer.js';
import { Stream, type ExchangeConnection, type ResponseWire } from './stream.js';
import { copyResponse } from './copy-response.js';

/** The server's limits and timeouts (ms, 0 = off) as a protocol plugin applies them. */
export interface ServerLimits {
  /** Largest request header block. */
  readonly maxHeaderBytes: number;
  /** Largest request body a request handler gets buffered (0 = unlimited; the kernel enforces it). */
  readonly maxBodyBytes: number;
  /** Limit for receiving a request head. */
  readonly readHeaderTimeout: number;
  /** Limit for receiving a request body. */
  readonly readTimeout: number;
  /** Limit for the peer to take written response bytes. */
  readonly writeTimeout: number;
  /** Limit for a connection without exchanges in flight. */
  readonly idleTimeout: number;
}

/**
 * One exchange of a protocol plugin's connection (an HTTP/2 stream), as the kernel drives it:
 * the request body comes from it, the response goes out through it ({@link ResponseWire}).
 */
export interface ExchangeWire extends ResponseWire {
  /** True while the response can still be written (false once the peer reset the stream). */
  readonly writable: boolean;
  /**
   * The error the request body failed with (`TimeoutError` for `readTimeout`: answered 408;
   * a `ProtocolError` with a `limit`: 413/431), or null. A handler that throws it gets that
   * status instead of 500.
   */
  readonly bodyError: unknown;
  /** The client's address. */
  peerAddr(): PeerAddr;
  /** The next chunk of the request body, or null at its end. */
  readBody(): Promise<Uint8Array | null>;
  /** The rest of the request body is not wanted (HTTP/2: the stream's read side is closed). */
  discardBody(): void;
  /** Sends `100 Continue` when the request asked for it and it was not sent yet. */
  sendContinue(): void;
}

/** A connection a protocol plugin serves, as the server's `close()`/`forceClose()` reach it. */
export interface ProtocolConnection {
  /** Graceful close: take no new exchanges (HTTP/2: GOAWAY), let those in flight finish, then close. */
  shutdown(): void;
  /** Forced close: drop the connection and every exchange on it now (`forceClose()`, or `close()` past its grace period). */
  destroy(): void;
}

/**
 * The server as a protocol plugin sees it: `ProtocolInfo.host` in `server.protocol`,
 * `UpgradeInfo.host` in `server.onUpgrade`, and what `stream.upgrade()` returns.
 */
export interface ProtocolHost {
  /** The listener. */
  readonly info: ServerInfo;
  /** Limits and timeouts of the server. */
  readonly limits: ServerLimits;
  /** True once `close()` or `forceClose()` was called. */
  readonly closing: boolean;
  /**
   * Registers a connection with the server's lifecycle. Returns false when the server is
   * already closing: the plugin then shuts the connection down at once.
   */
  addConnection(conn: ProtocolConnection): boolean;
  /** The connection is closed: the server stops counting it (a graceful `close()` resolves once none is left). */
  removeConnection(conn: ProtocolConnection): void;
  /**
   * How to end an upgraded `socket` politely when the server closes (a WebSocket: a close
   * frame 1001, going away). The server counts every upgraded socket until it closes: a
   * graceful `close()` waits for it up to `closeGracePeriod`, then runs `step` (the socket
   * must close within a short bound, else it is dropped; without a step it is dropped at once),
   * and `forceClose()` drops it without running `step`. Call it from the `server.onUpgrade`
   * tap that takes the socket, or after `stream.upgrade()`.
   */
  onGoingAway(socket: Duplex, step: () => void): void;
  /**
   * Runs one exchange through the server's pipeline. `request.body` is `nobody` when the
   * request has no body (HTTP/2: END_STREAM on its HEADERS), else null (read from `wire`).
   * Resolves when the exchange is over; never rejects (failures are reported and answered).
   */
  runExchange(request: Request, wire: ExchangeWire): Promise<void>;
  /** Reports an error to the server's `onError`. */
  reportError(error: unknown, request: Request | null): void;
}

/** @internal What the pipeline needs from its server. */
export interface PipelineServer {
  readonly opts: ResolvedServerOptions;
  readonly info: ServerInfo;
  readonly hooks: Tapped<ServerHooks> | null;
  readonly handler: RequestHandler | null;
  readonly streamHandler: StreamHandler | null;
  readonly closing: boolean;
  addProtocolConnection(conn: ProtocolConnection): boolean;
  removeProtocolConnection(conn: ProtocolConnection): void;
  onGoingAway(socket: Duplex, step: () => void): void;
  reportError(err: unknown, request: Request | null): void;
}

/**
 * A server request from a protocol plugin's parsed head, without the public constructor's
 * checks (the plugin's codec validated it): `headers` is used as is, `body` is `nobody` for a
 * request without a body, else null (read it from the wire), `contentLength` -1 when unknown.
 * `headers` may also be the decoded field list of an HTTP/2 header block (flat `[name, value,
 * …]`, lowercase names, pseudo-headers included): it is read into Headers when
 * `request.headers` is first read, as `headersFromFields(fields, true)` does (Host from
 * `:authority` when the block has none).
 */
export function protocolRequest(method: string, target: string, headers: Headers | readonly string[], body: Body, contentLength: number, host: string | null, protoMajor: number): Request {
  const req = requestFromWire(method, target, headers, body, contentLength, 0);
  req.protoMajor = protoMajor;
  req.host = host;
  return req;
}

/** Bytes of a streamed response body read at a time for a wire: HTTP/2's default frame size. */
const WIRE_CHUNK = 16384;

/** @internal The {@link ProtocolHost} of one server. */
export class PipelineHost implements ProtocolHost {
  readonly limits: ServerLimits;
  private readonly server: PipelineServer;
  /** Response bodies being streamed (SSE, a file), for {@link PipelineHost.endStreamedBodies}. */
  private readonly streaming = new Set<AbstractBody>();

  constructor(server: PipelineServer) {
    this.server = server;
    const o = server.opts;
    this.limits = Object.freeze({
      maxHeaderBytes: o.maxHeaderBytes,
      maxBodyBytes: server.streamHandler !== null ? 0 : o.maxBodyBytes,
      readHeaderTimeout: o.readHeaderTimeout,
      readTimeout: o.readTimeout,
      writeTimeout: o.writeTimeout,
      idleTimeout: o.idleTimeout,
    });
  }

  get info(): ServerInfo {
    return this.server.info;
  }

  get closing(): boolean {
    return this.server.closing;
  }

  addConnection(conn: ProtocolConnection): boolean {
    return this.server.addProtocolConnection(conn);
  }

  removeConnection(conn: ProtocolConnection): void {
    this.server.removeProtocolConnection(conn);
  }

  onGoingAway(socket: Duplex, step: () => void): void {
    this.server.onGoingAway(socket, step);
  }

  /**
   * @internal The server's close grace period is over: every response body being streamed
   * ends where it is (its exchange then ends cleanly, END_STREAM after what was queued).
   */
  endStreamedBodies(): void {
    for (const b of this.streaming) b.close();
  }

  reportError(error: unknown, request: Request | null): void {
    this.server.reportError(error, request);
  }

  runExchange(request: Request, wire: ExchangeWire): Promise<void> {
    if (this.server.streamHandler !== null) return this.guard(this.runStream(request, wire), request, wire);
    const hooks = this.server.hooks;
    if (request.body === null || (hooks !== null && hooks.onRequest !== null)) return this.guard(this.runRequest(request, wire), request, wire);
    // The hot path: no body to buffer and no tap that may answer: the handler runs now, and a
    // Response it returns synchronously with its body in memory is written without a promise.
    let res: Response | Promise<Response>;
    try {
      res = this.server.handler!(request);
    } catch (err) {
      this.server.reportError(err, request);
      return this.guard(this.errorResponse(request, wire, 500, '', null), request, wire);
    }
    if (res instanceof Response) {
      const p = this.respond(request, wire, res, null);
      return p === undefined ? DONE : this.guard(p, request, wire);
    }
    return this.guard(
      Promise.resolve(res).then(
        (r) => this.checked(request, wire, r, null),
        (err: unknown) => {
          this.server.reportError(err, request);
          return this.errorResponse(request, wire, 500, '', null);
        },
      ),
      request,
      wire,
    );
  }

  /** A failure of the pipeline itself (a reporter that threw, a wire that broke) ends the exchange; it never escapes as an unhandled rejection. */
  private guard(p: Promise<void>, request: Request, wire: ExchangeWire): Promise<void> {
    return p.catch((err: unknown) => {
      this.server.reportError(err, request);
      wire.abort(err);
    });
  }

  /** Writes what a handler resolved to, when it is a Response; 500 otherwise. */
  private checked(req: Request, wire: ExchangeWire, res: unknown, ex: WireExchange | null): Promise<void> | undefined {
    if (!(res instanceof Response)) {
      this.server.reportError(notAResponse(res), req);
      return this.errorResponse(req, wire, 500, '', ex === null ? null : ex.extra);
    }
    return this.respond(req, wire, res, ex);
  }

  /** `onResponseHead` taps, when any. */
  responseHead(response: Response, request: Request): void {
    const h = this.server.hooks;
    if (h !== null && h.onResponseHead !== null) h.onResponseHead.call(response, request);
  }

  // ---- request handlers (serve) ------------------------------------------------------------

  private async runRequest(req: Request, wire: ExchangeWire): Promise<void> {
    const max = this.limits.maxBodyBytes;
    if (req.body === null) {
      if (max > 0 && req.contentLength > max) {
        wire.discardBody();
        await this.errorResponse(req, wire, 413, `request body of ${req.contentLength} bytes exceeds maxBodyBytes (${max})`, null);
        return;
      }
      const chunks: Uint8Array[] = [];
      let total = 0;
      // The handler gets the body read for it: a client waiting with `Expect: 100-continue`
      // is told to send it now (as the HTTP/1.1 connection does).
      wire.sendContinue();
      try {
        for (;;) {
          const c = await wire.readBody();
          if (c === null) break;
          total += c.length;
          if (max > 0 && total > max) {
            wire.discardBody();
            await this.errorResponse(req, wire, 413, `request body exceeds maxBodyBytes (${max})`, null);
            return;
          }
          chunks.push(c);
        }
      } catch (err) {
        if (!wire.writable) return; // the client reset the stream: nobody to answer
        await this.errorResponse(req, wire, bodyStatus(err), err instanceof Error ? err.message : '', null);
        return;
      }
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total);
      req.setBody(body, total);
    }
    const ex = new WireExchange(req, this.server.info, wire);
    let res: unknown;
    try {
      const hooks = this.server.hooks;
      if (hooks !== null && hooks.onRequest !== null) res = await hooks.onRequest.promise(req, ex);
      if (res == null) res = await this.server.handler!(req);
    } catch (err) {
      this.server.reportError(err, req);
      await this.errorResponse(req, wire, 500, '', ex.extra);
      return;
    }
    await this.checked(req, wire, res, ex);
  }

  /**
   * Writes a request handler's (or an `onRequest` tap's) response; a Promise only when the
   * body is streamed or the peer asks to wait.
   */
  private respond(req: Request, wire: ExchangeWire, res0: Response, ex: WireExchange | null): Promise<void> | undefined {
    let res = res0;
    let headers = res.headers;
    let extra: Headers | null = null;
    if (ex !== null) {
      extra = ex.extra;
      ex.headSent = true;
    }
    if (extra !== null) {
      headers = headers.clone();
      for (const [k, v] of extra) headers.set(k, v);
    }
    const hooks = this.server.hooks;
    if (hooks !== null && hooks.onResponseHead !== null) {
      // Taps see (and may change) a copy: a handler may return one Response for many requests.
      res = copyResponse(res, headers === res.headers ? res.headers.clone() : headers);
      try {
        hooks.onResponseHead.call(res, req);
      } catch (err) {
        this.server.reportError(err, req);
        return this.errorResponse(req, wire, 500, '', null);
      }
      headers = res.headers;
    }
    if (!wire.writable) {
      if (res.body instanceof AbstractBody) res.body.close();
      return undefined;
    }
    const status = res.status;
    const body = res.body;
    const noBody = statusHasNoBody(status) || req.method === 'HEAD';
    const trailers = res.hasTrailers ? res.trailers : null;
    if (trailers !== null) {
      // As over HTTP/1: a field that may not trail (RFC 9110 §6.5.1) is the handler's mistake
      // whatever the body, told before the head goes out, while a 500 can still replace it.
      try {
        checkTrailers(trailers);
      } catch (err) {
        if (body instanceof AbstractBody) body.close();
        this.server.reportError(err, req);
        return this.errorResponse(req, wire, 500, '', null);
      }
    }
    if (body instanceof AbstractBody) {
      return this.respondStreamed(req, wire, status, headers, body, noBody, res.contentLength >= 0 ? res.contentLength : body.length, trailers);
    }
    // A string body goes to the wire as it is (node:http2 encodes it straight into the frame).
    const bytes = body;
    const len = bytes === null ? 0 : typeof bytes === 'string' ? Buffer.byteLength(bytes, 'utf8') : bytes.length;
    if (noBody) {
      // A HEAD answer says what a GET would have; keep a length the handler set itself (304).
      const given = headers.get('Content-Length');
      const cl = status === 204 || status < 200 ? -1 : given !== undefined && (status === 304 || len === 0) ? Number(given) : len;
      wire.head(status, headers, Number.isFinite(cl) ? cl : -1, true, false);
      return undefined;
    }
    if (len === 0 && trailers === null) {
      wire.head(status, headers, 0, true, false);
      return undefined;
    }
    wire.head(status, headers, len, false, trailers !== null);
    if (trailers === null) return wire.data(bytes!, true);
    return this.endWith(wire, len > 0 ? bytes! : null, trailers);
  }

  private async endWith(wire: ExchangeWire, bytes: Uint8Array | string | null, trailers: Headers): Promise<void> {
    if (bytes !== null) await wire.data(bytes, false);
    await wire.end(trailers);
  }

  private async respondStreamed(
    req: Request,
    wire: ExchangeWire,
    status: number,
    headers: Headers,
    body: AbstractBody,
    noBody: boolean,
    known: number,
    trailers: Headers | null,
  ): Promise<void> {
    try {
      if (noBody) {
        wire.head(status, headers, status === 204 || status < 200 ? -1 : known, true, false);
        return;
      }
      wire.head(status, headers, known, false, trailers !== null);
      this.streaming.add(body);
      let sent = 0;
      for (;;) {
        // The body is read only as the peer's flow control lets it out: a client that grants
        // no window leaves it unread instead of parked in memory.
        const ready = wire.ready();
        if (ready !== undefined) await ready;
        if (!wire.writable) return;
        const buf = Buffer.allocUnsafe(WIRE_CHUNK);
        const n = await body.read(buf);
        if (n === 0) break;
        if (!wire.writable) return;
        sent += n;
        if (known >= 0 && sent > known) throw new ProtocolError(`response body is longer than its length ${known}`);
        // A fresh buffer per read, given to the wire: a short read is copied to its size.
        await wire.data(n * 2 >= WIRE_CHUNK ? buf.subarray(0, n) : Buffer.from(buf.subarray(0, n)), false, true);
      }
      if (known >= 0 && sent !== known) throw new ProtocolError(`response body has ${sent} bytes but its length is ${known}`);
      await wire.end(trailers);
    } catch (err) {
      this.server.reportError(err, req);
      wire.abort(err);
    } finally {
      this.streaming.delete(body);
      body.close();
    }
  }

  /** A short server-generated answer (500, 413, 408, …), through `onResponseHead` like any other. */
  private async errorResponse(req: Request, wire: ExchangeWire, status: number, message: string, extra: Headers | null): Promise<void> {
    if (!wire.writable) return;
    const text = message === '' ? '' : `${message}\n`;
    const headers = new Headers(4);
    headers.push('Content-Type', 'text/plain; charset=utf-8');
    if (extra !== null) for (const [k, v] of extra) headers.set(k, v);
    let st = status;
    const hooks = this.server.hooks;
    if (hooks !== null && hooks.onResponseHead !== null) {
      const res = new Response(status, text, { headers, copyHeaders: false, request: req });
      try {
        hooks.onResponseHead.call(res, req);
        st = res.status;
      } catch (err) {
        this.server.reportError(err, req);
      }
    }
    const bytes = Buffer.from(text, 'utf8');
    const noBody = req.method === 'HEAD' || statusHasNoBody(st);
    wire.head(st, headers, bytes.length, noBody || bytes.length === 0, false);
    if (!noBody && bytes.length > 0) await wire.data(bytes, true);
  }

  // ---- stream handlers (listen) ------------------------------------------------------------

  private async runStream(req: Request, wire: ExchangeWire): Promise<void> {
    req.body = null; // the body stays on the stream, as over HTTP/1
    const stream = new Stream(req, new WireConnection(this, wire), wire);
    try {
      const hooks = this.server.hooks;
      if (hooks !== null && hooks.onRequest !== null) {
        const res = await hooks.onRequest.promise(req, stream);
        if (res != null) {
          await writeResponseToStream(stream, res);
          return;
        }
      }
      await this.server.streamHandler!(stream);
      if (!stream.isWriteClosed && !stream.isUpgraded) await stream.closeWrite();
    } catch (err) {
      this.server.reportError(err, req);
      if (!wire.writable) return;
      if (stream.isCommitted) {
        // Part of the response is out: only this stream is reset, the connection goes on.
        wire.abort(err);
        return;
      }
      const bodyErr = err === wire.bodyError;
      await this.errorResponse(req, wire, bodyErr ? bodyStatus(err) : 500, bodyErr && err instanceof Error ? err.message : '', null);
    }
  }
}

const DONE: Promise<void> = Promise.resolve();

/** Status for a request body that failed: 408 when it was too slow, else the HTTP/1 rule. */
function bodyStatus(err: unknown): number {
  return err instanceof TimeoutError ? 408 : statusFor(err);
}

/** The exchange `server.onRequest` taps see in request-handler mode. */
class WireExchange implements ServerExchange {
  readonly request: Request;
  readonly server: ServerInfo;
  private readonly wire: ExchangeWire;
  /** Headers set through {@link WireExchange.setHeader}, applied to whatever response is written. */
  extra: Headers | null = null;
  headSent = false;

  constructor(request: Request, server: ServerInfo, wire: ExchangeWire) {
    this.request = request;
    this.server = server;
    this.wire = wire;
  }

  get protocol(): string {
    return this.wire.protocol;
  }

  peerAddr(): PeerAddr {
    return this.wire.peerAddr();
  }

  setHeader(name: string, value: string): void {
    if (this.headSent) throw new ArgumentError('setHeader: the response head was already written');
    if (eqIgnoreCase(name, 'content-length')) return;
    (this.extra ??= new Headers()).set(name, value);
  }
}

/** What a {@link Stream} on a wire reads and reports through. */
class WireConnection implements ExchangeConnection {
  private readonly host: PipelineHost;
  private readonly wire: ExchangeWire;

  constructor(host: PipelineHost, wire: ExchangeWire) {
    this.host = host;
    this.wire = wire;
  }

  get info(): ServerInfo {
    return this.host.info;
  }

  get writable(): boolean {
    return this.wire.writable;
  }

  peerAddr(): PeerAddr {
    return this.wire.peerAddr();
  }

  readBody(): Promise<Uint8Array | null> {
    return this.wire.readBody();
  }

  discardBody(): void {
    this.wire.discardBody();
  }

  sendContinue(): void {
    this.wire.sendContinue();
  }

  responseHead(response: Response, request: Request): void {
    this.host.responseHead(response, request);
  }
}
