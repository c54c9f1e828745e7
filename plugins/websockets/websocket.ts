/**
 * `WebSocket`: one open connection, client or server side, as a message queue with Promises.
 * `send` writes a text (string) or binary (bytes) message; `receive` and `for await` read
 * them (text as string, binary as Uint8Array); `close` runs the closing handshake.
 *
 * Backpressure both ways, bounded memory:
 * - `send` resolves at once while less than {@link SEND_HIGH_WATER} bytes wait to be written,
 *   and otherwise once this message reached the socket, so a fast producer waits for a slow
 *   peer instead of queueing without end;
 * - received messages queue until read; past {@link RECEIVE_HIGH_WATER} queued messages the
 *   socket is paused (TCP pushes back on the peer) and resumed when the reader catches up.
 */
import { Buffer } from 'node:buffer';
import type { FrameConnection } from './frame-connection.js';
import { ArgumentError, PeerAddr, type Request, type Response } from '../../kernel/index.js';
import { NORMAL_CLOSE_CODES, WebSocketError } from './errors.js';

/** A message: text as a string, binary as bytes. */
export type Message = string | Uint8Array;

/** Bytes waiting to be written below which `send` resolves without waiting. */
export const SEND_HIGH_WATER = 1024 * 1024;
/** Messages queued unread at which reading from the socket pauses. */
export const RECEIVE_HIGH_WATER = 1024;

const RESOLVED: Promise<void> = Promise.resolve();

/** @internal What the plugin hands a new WebSocket. */
export interface WebSocketInit {
  readonly isServer: boolean;
  readonly request: Request;
  readonly response: Response;
  readonly subprotocol: string | null;
  readonly peer: PeerAddr | null;
}

type Resolve = (v: Message | IteratorResult<Message>) => void;
type Reject = (e: unknown) => void;

const DONE: IteratorResult<Message> = Object.freeze({ value: undefined, done: true }) as IteratorResult<Message>;

/** An open WebSocket connection. */
export class WebSocket implements AsyncIterable<Message> {
  /** True on the server side of the connection. */
  readonly isServer: boolean;
  /** The handshake request (the client's GET with `Upgrade: websocket`). */
  readonly request: Request;
  /** The handshake response (`101 Switching Protocols`). */
  readonly response: Response;
  /** The subprotocol agreed, or null. */
  readonly subprotocol: string | null;
  private readonly ws: FrameConnection;
  private readonly peer: PeerAddr | null;
  private queue: Message[] = [];
  private qHead = 0;
  // The reader waiting for the next message, kept in fields (no object per message).
  private waitResolve: Resolve | null = null;
  private waitReject: Reject | null = null;
  /** The reader waits in `for await`: resolve with an IteratorResult (one promise per message, not two). */
  private waitIter = false;
  private paused = false;
  private closeInfo: WebSocketError | null = null;
  private lastError: Error | null = null;
  private readonly closedPromise: Promise<void>;
  private pongWaiters: { resolve(): void; reject(e: unknown): void }[] = [];

  /** @internal Made by the plugin around a connection whose handshake is done. */
  constructor(ws: FrameConnection, init: WebSocketInit) {
    this.ws = ws;
    this.isServer = init.isServer;
    this.request = init.request;
    this.response = init.response;
    this.subprotocol = init.subprotocol;
    this.peer = init.peer;
    ws.on('message', (data, isBinary) => this.deliver(isBinary ? data : data.toString('utf8')));
    ws.on('pong', () => {
      const ws2 = this.pongWaiters;
      if (ws2.length === 0) return;
      this.pongWaiters = [];
      for (const w of ws2) w.resolve();
    });
    // 'error' comes for a protocol violation (then the close with its code): kept as the cause.
    ws.on('error', (err: Error) => {
      this.lastError = err;
    });
    this.closedPromise = new Promise((resolve) => {
      ws.once('close', (code: number, reason: Buffer) => {
        const text = reason.toString('utf8');
        const err = new WebSocketError(code, text, undefined, this.lastError !== null ? { cause: this.lastError } : undefined);
        this.closeInfo = err;
        const wake = this.waitResolve;
        const fail = this.waitReject;
        this.waitResolve = this.waitReject = null;
        if (wake !== null) {
          if (this.waitIter && NORMAL_CLOSE_CODES.has(code)) wake(DONE);
          else fail!(err);
        }
        for (const p of this.pongWaiters.splice(0)) p.reject(err);
        resolve();
      });
    });
  }

  /** The extensions agreed (`permessage-deflate` or empty). */
  get extensions(): string {
    return this.ws.extensions;
  }

  /** True when permessage-deflate was agreed. */
  get compressed(): boolean {
    return this.ws.extensions !== '';
  }

  /** True once the closing handshake started (either side) or the connection dropped. */
  get isClosed(): boolean {
    return this.ws.readyState !== 1;
  }

  /** The close code once closed (1005: none sent, 1006: dropped without a close frame; after a protocol error, the code this end sent), else null. */
  get closeCode(): number | null {
    return this.closeInfo?.closeCode ?? null;
  }

  /** The close reason once closed, else null. */
  get closeReason(): string | null {
    return this.closeInfo?.reason ?? null;
  }

  /** Bytes queued for the socket but not yet written. */
  get bufferedAmount(): number {
    return this.ws.bufferedAmount;
  }

  /** The peer's address (null when the socket does not have one, such as a caller's stream). */
  peerAddr(): PeerAddr | null {
    return this.peer;
  }

  /** Resolves once the connection is closed (close handshake done or connection dropped). */
  closed(): Promise<void> {
    return this.closedPromise;
  }

