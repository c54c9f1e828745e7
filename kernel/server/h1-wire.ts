/**
 * The HTTP/1.1 wire: how one exchange's response goes onto an HTTP/1.1 connection. The framing
 * (Content-Length, chunked, until close, none) comes from the HTTP/1 framing authority
 * (`responseFraming`, `buildResponseHead`); the wire adds the connection's Date and Connection
 * fields, keeps a fixed-length head pending so it leaves in one write with the body, and, for a
 * stream handler, holds a fixed-length response until `HOLD_BYTES` or its end, so a handler
 * that fails before then still gets a clean 500.
 *
 * One wire serves every exchange of its connection in turn (HTTP/1.1 runs one at a time), so an
 * exchange costs no wire object.
 */
import { Buffer } from 'node:buffer';
import type { Duplex } from 'node:stream';
import { eqIgnoreCase, type Headers } from '../message/headers.js';
import { buildResponseHead, opensTunnel, responseFraming, type BodyKind } from '../http1/framing.js';
import { CONN_CLOSE, connectionFlags } from '../http1/head-parser.js';
import { encodeChunk, encodeMessage, serializeLastChunk } from '../http1/serialize.js';
import { dateField } from './date.js';
import type { PeerAddr } from './peer.js';
import type { ExchangeWire, UpgradeInfo } from './protocol-host.js';

/** A stream handler's fixed-length response is held (not sent) until its body grows past this many bytes. */
export const HOLD_BYTES = 4096;

/** A body at least this large leaves in its own write instead of being copied behind the head. */
const COPY_BEHIND_HEAD = 65536;

/** Bytes of a streamed response body read at a time. */
const BODY_CHUNK = 65536;

/** @internal What the HTTP/1.1 wire needs from its connection: the request side it hands on, and the socket. */
export interface H1WireConnection extends Pick<ExchangeWire, 'writable' | 'bodyError' | 'peerAddr' | 'readBody' | 'discardBody' | 'sendContinue'> {
  takeSocket(): { socket: Duplex } & UpgradeInfo;
  /** Queues bytes (latin1 for strings) on the socket; a Promise when the socket asks to wait. */
  send(data: Uint8Array | string): Promise<void> | undefined;
  /** Queues a head (latin1) and a body (a string as UTF-8) as one piece; a Promise when the socket asks to wait. */
  sendMessage(head: string, body: Uint8Array | string): Promise<void> | undefined;
  /** True when nothing sent waits in the connection or its socket (the last bytes were taken at once). */
  readonly flushed: boolean;
  /** Whether the connection closes after this exchange, given the response asks to (`close`) or not. */
  closesAfter(close: boolean): boolean;
  /** The whole response is written; `close`: the connection closes after it. */
  responseDone(close: boolean): void;
  /** A response that was partly written cannot be completed. */
  responseFailed(): void;
}

// Flags from one pass over a response's header names (see scanHeaders).
const H_DATE = 1;
const H_CONN_CLOSE = 2;
const H_CONNECTION = 4;

/** @internal The {@link ExchangeWire} of an HTTP/1.1 connection. */
export class H1Wire implements ExchangeWire {
  private readonly conn: H1WireConnection;
  // The exchange (see begin).
  private method = '';
  private minor = 1;
  /** Hold a fixed-length response until HOLD_BYTES or its end (stream handlers). */
  private hold = false;
  // The response.
  private kind: BodyKind = 'none';
  /** The head, when it waits to leave with the first body bytes (or, held, with the end). */
  private pending: string | null = null;
  private held: Uint8Array[] | null = null;
  private heldBytes = 0;
  private sentAny = false;
  /** The last body bytes went to the socket as given, not copied (see reusable). */
  private lent = false;
  private done = false;
  private close = false;

  constructor(conn: H1WireConnection) {
    this.conn = conn;
  }

  /** On the prototype, not a field per connection. */
  get protocol(): string {
    return 'http/1.1';
  }

