/**
 * One HTTP/2 server connection: a node:http2 (nghttp2) session on a socket the kernel handed
 * over (TLS with ALPN `h2`, or plain TCP opening with the preface). Each stream becomes a
 * kernel `Request` and runs through the server's pipeline (`ProtocolHost.runExchange`), so
 * handlers and hooks behave as over HTTP/1.1. The connection joins the server's lifecycle:
 * `close()` sends GOAWAY and lets the streams in flight finish, `forceClose()` drops them.
 *
 * node:http2 is loaded on the first HTTP/2 connection, not before.
 */
// The global `performance` is an accessor (a getter call per read); the import is a plain binding.
import process from 'node:process';
import { Buffer } from 'node:buffer';
import { performance } from 'node:perf_hooks';
import { createRequire } from 'node:module';
import type { Http2Server, IncomingHttpHeaders, ServerHttp2Session, ServerHttp2Stream } from 'node:http2';
import type { Duplex } from 'node:stream';
import { nobody, PeerAddr, socketPeer } from '../../kernel/index.js';
import { isValidHost, protocolRequest, requestTargetError, type ProtocolConnection, type ProtocolHost } from '../../kernel/protocol.js';
import { sinkErrors } from './error-sink.js';
import { headerListSize, normalizeRequestFields, sameAuthority } from './headers.js';
import { SendBudget } from './send-budget.js';
import { H2ServerStream, trailersOf, type StreamOwner } from './server-stream.js';
import { serverConfig, type H2ServerConfig } from './settings.js';

type Http2Module = typeof import('node:http2');

let http2: Http2Module | null = null;

/** node:http2, loaded on first use (synchronously: a protocol tap must claim without a tick). */
export function loadHttp2(): Http2Module {
  return (http2 ??= createRequire(import.meta.url)('node:http2') as Http2Module);
}

const NGHTTP2_NO_ERROR = 0;
const NGHTTP2_ENHANCE_YOUR_CALM = 11;
/** Client resets allowed in a burst on one connection, and their refill per second. */
const RESET_BURST = 200;
const RESET_RATE = 30;
/**
 * Response bytes one connection may have handed to node:http2 and not sent yet (waiting for
 * window or for the socket). Enough to keep a connection's socket busy; small enough that a
 * client granting no window parks little: writes past it wait (see SendBudget).
 */
const SEND_BUDGET = 256 * 1024;
/**
 * node:http2's bound on what nghttp2 itself holds per session (header tables, queued control
 * frames, unread input; not the DATA queued by streams, which SEND_BUDGET bounds), in MB:
 * node's default, stated so it is not raised by accident. Past it new streams are refused
 * (ENHANCE_YOUR_CALM).
 */
const MAX_SESSION_MEMORY_MB = 10;

/** One node:http2 server object per switchyard server: it only turns sockets into sessions. */
const factories = new WeakMap<ProtocolHost, { server: Http2Server; config: H2ServerConfig }>();

function factoryFor(host: ProtocolHost): { server: Http2Server; config: H2ServerConfig } {
  let f = factories.get(host);
  if (f === undefined) {
    const config = serverConfig(host.info, host.limits);
    const h2 = loadHttp2();
    const max = config.maxConcurrentStreams === 0 ? 2 ** 32 - 1 : config.maxConcurrentStreams;
    const server = h2.createServer({
      settings: {
        initialWindowSize: config.settings.initialWindowSize,
        maxConcurrentStreams: max,
        maxHeaderListSize: Math.min(config.limits.maxHeaderBytes, 2 ** 32 - 1),
        enablePush: false,
      },
      // Header pairs per block: generous (HTTP/1 has no count limit), bounded by maxHeaderListSize anyway.
      maxHeaderListPairs: 4096,
      // nghttp2 answers a flood of resets, pings or settings with GOAWAY (CVE-2023-44487 and kin).
      maxSessionInvalidFrames: 1000,
      maxSessionRejectedStreams: 100,
      maxSessionMemory: MAX_SESSION_MEMORY_MB,
    });
    // The kernel's own timeouts apply; node's socket timeout is off.
    (server as unknown as { timeout: number }).timeout = 0;
    f = { server, config };
    factories.set(host, f);
  }
  return f;
}

