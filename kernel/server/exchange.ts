/**
 * The server's exchange pipeline: every exchange of every protocol runs through it. A
 * connection (HTTP/1.1 in the kernel, HTTP/2 in its plugin) parses a request and hands it over
 * with the exchange's {@link ExchangeWire}; the pipeline runs the `onRequest` taps, the request
 * handler (body buffered up to `maxBodyBytes`, 413 past it) or the stream handler (on the
 * kernel's own {@link Stream}), `onResponseHead`, answers 500 for a handler that fails before
 * anything went out (else the exchange is aborted), reports errors, and writes the response
 * through the wire, which frames it for its protocol.
 *
 * A request handler that answers synchronously with its body in memory is written with no
 * Promise made: {@link ExchangePipeline.run} then returns undefined, and the wire learned that
 * the response is complete from its last write, so an HTTP/1.1 connection parses the next
 * pipelined request in the same read.
 *
 * Protocol plugins reach the pipeline as the {@link ProtocolHost}, which also registers their
 * connections so `close()` (graceful: GOAWAY, then let exchanges in flight finish) and
 * `forceClose()` (drop them) reach them.
 */
import { Buffer } from 'node:buffer';
import type { Duplex } from 'node:stream';
import { ArgumentError, ProtocolError } from '../errors.js';
import type { ServerExchange, ServerHooks, Tapped } from '../hooks.js';
import type { ExchangeWire, ProtocolConnection, ProtocolHost, ResponseWire, ServerInfo, ServerLimits } from './protocol-host.js';
import { AbstractBody, readAll, type Body } from '../message/body.js';
import { eqIgnoreCase, Headers } from '../message/headers.js';
import { requestFromWire, type Request } from '../message/request.js';
import { Response } from '../message/response.js';
import { responseHasNoBody } from '../http1/framing.js';
import { checkTrailers } from '../http1/serialize.js';
import { notAResponse } from './handler-result.js';
import { healthResponse } from './drain.js';
import { bodyStatus } from './error-status.js';
import type { ResolvedServerOptions } from './options.js';
import type { PeerAddr } from './peer.js';
import { Stream, writeResponseToStream, type StreamHost } from './stream.js';
import { copyResponse } from './copy-response.js';
import { EncodedBody, takeBodyEncoder } from './body-encoder.js';
import { channels, serverObserved, type ServerRequestContext } from '../diagnostics.js';
import { ObservedWire, observedWire } from './observed-wire.js';

/** A request handler: maps a request (body buffered) to a response, sync or async. */
export type RequestHandler = (request: Request) => Response | Promise<Response>;
/** A stream handler: reads and writes one {@link Stream}. */
export type StreamHandler = (stream: Stream) => void | Promise<void>;

/** @internal What the pipeline needs from its server. */
export interface PipelineServer {
  readonly opts: ResolvedServerOptions;
  readonly info: ServerInfo;
  readonly hooks: Tapped<ServerHooks> | null;
  /** True while every `server.onRequest` tap says it has nothing to do; null when some tap always acts. */
  readonly requestTapsIdle: (() => boolean) | null;
  readonly handler: RequestHandler | null;
  readonly streamHandler: StreamHandler | null;
  readonly closing: boolean;
  /** The server's readiness, which the `healthPath` answer reports. */
  readonly ready: boolean;
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

/** Bytes of a streamed response body read at a time for a wire that does not say: HTTP/2's default frame size. */
const WIRE_CHUNK = 16384;

/** @internal The pipeline of one server: its {@link ProtocolHost}, and the host of its streams. */
export class ExchangePipeline implements ProtocolHost, StreamHost {
  readonly limits: ServerLimits;
  private readonly server: PipelineServer;
  /** Response bodies being streamed (SSE, a file) by wire, for {@link ExchangePipeline.endStreamedBodies}. */
  private readonly streaming = new Map<ResponseWire, AbstractBody>();
  /** The path the server answers itself with its readiness (`healthPath`), or null. */
  private readonly healthPath: string | null;

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
    this.healthPath = o.healthPath;
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
   * ends where it is (its exchange then ends cleanly, after what was queued).
   */
  endStreamedBodies(): void {
    for (const b of this.streaming.values()) b.close();
  }