  get bodyChunk(): number {
    return BODY_CHUNK;
  }

  /** @internal A new exchange: the request's method and minor version; `hold` for a stream handler's response. */
  begin(method: string, minor: number, hold: boolean): void {
    this.method = method;
    this.minor = minor;
    this.hold = hold;
    this.kind = 'none';
    this.pending = null;
    this.held = null;
    this.heldBytes = 0;
    this.sentAny = false;
    this.done = false;
    this.close = false;
  }

  /** @internal True once the response went out whole. */
  get finished(): boolean {
    return this.done;
  }

  get committed(): boolean {
    return this.sentAny;
  }

  get reusable(): boolean {
    return !this.lent || this.conn.flushed;
  }

  // ---- the request side: the connection's --------------------------------------------------

  get writable(): boolean {
    return this.conn.writable;
  }

  get bodyError(): unknown {
    return this.conn.bodyError;
  }

  peerAddr(): PeerAddr {
    return this.conn.peerAddr();
  }

  readBody(): Promise<Uint8Array | null> {
    return this.conn.readBody();
  }

  discardBody(): void {
    this.conn.discardBody();
  }

  sendContinue(): void {
    this.conn.sendContinue();
  }

  takeSocket(): { socket: Duplex } & UpgradeInfo {
    return this.conn.takeSocket();
  }

  // ---- the response ------------------------------------------------------------------------

  head(status: number, headers: Headers, contentLength: number, end: boolean, _trailers = true, reason = '', close = false): void {
    // Once out whole, the exchange has its answer; a held response is replaced. (A closed
    // connection drops what is sent: no check per call.)
    if (this.done || this.sentAny) return;
    this.pending = null;
    this.held = null;
    this.heldBytes = 0;
    const kind = responseFraming(status, this.method, contentLength, this.minor);
    const flags = scanHeaders(headers);
    const c = this.conn.closesAfter(close || kind === 'close' || (flags & H_CONN_CLOSE) !== 0);
    let fields = (flags & H_DATE) === 0 ? dateField() : '';
    if ((flags & H_CONNECTION) === 0) {
      if (c) fields += 'Connection: close\r\n';
      else if (this.minor === 0) fields += 'Connection: keep-alive\r\n';
    }
    const head = buildResponseHead(status, reason, headers, kind, contentLength, fields, this.method);
    this.kind = kind;
    // A 101 hands the connection over, and a 2xx to CONNECT announces a tunnel the handler did
    // not take (it would have upgraded the stream): nothing more is read on it as HTTP/1.1.
    this.close = c || status === 101 || opensTunnel(status, this.method);
    if (end || kind === 'none') {
      this.pending = head;
      // Held: a stream handler may still fail; the head goes at end().
      if (!end || this.hold) return;
      this.finish(head);
      return;
    }
    if (kind === 'length') {
      this.pending = head;
      if (this.hold) this.held = [];
      return;
    }
    // Chunked or until close: the first bytes may be long in coming, so the head goes now.
    this.sentAny = true;
    void this.conn.send(head);
  }