/**
 * Serves HTTP/2 on `socket` for `host`. `head` holds bytes already read from it (the preface
 * on plain TCP); they are put back before node:http2 reads. Returns the connection.
 */
export function serveH2(socket: Duplex, host: ProtocolHost, head: Uint8Array | null): H2ServerConnection {
  const f = factoryFor(host);
  if (head !== null && head.length > 0) socket.unshift(Buffer.from(head.buffer, head.byteOffset, head.length));
  let session: ServerHttp2Session | null = null;
  const grab = (s: ServerHttp2Session): void => {
    session = s;
  };
  // node:http2 builds the session synchronously inside this emit.
  f.server.once('session', grab);
  f.server.emit('connection', socket);
  f.server.removeListener('session', grab);
  if (session === null) {
    socket.destroy();
    throw new Error('node:http2 did not start a session on the connection');
  }
  const conn = new H2ServerConnection(session, socket, host, f.config);
  // node:http2 takes the bytes buffered in the socket on the next tick, then reads the handle
  // directly; the handle must be reading, which a paused socket (or one whose buffer filled
  // during protocol detection) is not. Resuming after that tick starts it without a byte
  // going past the session.
  process.nextTick(resumeSocket, socket);
  return conn;
}

/**
 * @internal One HTTP/2 server connection (a node:http2 session) in a switchyard server.
 *
 * `readHeaderTimeout` over HTTP/2. node:http2 emits 'stream' only once a request's header block
 * is complete, so the head of one stream cannot be timed as HTTP/1.1 times it. What is measured
 * instead, per connection, with a check every `readHeaderTimeout` ms (off when it is 0):
 * - From the session's start (the handover after TLS/ALPN, or after the h2c preface was seen)
 *   to the first complete request header block: a connection that has sent none by the first
 *   check (only the preface and SETTINGS, say, or nothing) is closed with GOAWAY.
 * - A header block begun and not completed: nghttp2 opens a stream when a HEADERS frame starts
 *   (`session.state.lastProcStreamID` moves), and node emits 'stream' at END_HEADERS. A stream id
 *   begun but not emitted at two checks in a row (a HEADERS frame cut short, or one whose
 *   CONTINUATION never comes) closes the connection with GOAWAY (NO_ERROR) at once, dropping any
 *   stream still open: so the block had at least
 *   `readHeaderTimeout` and at most twice that. This holds whether or not other streams are open
 *   (while a block is incomplete the client can send nothing else on the connection).
 * - A connection with no header block in progress is never cut by this, however slowly its open
 *   streams move (their bodies are `readTimeout`'s, writes `writeTimeout`'s), and between
 *   requests it is `idleTimeout`'s, as over HTTP/1.1.
 * There is no 408 response: no stream exists to carry it. Streams nghttp2 refuses (past
 * `maxConcurrentStreams`) do not move `lastProcStreamID`; but a header block nghttp2 resets as
 * malformed does, and is never emitted: unless a newer block completes within two checks, that
 * connection is closed by the same rule (a client's malformed request costs it the connection).
 */
export class H2ServerConnection implements ProtocolConnection, StreamOwner {
  readonly session: ServerHttp2Session;
  private readonly socket: Duplex;
  private readonly host: ProtocolHost;
  readonly readTimeout: number;
  readonly writeTimeout: number;
  readonly sendBudget = new SendBudget(SEND_BUDGET);
  private readonly idleTimeout: number;
  private readonly maxHeaderBytes: number;
  private resetBudget = RESET_BURST;
  private resetAt = performance.now();
  private peer: PeerAddr | null = null;
  /** Streams whose exchange is still going (a stream answered in full at once is not counted). */
  private active = 0;
  private idleTimer: NodeJS.Timeout | null = null;
  /** When a stream last arrived or the last active one closed (`performance.now()`). */
  private lastActivity = performance.now();
  private closed = false;
  /** The `readHeaderTimeout` check (an interval), or null when off. */
  private headerTimer: NodeJS.Timeout | null = null;
  /** Highest stream id whose header block completed ('stream'), 0 before the first. */
  private lastStreamId = 0;
  /** The begun, incomplete header block's stream id the previous check saw, or 0. */
  private pendingId = 0;
  /** The last request authority found valid (see targetError). */
  private validAuthority: string | undefined = undefined;