  private deliver(msg: Message): void {
    const resolve = this.waitResolve;
    if (resolve !== null) {
      this.waitResolve = this.waitReject = null;
      resolve(this.waitIter ? { value: msg, done: false } : msg);
      return;
    }
    this.queue.push(msg);
    if (!this.paused && this.queue.length - this.qHead >= RECEIVE_HIGH_WATER) {
      this.paused = true;
      this.ws.pause();
    }
  }

  /**
   * Sends a message: a string as a text frame, bytes as a binary frame. Resolves when the
   * socket can take more (see the module notes); throws {@link WebSocketError} once closed.
   */
  send(data: Message): Promise<void> {
    const isText = typeof data === 'string';
    if (!isText && !(data instanceof Uint8Array)) return Promise.reject(new ArgumentError(`send() takes a string (text) or a Uint8Array (binary), got ${data === null ? 'null' : typeof data}`));
    if (this.ws.readyState !== 1) return Promise.reject(this.closedError('send'));
    if (this.ws.bufferedAmount < SEND_HIGH_WATER) {
      this.ws.send(data);
      return RESOLVED;
    }
    return new Promise((resolve, reject) => {
      this.ws.send(data, (err) => (err ? reject(this.closeInfo ?? new WebSocketError(1006, '', undefined, { cause: err })) : resolve()));
    });
  }

  /**
   * The next message, waiting for it. Throws {@link WebSocketError} (with the close code and
   * reason) once the connection closed and every message that arrived before was read.
   */
  receive(): Promise<Message> {
    if (this.qHead < this.queue.length) return Promise.resolve(this.take());
    if (this.closeInfo !== null) return Promise.reject(this.closeInfo);
    if (this.waitResolve !== null) return Promise.reject(new ArgumentError('receive() is already waiting: read from one place at a time'));
    return new Promise<Message>((resolve, reject) => {
      this.waitResolve = resolve as Resolve;
      this.waitReject = reject;
      this.waitIter = false;
    });
  }

  private take(): Message {
    const m = this.queue[this.qHead]!;
    this.queue[this.qHead++] = '';
    if (this.qHead === this.queue.length) {
      this.queue = [];
      this.qHead = 0;
    } else if (this.qHead > 1024 && this.qHead * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.qHead);
      this.qHead = 0;
    }
    if (this.paused && this.queue.length - this.qHead < RECEIVE_HIGH_WATER / 2) {
      this.paused = false;
      this.ws.resume();
    }
    return m;
  }

  /**
   * Messages until the connection closes. A normal closure (1000, 1001, or no code) ends the
   * loop; any other close code throws {@link WebSocketError}.
   */
  [Symbol.asyncIterator](): AsyncIterator<Message> {
    return {
      next: (): Promise<IteratorResult<Message>> => {
        if (this.qHead < this.queue.length) return Promise.resolve({ value: this.take(), done: false });
        const c = this.closeInfo;
        if (c !== null) return NORMAL_CLOSE_CODES.has(c.closeCode) ? Promise.resolve(DONE) : Promise.reject(c);
        if (this.waitResolve !== null) return Promise.reject(new ArgumentError('the WebSocket is already being read: read from one place at a time'));
        return new Promise<IteratorResult<Message>>((resolve, reject) => {
          this.waitResolve = resolve as Resolve;
          this.waitReject = reject;
          this.waitIter = true;
        });
      },
      return: (): Promise<IteratorResult<Message>> => Promise.resolve(DONE),
    };
  }

  /**
   * Starts the closing handshake with `code` (default 1000) and `reason` (at most 123 bytes of
   * UTF-8) and resolves once the connection is closed. Closing a closed socket does nothing.
   */
  close(code = 1000, reason = ''): Promise<void> {
    if (!Number.isInteger(code) || !(code === 1000 || (code >= 1001 && code <= 1014 && code !== 1004 && code !== 1005 && code !== 1006) || (code >= 3000 && code <= 4999))) {
      throw new ArgumentError(`close code must be 1000, 1001-1014 other than 1004-1006, or 3000-4999; got ${String(code)}`);
    }
    if (typeof reason !== 'string' || Buffer.byteLength(reason) > 123) throw new ArgumentError('close reason must be a string of at most 123 bytes of UTF-8');
    const state = this.ws.readyState;
    if (state === 1) this.ws.close(code, reason);
    return this.closedPromise;
  }

  /** Drops the connection at once, without a closing handshake (the peer sees 1006). */
  terminate(): void {
    this.ws.terminate();
  }

  /** Sends a ping and resolves when the next pong arrives; throws {@link WebSocketError} if the connection closes first. */
  ping(data: string | Uint8Array = ''): Promise<void> {
    if (this.ws.readyState !== 1) return Promise.reject(this.closedError('ping'));
    if (Buffer.byteLength(data) > 125) return Promise.reject(new ArgumentError('ping data must be at most 125 bytes'));
    return new Promise((resolve, reject) => {
      this.pongWaiters.push({ resolve, reject });
      this.ws.ping(data);
    });
  }

  /** Sends an unsolicited pong (a one-way heartbeat). Pings are answered automatically. */
  pong(data: string | Uint8Array = ''): Promise<void> {
    if (this.ws.readyState !== 1) return Promise.reject(this.closedError('pong'));
    if (Buffer.byteLength(data) > 125) return Promise.reject(new ArgumentError('pong data must be at most 125 bytes'));
    this.ws.pong(data);
    return RESOLVED;
  }

  private closedError(what: string): WebSocketError {
    const c = this.closeInfo;
    if (c !== null) return new WebSocketError(c.closeCode, c.reason, `cannot ${what}: the WebSocket is closed (code ${c.closeCode})`, { cause: c });
    return new WebSocketError(1006, '', `cannot ${what}: the WebSocket is closing`);
  }
}