  /**
   * @internal Ends the response body being streamed on `wire`, if any (its connection went, or
   * the close grace period is over): its producer stops now, not at its next write. False when
   * none was being streamed.
   */
  closeStreamedBody(wire: ResponseWire): boolean {
    const b = this.streaming.get(wire);
    if (b === undefined) return false;
    b.close();
    return true;
  }

  reportError(error: unknown, request: Request | null): void {
    this.server.reportError(error, request);
  }

  runExchange(request: Request, wire: ExchangeWire): Promise<void> {
    return this.run(request, wire) ?? DONE;
  }

  /**
   * @internal Runs one exchange; undefined when it is over already (a synchronous answer with
   * its body in memory), else a Promise that resolves when it is over. Never rejects.
   */
  run(request: Request, wire: ExchangeWire): Promise<void> | undefined {
    if (this.healthPath !== null && request.target === this.healthPath) return this.health(request, wire);
    if (serverObserved()) return this.runObserved(request, wire);
    return this.runOn(request, wire);
  }

  /**
   * An exchange while someone subscribes to the server's per-exchange channels: `request:start`,
   * then the exchange on an {@link ObservedWire} (which publishes the response's head and
   * finish), inside the `server:request` trace when that has subscribers.
   */
  private runObserved(request: Request, wire: ExchangeWire): Promise<void> | undefined {
    const ob = new ObservedWire(wire, request);
    const start = channels.serverRequestStart;
    if (start.hasSubscribers) start.publish({ request, server: this.server.info });
    const tc = channels.serverRequest;
    let p: Promise<void> | undefined;
    if (!tc.hasSubscribers) p = this.runOn(request, ob);
    else {
      const ctx: ServerRequestContext = { request };
      ob.trace = ctx;
      try {
        p = tc.start.runStores(ctx, this.runOn, this, request, ob);
      } catch (err) {
        ctx.error = err;
        tc.error.publish(ctx);
        throw err;
      } finally {
        tc.end.publish(ctx);
      }
    }
    if (p === undefined) {
      ob.over();
      return undefined;
    }
    return p.then(() => ob.over());
  }

  private runOn(request: Request, wire: ExchangeWire): Promise<void> | undefined {
    if (this.server.streamHandler !== null) return this.runStream(request, wire);
    if (request.body === null) return this.guard(this.runRequest(request, wire), request, wire);
    const hooks = this.server.hooks;
    if (hooks !== null && hooks.onRequest !== null) {
      const idle = this.server.requestTapsIdle;
      if (idle === null || !idle()) return this.tapped(request, wire, hooks.onRequest);
    }
    // The hot path: no tap that may answer (none, or none with anything to do now): the handler
    // runs now, and a Response it returns synchronously with its body in memory is written
    // without a promise.
    return this.callHandler(request, wire, null);
  }

  /**
   * The `healthPath` answer, before taps and handler (a balancer's check must read the
   * server's readiness, not what a router makes of the path); a body sent with it is not read.
   */
  private health(req: Request, wire: ExchangeWire): Promise<void> | undefined {
    if (req.body === null && req.contentLength !== 0) wire.discardBody();
    return this.written(this.respond(req, wire, healthResponse(this.server.ready), null), req, wire);
  }

  /**
   * @internal A short answer the connection itself gives (413, 417, 408, a body it cannot read,
   * a failed upgrade), through `onResponseHead` like any other.
   */
  answer(request: Request, wire: ExchangeWire, status: number, message: string): void {
    // Observed like any exchange: on the exchange's observing wire when it runs already (a
    // timeout while its body is read), else on a new one (no handler runs, so no trace).
    let ob = observedWire(request);
    let fresh = false;
    if (ob === undefined && serverObserved()) {
      ob = new ObservedWire(wire, request);
      fresh = true;
      const start = channels.serverRequestStart;
      if (start.hasSubscribers) start.publish({ request, server: this.server.info });
    }
    const w = ob ?? wire;
    const p = this.guard(this.errorResponse(request, w, status, message, null), request, w);
    if (fresh) void p.then(() => ob!.over());
  }