  constructor(session: ServerHttp2Session, socket: Duplex, host: ProtocolHost, config: H2ServerConfig) {
    this.session = session;
    this.socket = socket;
    this.host = host;
    this.readTimeout = config.limits.readTimeout;
    this.writeTimeout = config.limits.writeTimeout;
    this.idleTimeout = config.limits.idleTimeout;
    this.maxHeaderBytes = config.limits.maxHeaderBytes;
    // node's server listens too, only to emit each stream again on the factory server, where
    // nothing listens: dropped, as a second listener makes emit() copy the listener array for
    // every stream.
    session.removeAllListeners('stream');
    session.on('stream', this.onStream);
    session.on('error', noop);
    session.once('close', this.onClose);
    const win = config.settings.connectionWindowSize;
    if (win > 65535) {
      try {
        session.setLocalWindowSize(win);
      } catch {
        // A session that died during setup: 'close' follows.
      }
    }
    if (!host.addConnection(this)) {
      this.shutdown();
      return;
    }
    this.armIdle();
    const rht = config.limits.readHeaderTimeout;
    if (rht > 0 && !this.closed) {
      this.headerTimer = setInterval(this.onHeaderCheck, rht);
      this.headerTimer.unref();
    }
  }

  /** The client's address (one object per connection). */
  peerAddr(): PeerAddr {
    return (this.peer ??= socketPeer(this.socket) ?? new PeerAddr('', 0));
  }

  /** Graceful close: GOAWAY now; the session closes once its streams are done. */
  shutdown(): void {
    if (this.closed || this.session.closed || this.session.destroyed) return;
    this.session.close();
  }

  /** Forced close: every stream is dropped. */
  destroy(): void {
    this.session.destroy();
    this.socket.destroy();
  }

  private readonly onStream = (stream: ServerHttp2Stream, _headers: IncomingHttpHeaders, flags: number, raw?: string[]): void => {
    // The header block is complete, whatever is answered (see the class comment).
    const id = stream.id ?? 0;
    if (id > this.lastStreamId) this.lastStreamId = id;
    let list = raw ?? flatten(_headers);
    if (headerListSize(list) > this.maxHeaderBytes) {
      // node:http2 advertises SETTINGS_MAX_HEADER_LIST_SIZE but accepts larger blocks: enforce it.
      refuse(stream, 431, `request header block exceeds maxHeaderBytes (${this.maxHeaderBytes})`);
      return;
    }
    // The pseudo-headers, Content-Length, and what needs a look before the handler (host,
    // cookie); the rest stays a field list until it is read.
    let method: string | undefined;
    let path: string | undefined;
    let authority: string | undefined;
    let cl: string | undefined;
    let host: string | undefined;
    let hosts = 0;
    let cookies = 0;
    for (let i = 0; i + 1 < list.length; i += 2) {
      const name = list[i]!;
      const value = list[i + 1]!;
      if (name.charCodeAt(0) === 0x3a) {
        if (name === ':method') method = value;
        else if (name === ':path') path = value;
        else if (name === ':authority') authority = value;
      } else if (name === 'content-length') cl ??= value;
      else if (name === 'host') {
        host = value;
        hosts++;
      } else if (name === 'cookie') cookies++;
    }
    if (hosts > 0) {
      // One authority reaches the handler, as `request.host` and as Host (RFC 9113 §8.3.1): a
      // `host` field naming another than `:authority` makes the request malformed, and so do
      // two of them (nghttp2 resets such a stream itself first; this holds without it).
      if (hosts > 1) {
        refuse(stream, 400, 'request has more than one host field');
        return;
      }
      if (authority === undefined) authority = host;
      else if (!sameAuthority(authority, host!, schemeOf(list))) {
        refuse(stream, 400, 'request host field names another authority than :authority');
        return;
      }
    }
    method ??= 'GET';
    const bad = this.targetError(method, path, authority);
    if (bad !== null) {
      refuse(stream, 400, bad);
      return;
    }
    // With :authority, Host is made from it (the host field it agrees with is left out);
    // split cookie fields are joined for readers of one Cookie header (RFC 9113 §8.2.3).
    const dropHost = hosts > 0 && authority !== host;
    if (cookies > 1 || dropHost) list = normalizeRequestFields(list, dropHost);
    const target = method === 'CONNECT' ? (authority ?? '') : (path ?? '/');
    const ended = (flags & 1) !== 0; // END_STREAM on HEADERS: no body
    let length = -1;
    if (ended) length = 0;
    else if (cl !== undefined && /^\d+$/.test(cl)) length = Number(cl);
    // The field list is read into Headers only when something reads request.headers; a
    // request without Host gets the authority there (HTTP/1 handlers read Host; RFC 9113 §8.3.1).
    const req = protocolRequest(method, target, list, ended ? nobody : null, length, authority ?? null, 2);
    if (!ended) stream.once('trailers', (t: Record<string, string | string[] | undefined>) => (req.trailers = trailersOf(t)));
    const wire = new H2ServerStream(stream, this, req, ended);
    // The idle timer stays armed; it looks at this when it fires (no clear and re-arm per stream).
    if (this.idleTimeout > 0) this.lastActivity = performance.now();
    void this.host.runExchange(req, wire);
    // Most streams are answered in full here (no body to read, the handler's response written
    // at once): nothing is left to watch on them. The others are counted until they close.
    if (!wire.settled) {
      wire.watchClose();
      this.active++;
    }
  };

