/**
 * Opening client connections: the kernel's own TCP and TLS connect, with `connectTimeout`
 * covering DNS, TCP and the TLS handshake, and the errors the reference names for each
 * step (`DNSError`, `ConnectError`, `TLSHandshakeError`, `TimeoutError`).
 */
import { performance } from 'node:perf_hooks';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { ArgumentError, ConnectError, DNSError, TimeoutError, TLSHandshakeError } from '../errors.js';
import type { ConnectOptions } from '../hooks.js';
import { nodeTls } from '../builtins.js';
import type { RequestContext } from '../message/context.js';
import { hostPort } from '../message/uri.js';

const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NONAME', 'EAI_NODATA', 'ENODATA', 'ESERVFAIL']);

/**
 * Checks that `addr` is an IP literal (the reference's `local_addr` rule: interface names are
 * not accepted). Whether it is an address of this machine is decided by binding it when a
 * connection opens ({@link dialTcp}): any 127/8 address binds on Linux though only 127.0.0.1
 * is listed as `lo`'s address.
 */
export function checkLocalAddr(addr: unknown): string | undefined {
  if (addr === undefined || addr === null) return undefined;
  if (typeof addr !== 'string' || net.isIP(addr) === 0) {
    throw new ArgumentError(`localAddr must be an IP address string (interface names are not accepted), got ${typeof addr === 'string' ? JSON.stringify(addr) : typeof addr}`);
  }
  return addr;
}

/**
 * Opens TCP to `host:port` (from `localAddress` when given): the socket at once, and a promise
 * for its `connect` that rejects with the kernel's errors: `DNSError` for the name,
 * `ArgumentError` when `localAddress` cannot be bound (not an address of this machine, or of
 * another family than the peer), `ConnectError` (for `address`, default `host:port`) otherwise.
 * The kernel's own connect and plugins' `client.connect` taps (a proxy tunnel) dial through here.
 */
export function dialTcp(host: string, port: number, localAddress: string | undefined, address = hostPort(host, port)): { socket: net.Socket; connected: Promise<void> } {
  const socket = net.connect({ host, port, localAddress, noDelay: true });
  const connected = new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => {
      socket.destroy();
      reject(connectFailure(err, host, address, localAddress));
    };
    socket.once('error', onError);
    socket.once('connect', () => {
      // Until its owner attaches a listener, a late error must not crash the process.
      socket.removeListener('error', onError);
      socket.on('error', noop);
      resolve();
    });
  });
  return { socket, connected };
}

/** The kernel's error for a failed TCP connect (see {@link dialTcp}). */
function connectFailure(err: NodeJS.ErrnoException, host: string, address: string, localAddress: string | undefined): Error {
  if (err.code !== undefined && DNS_CODES.has(err.code)) return new DNSError(host, err);
  if (err.syscall === 'bind' && localAddress !== undefined) {
    const why = err.code === 'EADDRNOTAVAIL' ? 'is not an address of this machine' : `cannot be bound for a connection to ${address}`;
    return new ArgumentError(`localAddr ${localAddress} ${why} (${err.code ?? err.message})`, { cause: err });
  }
  return new ConnectError(address, err);
}

/** Runs `step` under the connect deadline and cancellation; `onAbort` destroys what the step made. */
function bounded<T>(
  ctx: RequestContext,
  deadlineAt: number,
  timeoutMs: number,
  op: 'connect' | 'tls_handshake',
  started: number,
  step: (resolve: (v: T) => void, reject: (e: unknown) => void) => () => void,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    let timer: NodeJS.Timeout | null = null;
    let removeCancel: () => void = noop;
    const finish = (): void => {
      settled = true;
      if (timer !== null) clearTimeout(timer);
      removeCancel();
    };
    const abort = step(
      (v) => {
        if (settled) return;
        finish();
        resolve(v);
      },
      (e) => {
        if (settled) return;
        finish();
        reject(e);
      },
    );
    // The earlier of connectTimeout and the request's own deadline bounds the step.
    const ctxDeadline = ctx.deadline;
    const requestFirst = ctxDeadline > 0 && (deadlineAt === 0 || ctxDeadline < deadlineAt);
    const at = requestFirst ? ctxDeadline : deadlineAt;
    if (at > 0) {
      timer = setTimeout(
        () => {
          if (settled) return;
          finish();
          abort();
          const elapsed = Math.round(performance.now() - started);
          reject(
            requestFirst ? new TimeoutError('request', 0, elapsed, `request deadline passed during ${op === 'connect' ? 'connect' : 'the TLS handshake'}`) : new TimeoutError(op, timeoutMs, elapsed),
          );
        },
        Math.max(0, at - performance.now()),
      );
      timer.unref();
    }
    removeCancel = ctx.onCancel((err) => {
      if (settled) return;
      finish();
      abort();
      reject(err);
    });
  });
}

function noop(): void {}

/**
 * Connects to `o.host:o.port` (TCP, then TLS for `https:`), or wraps `given` (a socket a
 * `client.connect` tap supplied) in TLS when needed. Resolves to the connected stream.
 */
export async function openConnection(o: ConnectOptions, ctx: RequestContext, given: Duplex | null, started = performance.now()): Promise<Duplex> {
  const deadlineAt = o.timeoutMs > 0 ? started + o.timeoutMs : 0;
  let socket: Duplex;
  if (given !== null) {
    socket = given;
  } else {
    const { socket: s, connected } = dialTcp(o.host, o.port, o.localAddress);
    socket = await bounded<net.Socket>(ctx, deadlineAt, o.timeoutMs, 'connect', started, (resolve, reject) => {
      connected.then(() => resolve(s), reject);
      return () => s.destroy();
    });
  }
  // A stream already secured (a TLSSocket, or an in-memory stream marked `encrypted` as
  // TLSSocket is) gets no second TLS layer.
  if (o.protocol !== 'https:' || (socket as { encrypted?: unknown }).encrypted === true) return socket;
  const tls = nodeTls();
  if (socket instanceof tls.TLSSocket) return socket;
  const raw = socket;
  return bounded<TLSSocket>(ctx, deadlineAt, o.timeoutMs, 'tls_handshake', started, (resolve, reject) => {
    const servername = o.servername ?? (net.isIP(o.host) === 0 ? o.host : undefined);
    const t = tls.connect({
      ...(o.tls ?? {}),
      socket: raw,
      // The name the certificate is checked against: without it Node checks 'localhost'.
      host: o.host,
      servername,
      ALPNProtocols: o.alpnProtocols,
    });
    const onErr = (err: Error): void => {
      t.destroy();
      reject(new TLSHandshakeError(err));
    };
    t.once('secureConnect', () => {
      t.removeListener('error', onErr);
      t.on('error', noop);
      resolve(t);
    });
    t.once('error', onErr);
    return () => t.destroy();
  });
}