  /**
   * `onRequest` taps by `callAsync`, not `promise()`: when every tap is synchronous (the router
   * answering, or passing on an unrouted path) the exchange goes on in this tick with no
   * Promise made, exactly like the untapped path; only a tap that really waits makes it async.
   */
  private tapped(req: Request, wire: ExchangeWire, hook: NonNullable<Tapped<ServerHooks>['onRequest']>): Promise<void> | undefined {
    const ex = new WireExchange(req, this.server.info, wire);
    let done = false;
    let now: Promise<void> | undefined;
    let later: ((p: Promise<void> | undefined) => void) | null = null;
    hook.callAsync(req, ex, (err, res) => {
      done = true;
      let p: Promise<void> | undefined;
      if (err != null) p = this.failed(req, wire, err, ex);
      else if (res != null) p = this.written(this.checked(req, wire, res, ex), req, wire);
      else p = this.callHandler(req, wire, ex);
      if (later !== null) later(p);
      else now = p;
    });
    if (done) return now;
    return new Promise<void>((resolve) => {
      later = (p) => {
        if (p === undefined) resolve();
        else p.then(resolve, resolve);
      };
    });
  }

  private callHandler(req: Request, wire: ExchangeWire, ex: WireExchange | null): Promise<void> | undefined {
    let res: Response | Promise<Response>;
    try {
      res = this.server.handler!(req);
    } catch (err) {
      return this.failed(req, wire, err, ex);
    }
    if (res instanceof Response) return this.written(this.respond(req, wire, res, ex), req, wire);
    return this.guard(
      Promise.resolve(res).then(
        (r) => this.checked(req, wire, r, ex),
        (err: unknown) => this.failed(req, wire, err, ex),
      ),
      req,
      wire,
    );
  }

  /** A handler (or tap) failed before its response went out: reported, answered 500. */
  private failed(req: Request, wire: ExchangeWire, err: unknown, ex: WireExchange | null): Promise<void> {
    this.server.reportError(err, req);
    return this.guard(this.errorResponse(req, wire, 500, '', ex === null ? null : ex.extra), req, wire);
  }

  private written(p: Promise<void> | undefined, req: Request, wire: ExchangeWire): Promise<void> | undefined {
    return p === undefined ? undefined : this.guard(p, req, wire);
  }

  /** A failure of the pipeline itself (a wire that broke) ends the exchange; it never escapes as an unhandled rejection. */
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

  /** True when `onResponseHead` has taps. */
  get tapsResponseHead(): boolean {
    const h = this.server.hooks;
    return h !== null && h.onResponseHead !== null;
  }

  /** `onResponseHead` taps, when any. */
  responseHead(response: Response, request: Request): void {
    const h = this.server.hooks;
    if (h !== null && h.onResponseHead !== null) h.onResponseHead.call(response, request);
  }

  // ---- request handlers (serve) ------------------------------------------------------------

