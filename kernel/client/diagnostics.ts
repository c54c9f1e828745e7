/**
 * What the client's attempt loop and pool publish on the kernel's diagnostics channels
 * (kernel/diagnostics.ts): the messages that need a session's socket or a body's end. Called
 * only after a `hasSubscribers` check, so nothing here runs while nobody listens.
 */
import { Buffer } from 'node:buffer';
import type { Duplex } from 'node:stream';
import { performance } from 'node:perf_hooks';
import { channels, type ClientConnectionInfo } from '../diagnostics.js';
import type { ClientSession } from '../hooks.js';
import { AbstractBody } from '../message/body.js';
import type { Request } from '../message/request.js';
import type { Response } from '../message/response.js';
import { hostPort } from '../message/uri.js';
import { FlowBody } from './flow-body.js';

/** Where a connection goes (the transport's `Origin`, named by shape: the transport imports this module). */
interface Origin {
  readonly protocol: string;
  readonly host: string;
  readonly port: number;
}

/** The addresses of a socket (a tunnel's Duplex has none: empty and 0). */
interface Addressed {
  readonly localAddress?: string;
  readonly localPort?: number;
  readonly remoteAddress?: string;
  readonly remotePort?: number;
}

/** `scheme://host:port` of `origin`. */
export function originString(origin: Origin): string {
  return `${origin.protocol}//${hostPort(origin.host, origin.port)}`;
}

/** The connection `session` speaks on, as `request:headers` tells it. */
export function connectionInfo(session: ClientSession, reused: boolean): ClientConnectionInfo {
  const s = (session.socket ?? {}) as Addressed;
  return {
    protocol: session.protocol,
    reused,
    localAddress: s.localAddress ?? '',
    localPort: s.localPort ?? 0,
    remoteAddress: s.remoteAddress ?? '',
    remotePort: s.remotePort ?? 0,
  };
}

/** Publishes `connection:open` for a session just made on `socket`, `started` being when connecting began. */
export function publishOpen(origin: Origin, session: ClientSession, socket: Duplex, started: number): void {
  const s = socket as Addressed;
  channels.clientConnectionOpen.publish({
    origin: originString(origin),
    protocol: session.protocol,
    localAddress: s.localAddress ?? '',
    localPort: s.localPort ?? 0,
    remoteAddress: s.remoteAddress ?? '',
    remotePort: s.remotePort ?? 0,
    connectMs: performance.now() - started,
  });
}

/**
 * Publishes `response:end` once `res`'s body has arrived whole (at once for a body in memory,
 * or one a protocol driver delivered complete), or `request:error` when it fails first. A
 * streamed body that is not the kernel's (a plugin's own) is not watched.
 */
export function watchResponseEnd(req: Request, res: Response, sent: number): void {
  const body = res.body;
  if (body instanceof FlowBody) {
    if (body.complete) publishEnd(req, res, body.received, sent);
    else
      body.onEnd = (err) => {
        if (err === null) publishEnd(req, res, body.received, sent);
        else {
          const ch = channels.clientRequestError;
          if (ch.hasSubscribers) ch.publish({ request: req, error: err });
        }
      };
    return;
  }
  if (body instanceof AbstractBody) {
    if (body.length === 0) publishEnd(req, res, 0, sent);
    return;
  }
  publishEnd(req, res, body === null ? 0 : typeof body === 'string' ? Buffer.byteLength(body, 'utf8') : body.length, sent);
}

function publishEnd(request: Request, response: Response, bytes: number, sent: number): void {
  const ch = channels.clientResponseEnd;
  if (ch.hasSubscribers) ch.publish({ request, response, bytes, elapsedMs: performance.now() - sent });
}