  data(bytes: Uint8Array | string, end: boolean, owned = false): Promise<void> | undefined {
    if (this.done) return undefined;
    this.lent = false;
    switch (this.kind) {
      case 'none':
        return end ? this.end(null) : undefined;
      case 'length': {
        const head = this.pending;
        const held = this.held;
        // The whole body at once is not held: it goes with the head, as below.
        if (held !== null && end && held.length === 0) this.held = null;
        else if (held !== null) {
          const buf = utf8(bytes);
          const total = this.heldBytes + buf.length;
          if (!end && total <= HOLD_BYTES) {
            // A copy: the caller may reuse its buffer once this returns (a string's bytes are new).
            held.push(owned || typeof bytes === 'string' ? buf : Buffer.from(buf));
            this.heldBytes = total;
            return undefined;
          }
          // Past the hold: the head and everything held go out together.
          held.push(buf);
          this.held = null;
          this.pending = null;
          const out = Buffer.allocUnsafe(head!.length + total);
          out.write(head!, 0, 'latin1');
          let at = head!.length;
          for (const piece of held) {
            out.set(piece, at);
            at += piece.length;
          }
          return this.sendBody(out, end);
        }
        if (head === null) return this.sendBody(this.kept(bytes, owned || end), end);
        this.pending = null;
        // Head and body in one write; a large last piece goes on its own rather than be copied.
        if (end && bytes.length < COPY_BEHIND_HEAD) {
          this.sentAny = true;
          const w = this.conn.sendMessage(head, bytes);
          this.complete();
          return w;
        }
        if (!end) return this.sendBody(encodeMessage(head, bytes), false);
        this.sentAny = true;
        void this.conn.send(head);
        return this.sendBody(utf8(bytes), end);
      }
      case 'chunked': {
        const chunk = encodeChunk(utf8(bytes));
        if (!end) return this.sendBody(chunk, false);
        this.sentAny = true;
        void this.conn.send(chunk);
        return this.finish(serializeLastChunk(null));
      }
      default:
        return this.sendBody(this.kept(bytes, owned || end), end);
    }
  }

  /** Bytes the socket will keep: the caller's own when given away (`owned`, or a last write), else a copy. */
  private kept(bytes: Uint8Array | string, owned: boolean): Uint8Array {
    if (typeof bytes === 'string') return Buffer.from(bytes, 'utf8');
    if (!owned) return Buffer.from(bytes);
    this.lent = true;
    return bytes;
  }

  /** Body bytes (with whatever head was pending) on the socket; `end` finishes the response. */
  private sendBody(out: Uint8Array, end: boolean): Promise<void> | undefined {
    if (end) return this.finish(out);
    this.sentAny = true;
    return this.conn.send(out);
  }

  ready(): Promise<void> | undefined {
    return undefined;
  }

  end(trailers: Headers | null): Promise<void> | undefined {
    if (this.done) return undefined;
    const head = this.pending;
    if (this.kind === 'chunked') return this.finish(serializeLastChunk(trailers));
    if (head === null) {
      this.complete();
      return undefined;
    }
    this.pending = null;
    const held = this.held;
    this.held = null;
    if (held === null || held.length === 0) return this.finish(head);
    // Head and body as one piece, as a whole body given at once goes (see data).
    this.sentAny = true;
    const w = this.conn.sendMessage(head, held.length === 1 ? held[0]! : Buffer.concat(held, this.heldBytes));
    this.complete();
    return w;
  }

  /** Sends the last of the response (a string: latin1, a head or a last chunk) and tells the connection. */
  private finish(out: string | Uint8Array): Promise<void> | undefined {
    this.sentAny = true;
    const w = this.conn.send(out);
    this.complete();
    return w;
  }

  private complete(): void {
    this.done = true;
    this.conn.responseDone(this.close);
  }

  abort(_error: unknown): void {
    this.done = true;
    this.conn.responseFailed();
  }
}

/** Body bytes as given, a string as UTF-8. */
function utf8(bytes: Uint8Array | string): Uint8Array {
  return typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : bytes;
}

/** One pass over the response's header names for the few the connection must know about. */
function scanHeaders(h: Headers): number {
  const names = h._names;
  let flags = 0;
  for (let i = 0; i < names.length; i++) {
    const n = names[i]!;
    switch (n.length) {
      case 4:
        if (eqIgnoreCase(n, 'date')) flags |= H_DATE;
        break;
      case 10:
        if (eqIgnoreCase(n, 'connection')) {
          flags |= H_CONNECTION;
          // The close token, not the substring: `Connection: x-closed` keeps the connection.
          if ((connectionFlags(h._values[i]!) & CONN_CLOSE) !== 0) flags |= H_CONN_CLOSE;
        }
        break;
    }
  }
  return flags;
}