  /** A request whose body is still on the wire: read it (up to `maxBodyBytes`), then run the exchange. */
  private async runRequest(req: Request, wire: ExchangeWire): Promise<void> {
    const max = this.limits.maxBodyBytes;
    if (max > 0 && req.contentLength > max) {
      wire.discardBody();
      await this.errorResponse(req, wire, 413, `request body of ${req.contentLength} bytes exceeds maxBodyBytes (${max})`, null);
      return;
    }
    const chunks: Uint8Array[] = [];
    let total = 0;
    // The handler gets the body read for it: a client waiting with `Expect: 100-continue`
    // is told to send it now.
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
    // On as for a request read with its head: the handler runs in the taps' callback, so an
    // async context a tap calls back in (a tracing span's) reaches it.
    const hooks = this.server.hooks;
    const p = hooks !== null && hooks.onRequest !== null ? this.tapped(req, wire, hooks.onRequest) : this.callHandler(req, wire, null);
    if (p !== undefined) await p;
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
      const encoder = takeBodyEncoder(res);
      if (encoder !== undefined) {
        // Also without a body (HEAD): the head then says what a GET's would (no length), and
        // the body, closed unread, closes the encoder.
        res.body = new EncodedBody(res.body, encoder);
        res.contentLength = -1;
        headers.delete('Content-Length');
      }
    }
    if (!wire.writable) {
      if (res.body instanceof AbstractBody) res.body.close();
      return undefined;
    }
    const status = res.status;
    const body = res.body;
    const noBody = responseHasNoBody(status, req.method);
    const trailers = res.hasTrailers ? res.trailers : null;
    if (trailers !== null) {
      // A field that may not trail (RFC 9110 §6.5.1) is the handler's mistake whatever the
      // body (a Content-Length response drops trailers), told before the head goes out, while
      // a 500 can still replace it.
      try {
        checkTrailers(trailers);
      } catch (err) {
        if (body instanceof AbstractBody) body.close();
        this.server.reportError(err, req);
        return this.errorResponse(req, wire, 500, '', null);
      }
    }
    if (body instanceof AbstractBody) {
      return this.respondStreamed(req, wire, res, headers, body, noBody, res.contentLength >= 0 ? res.contentLength : body.length, trailers);
    }
    // A string body goes to the wire as it is (node:http2 encodes it straight into the frame).
    const bytes = body;
    const len = bytes === null ? 0 : typeof bytes === 'string' ? Buffer.byteLength(bytes, 'utf8') : bytes.length;
    const end = noBody || (len === 0 && trailers === null);
    try {
      if (noBody) {
        // A HEAD answer says what a GET would have; keep a length the handler set itself (304).
        const given = headers.get('Content-Length');
        const cl = status === 204 || status < 200 ? -1 : given !== undefined && (status === 304 || len === 0) ? Number(given) : len;
        wire.head(status, headers, Number.isFinite(cl) ? cl : -1, true, false, res.reason, res.close);
      } else wire.head(status, headers, len, end, trailers !== null, res.reason, res.close);
    } catch (err) {
      // A head the wire refuses (an invalid field name or value, reason or status): nothing went out.
      this.server.reportError(err, req);
      return this.errorResponse(req, wire, 500, '', null);
    }
    if (end) return undefined;
    if (trailers === null) return wire.data(bytes!, true);
    return this.endWith(wire, len > 0 ? bytes! : null, trailers);
  }

  private async endWith(wire: ExchangeWire, bytes: Uint8Array | string | null, trailers: Headers): Promise<void> {
    if (bytes !== null) await wire.data(bytes, false);
    await wire.end(trailers);
  }

  private async respondStreamed(req: Request, wire: ExchangeWire, res: Response, headers: Headers, body: AbstractBody, noBody: boolean, known: number, trailers: Headers | null): Promise<void> {
    // Streaming bodies are keyed by the protocol's wire: its connection ends the body through that one.
    const key = wire instanceof ObservedWire ? wire.inner : wire;
    try {
      const status = res.status;
      if (noBody) {
        wire.head(status, headers, status === 204 || status < 200 ? -1 : known, true, false, res.reason, res.close);
        return;
      }
      wire.head(status, headers, known, false, trailers !== null, res.reason, res.close);
      this.streaming.set(key, body);
      const size = wire.bodyChunk ?? WIRE_CHUNK;
      let buf: Buffer | null = null;
      let sent = 0;
      for (;;) {
        // The body is read only as the peer's flow control lets it out: a client that grants
        // no window leaves it unread instead of parked in memory.
        const ready = wire.ready();
        if (ready !== undefined) await ready;
        if (!wire.writable) return;
        // A body of known length gets a buffer no larger than what is left of it (at least one
        // byte, to see its end): a small file costs no large buffer.
        if (buf === null) {
          const left = known >= 0 ? known - sent : size;
          buf = Buffer.allocUnsafe(left >= size ? size : left > 0 ? left : 1);
        }
        const n = await body.read(buf);
        // The client went away (its request context is canceled): nothing to report, as with
        // node:http and Go; the body is closed below, so its producer stops.
        if (!wire.writable) return;
        if (n === 0) break;
        sent += n;
        if (known >= 0 && sent > known) throw new ProtocolError(`response body is longer than its length ${known}`);
        // A long read is given to the wire (the next read gets a fresh buffer, unless the wire
        // says it let go of it already); a short one (an event, a small file) is lent, and the
        // wire copies it only if it keeps it (framing, or a head it goes out behind, copies it
        // anyway), so the buffer is read into again.
        const owned = n * 2 >= buf.length;
        const w = wire.data(buf.subarray(0, n), false, owned);
        if (owned && wire.reusable !== true) buf = null;
        if (w !== undefined) await w;
      }
      if (known >= 0 && sent !== known) throw new ProtocolError(`response body has ${sent} bytes but its length is ${known}`);
      const w = wire.end(trailers);
      if (w !== undefined) await w;
    } catch (err) {
      this.server.reportError(err, req);
      wire.abort(err);
    } finally {
      if (this.streaming.get(key) === body) this.streaming.delete(key);
      body.close();
    }
  }

