/**
 * The exchange wire the server's pipeline runs on while someone subscribes to the server's
 * per-request diagnostics channels: it hands every call to the protocol's own wire and
 * publishes what it sees going out (the final head, the body's bytes, its end). Every
 * protocol's exchanges pass the pipeline, so one decorator reports HTTP/1.1 and HTTP/2 alike;
 * none is made while nobody listens.
 */
import { Buffer } from 'node:buffer';
import type { Duplex } from 'node:stream';
import { performance } from 'node:perf_hooks';
import { channels, type ServerRequestContext } from '../diagnostics.js';
import type { Headers } from '../message/headers.js';
import type { Request } from '../message/request.js';
import { protocolResponse, type Response } from '../message/response.js';
import type { ExchangeWire, UpgradeInfo } from './protocol-host.js';
import type { PeerAddr } from './peer.js';

/** Observed exchanges by request, for the errors the server reports about them (a cold path). */
const byRequest = new WeakMap<Request, ObservedWire>();

/** The observed wire of `request`'s exchange, when it has one. */
export function observedWire(request: Request): ObservedWire | undefined {
  return byRequest.get(request);
}

/** @internal See the module notes. */
export class ObservedWire implements ExchangeWire {
  /** The protocol's wire. */
  readonly inner: ExchangeWire;
  private readonly request: Request;
  /** `performance.now()` at `request:start`. */
  private readonly started: number;
  /** The response as its head went out (status, reason, headers), once it did. */
  private response: Response | null = null;
  private bytes = 0;
  private finished = false;
  /** The context of the `server:request` trace, when one runs. */
  trace: ServerRequestContext | null = null;
  /** The first error reported about this exchange. */
  private error: unknown = undefined;
  private failed = false;
  /** See {@link ExchangeWire.takeSocket}: present when the protocol's wire has it. */
  readonly takeSocket?: () => { socket: Duplex } & UpgradeInfo;

  constructor(inner: ExchangeWire, request: Request) {
    this.inner = inner;
    this.request = request;
    this.started = performance.now();
    const take = inner.takeSocket;
    if (take !== undefined) this.takeSocket = () => take.call(inner);
    byRequest.set(request, this);
  }

  get protocol(): string {
    return this.inner.protocol;
  }
  get writable(): boolean {
    return this.inner.writable;
  }
  get bodyError(): unknown {
    return this.inner.bodyError;
  }
  get committed(): boolean | undefined {
    return this.inner.committed;
  }
  get bodyChunk(): number | undefined {
    return this.inner.bodyChunk;
  }
  get reusable(): boolean | undefined {
    return this.inner.reusable;
  }
  peerAddr(): PeerAddr {
    return this.inner.peerAddr();
  }
  readBody(): Promise<Uint8Array | null> {
    return this.inner.readBody();
  }
  discardBody(): void {
    this.inner.discardBody();
  }
  sendContinue(): void {
    this.inner.sendContinue();
  }
  ready(): Promise<void> | undefined {
    return this.inner.ready();
  }
  abort(error: unknown): void {
    this.inner.abort(error);
  }

  head(status: number, headers: Headers, contentLength: number, end: boolean, trailers?: boolean, reason?: string, close?: boolean): void {
    this.inner.head(status, headers, contentLength, end, trailers, reason, close);
    // A head that replaces a held one (a 500 after a failed stream handler) starts the count again.
    this.bytes = 0;
    const res = protocolResponse(status, reason ?? '', headers, null, contentLength, this.request.protoMajor, this.request.protoMinor, this.request);
    this.response = res;
    const ch = channels.serverResponseHeaders;
    if (ch.hasSubscribers) ch.publish({ request: this.request, response: res });
    // A wire that holds the response keeps even an ended head until end().
    if (end && this.inner.committed !== false) this.finish();
  }

  data(bytes: Uint8Array | string, end: boolean, owned?: boolean): Promise<void> | undefined {
    this.bytes += typeof bytes === 'string' ? Buffer.byteLength(bytes, 'utf8') : bytes.length;
    const w = this.inner.data(bytes, end, owned);
    if (end) this.finish();
    return w;
  }

  end(trailers: Headers | null): Promise<void> | undefined {
    const w = this.inner.end(trailers);
    this.finish();
    return w;
  }

  /** The response's last byte was handed to the protocol's wire. */
  private finish(): void {
    if (this.finished || this.response === null) return;
    this.finished = true;
    const ch = channels.serverResponseFinish;
    if (ch.hasSubscribers) ch.publish({ request: this.request, response: this.response, bytes: this.bytes, elapsedMs: performance.now() - this.started });
  }

  /** The server reported `error` about this exchange: the trace's `error`, when it is the first. */
  reported(error: unknown): void {
    if (this.failed) return;
    this.failed = true;
    this.error = error;
  }

  /** The exchange is over: the trace's `error` (when the exchange failed), `asyncStart` and `asyncEnd`. */
  over(): void {
    byRequest.delete(this.request);
    const ctx = this.trace;
    if (ctx === null) return;
    this.trace = null;
    const tc = channels.serverRequest;
    if (this.response !== null) ctx.result = this.response;
    if (this.failed) {
      ctx.error = this.error;
      tc.error.publish(ctx);
    }
    tc.asyncStart.publish(ctx);
    tc.asyncEnd.publish(ctx);
  }
}