  /**
   * Why a request's target is malformed (RFC 9113 §8.3.1, §8.5), as a sentence, or null: `:path`
   * is origin-form, or `*` for OPTIONS; CONNECT has no `:path` and a `host:port` authority; the
   * authority (`:authority`, or `host` without it) is `host[:port]` as HTTP/1's Host is, so no
   * userinfo and a numeric port. The rules are the kernel's HTTP/1 ones (`requestTargetError`,
   * `isValidHost`); the last authority found valid is remembered, as a connection's requests
   * usually all carry the same.
   */
  private targetError(method: string, path: string | undefined, authority: string | undefined): string | null {
    if (method === 'CONNECT') {
      if (path !== undefined) return 'a CONNECT request has no :path (RFC 9113 §8.5)';
      return requestTargetError(method, authority ?? '');
    }
    if (path !== undefined && path.charCodeAt(0) !== 0x2f && !(path === '*' && method === 'OPTIONS')) {
      return (
        requestTargetError(method, path) ??
        `:path ${JSON.stringify(path.length > 60 ? `${path.slice(0, 60)}...` : path)} is not a path starting with "/" (RFC 9113 §8.3.1: HTTP/2 carries the authority in :authority)`
      );
    }
    if (authority !== undefined && authority !== this.validAuthority) {
      if (!isValidHost(authority)) return `request authority ${JSON.stringify(authority.length > 60 ? `${authority.slice(0, 60)}...` : authority)} is not host[:port] (no userinfo, a numeric port)`;
      this.validAuthority = authority;
    }
    return null;
  }

  /** A stream closed; `aborted`: the client reset it before its response ended. */
  streamClosed(aborted: boolean): void {
    if (aborted) this.onAborted();
    this.active--;
    if (this.active === 0) {
      if (this.idleTimeout > 0) this.lastActivity = performance.now();
      this.armIdle();
    }
  }

  /**
   * A stream the client reset before its response ended. Many of them fast is the rapid-reset
   * attack (CVE-2023-44487): each costs a handler run and the client nothing. Past a budget
   * (a burst of 200, refilled at 30 per second) the connection is closed with
   * ENHANCE_YOUR_CALM, before nghttp2's own limit would end it without closing the socket.
   */
  private onAborted(): void {
    const now = performance.now();
    this.resetBudget = Math.min(RESET_BURST, this.resetBudget + ((now - this.resetAt) / 1000) * RESET_RATE);
    this.resetAt = now;
    this.resetBudget -= 1;
    if (this.resetBudget < 0 && !this.closed) {
      this.closed = true;
      // Not from inside this event: nghttp2 is still on the stack (destroying now aborts node).
      setImmediate(() => this.session.destroy(new Error('too many streams reset by the client'), NGHTTP2_ENHANCE_YOUR_CALM));
    }
  }