  /** A short server-generated answer (500, 413, 408, …), through `onResponseHead` like any other. */
  private async errorResponse(req: Request, wire: ExchangeWire, status: number, message: string, extra: Headers | null): Promise<void> {
    if (!wire.writable) return;
    const text = message === '' ? '' : `${message}\n`;
    let headers = new Headers(4);
    headers.push('Content-Type', 'text/plain; charset=utf-8');
    if (extra !== null) for (const [k, v] of extra) headers.set(k, v);
    let st = status;
    let bytes: Uint8Array = Buffer.from(text, 'utf8');
    const hooks = this.server.hooks;
    if (hooks !== null && hooks.onResponseHead !== null) {
      const res = new Response(status, text, { headers, copyHeaders: false, request: req });
      try {
        hooks.onResponseHead.call(res, req);
        st = res.status;
      } catch (err) {
        this.server.reportError(err, req);
      }
      try {
        // A tap may have replaced the body (encoded it) or asked for it to be encoded.
        bytes = await answerBytes(res, req);
      } catch (err) {
        this.server.reportError(err, req);
        headers.delete('Content-Encoding');
      }
    }
    let noBody = responseHasNoBody(st, req.method);
    try {
      wire.head(st, headers, bytes.length, noBody || bytes.length === 0, false);
    } catch {
      // A tap left a field the wire refuses: the bare answer, as the pipeline made it.
      if (!wire.writable) return;
      headers = new Headers(0);
      st = status;
      bytes = Buffer.from(text, 'utf8');
      noBody = responseHasNoBody(st, req.method);
      wire.head(st, headers, bytes.length, noBody || bytes.length === 0, false);
    }
    if (!noBody && bytes.length > 0) {
      const w = wire.data(bytes, true);
      if (w !== undefined) await w;
    } else if (wire.committed === false) {
      // A wire that holds keeps even a head with `end` until end() (and once the response is
      // out, the wire may already serve the connection's next exchange: hands off it then).
      await wire.end(null);
    }
  }

  // ---- stream handlers (listen) ------------------------------------------------------------

  /**
   * A stream handler's exchange; undefined when it is over already (the handler returned
   * without a Promise, or its Promise settled, and the wire took the end of the response at
   * once), so the common exchange adds no Promise of its own. Never rejects: only the rare
   * paths (taps, a failure, a wire that asks to wait) are guarded.
   */
  private runStream(req: Request, wire: ExchangeWire): Promise<void> | undefined {
    req.body = null; // the body stays on the stream
    const stream = new Stream(req, wire, this);
    const hooks = this.server.hooks;
    if (hooks !== null && hooks.onRequest !== null) {
      // As for request handlers: taps that have nothing to do now (a router with no routes)
      // are not called, which saves the hook's Promise on every exchange.
      const idle = this.server.requestTapsIdle;
      if (idle === null || !idle()) return this.guard(this.tappedStream(req, wire, stream, hooks.onRequest), req, wire);
    }
    let p: void | Promise<void>;
    try {
      p = this.server.streamHandler!(stream);
    } catch (err) {
      return this.streamFailed(req, wire, stream, err);
    }
    if (p == null || typeof (p as Partial<PromiseLike<void>>).then !== 'function') return this.streamEnded(req, wire, stream);
    return Promise.resolve(p).then(
      () => this.streamEnded(req, wire, stream),
      (err: unknown) => this.streamFailed(req, wire, stream, err),
    );
  }

  /** The stream handler returned: a response it left open is ended. Never rejects. */
  private streamEnded(req: Request, wire: ExchangeWire, stream: Stream): Promise<void> | undefined {
    if (stream.isWriteClosed || stream.isUpgraded) return undefined;
    let w: Promise<void> | undefined;
    try {
      w = stream.finishWrite();
    } catch (err) {
      return this.streamFailed(req, wire, stream, err);
    }
    return w === undefined ? undefined : w.then(undefined, (err: unknown) => this.streamFailed(req, wire, stream, err));
  }

  /**
   * `onRequest` taps with something to do: they may answer for the stream handler. By
   * `callAsync`, as for request handlers: the stream handler runs in the taps' callback, so an
   * async context a tap calls back in (a tracing span's) reaches it.
   */
  private tappedStream(req: Request, wire: ExchangeWire, stream: Stream, hook: NonNullable<Tapped<ServerHooks>['onRequest']>): Promise<void> {
    return new Promise<void>((resolve) => {
      hook.callAsync(req, stream, (err, res) => {
        void this.afterStreamTaps(req, wire, stream, err, res).then(resolve);
      });
    });
  }

  /** What follows the `onRequest` taps of a stream handler's exchange: their answer, their error, or the handler. Never rejects. */
  private async afterStreamTaps(req: Request, wire: ExchangeWire, stream: Stream, tapErr: unknown, res: Response | void | undefined): Promise<void> {
    try {
      if (tapErr != null) throw tapErr;
      if (res != null) {
        await writeResponseToStream(stream, res);
        return;
      }
      await this.server.streamHandler!(stream);
      if (!stream.isWriteClosed && !stream.isUpgraded) await stream.closeWrite();
    } catch (err) {
      await this.streamFailed(req, wire, stream, err);
    }
  }

  /** A stream handler (or the end of its response) failed: reported, and answered 500 while nothing went out. Never rejects. */
  private streamFailed(req: Request, wire: ExchangeWire, stream: Stream, err: unknown): Promise<void> | undefined {
    stream.dropEncoder();
    this.server.reportError(err, req);
    if (!wire.writable) return undefined;
    if (stream.isCommitted) {
      // Part of the response is out: only this exchange is abandoned (HTTP/2: the stream is
      // reset, the connection goes on; HTTP/1.1: the connection closes).
      wire.abort(err);
      return undefined;
    }
    const bodyErr = err === wire.bodyError;
    return this.guard(this.errorResponse(req, wire, bodyErr ? bodyStatus(err) : 500, bodyErr && err instanceof Error ? err.message : '', null), req, wire);
  }
}

const DONE: Promise<void> = Promise.resolve();

/** The body of a server-made answer after its `onResponseHead` taps: as they left it, through the encoder one gave it. */
async function answerBytes(res: Response, req: Request): Promise<Uint8Array> {
  const body = res.body;
  const bytes = body === null ? new Uint8Array(0) : typeof body === 'string' ? Buffer.from(body, 'utf8') : body instanceof AbstractBody ? await readAll(body) : body;
  const encoder = takeBodyEncoder(res);
  if (encoder === undefined) return bytes;
  if (responseHasNoBody(res.status, req.method)) {
    encoder.close();
    return bytes;
  }
  try {
    const head = await encoder.write(bytes, false);
    const tail = await encoder.end();
    return Buffer.concat([head, tail]);
  } finally {
    encoder.close();
  }
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