  private armIdle(ms = this.idleTimeout): void {
    if (this.idleTimeout <= 0 || this.closed || this.idleTimer !== null) return;
    this.idleTimer = setTimeout(this.onIdle, ms);
    this.idleTimer.unref();
  }

  /** Closes the connection once no stream is going and none arrived for `idleTimeout`. */
  private readonly onIdle = (): void => {
    this.idleTimer = null;
    // Streams going: the last one to close arms the timer again.
    if (this.active > 0) return;
    const idleFor = performance.now() - this.lastActivity;
    if (idleFor < this.idleTimeout - 1) this.armIdle(this.idleTimeout - idleFor);
    else this.shutdown();
  };

  /** The `readHeaderTimeout` check (see the class comment for what it measures). */
  private readonly onHeaderCheck = (): void => {
    if (this.closed || this.session.closed || this.session.destroyed) {
      this.clearHeaderTimer();
      return;
    }
    if (this.lastStreamId === 0 && this.active === 0) {
      // No complete request head since the session started.
      this.headerTimedOut();
      return;
    }
    let begun: number;
    try {
      begun = this.session.state.lastProcStreamID ?? 0;
    } catch {
      return; // the session went away under us: 'close' follows
    }
    if (begun <= this.lastStreamId) {
      this.pendingId = 0;
      return;
    }
    if (this.pendingId === begun) this.headerTimedOut();
    else this.pendingId = begun;
  };

  /**
   * GOAWAY (NO_ERROR: HTTP/2 has no timeout code) and the socket closed. Not `close()`: nghttp2
   * keeps a stream whose header block is incomplete open, so a graceful close would wait for a
   * client that sends nothing. Bytes already queued (finished responses) go out before the
   * socket ends; a stream still open is dropped (its client, stuck mid-block, could send no
   * more on it anyway).
   */
  private headerTimedOut(): void {
    this.clearHeaderTimer();
    this.closed = true;
    this.session.destroy(undefined, NGHTTP2_NO_ERROR);
  }

  private clearHeaderTimer(): void {
    if (this.headerTimer !== null) clearInterval(this.headerTimer);
    this.headerTimer = null;
  }

  private readonly onClose = (): void => {
    this.closed = true;
    this.clearHeaderTimer();
    if (this.idleTimer !== null) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    if (!this.socket.destroyed) this.socket.destroy();
    this.host.removeConnection(this);
  };
}

function noop(): void {}

/**
 * Answers a stream the pipeline never sees: a request the connection refuses before any handler
 * (a malformed one, RFC 9113 §8.1.1, or one past a limit), with `status` and `message` as text.
 */
function refuse(stream: ServerHttp2Stream, status: number, message: string): void {
  sinkErrors(stream);
  stream.respond({ ':status': status, 'content-type': 'text/plain; charset=utf-8' }, { endStream: false });
  stream.end(`${message}\n`);
}

/** The `:scheme` of a request's field list (read only on the rare path that compares authorities). */
function schemeOf(list: readonly string[]): string | undefined {
  for (let i = 0; i + 1 < list.length; i += 2) if (list[i] === ':scheme') return list[i + 1];
  return undefined;
}

function resumeSocket(socket: Duplex): void {
  if (!socket.destroyed) socket.resume();
}

/** node's header object as a flat `[name, value, …]` list (for a node without rawHeaders). */
function flatten(h: IncomingHttpHeaders): string[] {
  const out: string[] = [];
  for (const k of Object.keys(h)) {
    const v = h[k];
    if (Array.isArray(v)) for (const x of v) out.push(k, x);
    else if (v !== undefined) out.push(k, String(v));
  }
  return out;
}
