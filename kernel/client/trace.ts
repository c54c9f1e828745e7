/**
 * Client trace events: what a `trace` callback receives, and the `verbose` printer built on
 * them. Events are made only when someone listens.
 */
import process from 'node:process';
import { performance } from 'node:perf_hooks';
import type { Request } from '../message/request.js';
import type { Response } from '../message/response.js';

/** Supertype of the events a `trace` callback receives. */
export abstract class ClientEvent {
  /** The event's name (its class name). */
  abstract readonly type: string;
  /** `performance.now()` when it happened. */
  readonly time = performance.now();
}

/** A request attempt is being sent. */
export class RequestEvent extends ClientEvent {
  /** `RequestEvent`. */
  readonly type = 'RequestEvent';
  constructor(
    /** 1 for the first attempt, 2 for the first retry, … */
    readonly attempt: number,
    /** The request (after `onRequest` taps). */
    readonly request: Request,
    /** Its URL. */
    readonly url: string,
  ) {
    super();
  }
}

/** A response head arrived. */
export class ResponseHeadEvent extends ClientEvent {
  /** `ResponseHeadEvent`. */
  readonly type = 'ResponseHeadEvent';
  constructor(
    /** Attempt number. */
    readonly attempt: number,
    /** The response (body not read yet). */
    readonly response: Response,
    /** Its URL. */
    readonly url: string,
    /** Its status. */
    readonly status: number,
    /** From sending the request to the head, ms. */
    readonly elapsedMs: number,
  ) {
    super();
  }
}

/** A retry was scheduled. */
export class RetryEvent extends ClientEvent {
  /** `RetryEvent`. */
  readonly type = 'RetryEvent';
  constructor(
    /** The attempt that failed. */
    readonly attempt: number,
    /** Wait before the next attempt, ms. */
    readonly delayMs: number,
    /** Why. */
    readonly reason: string,
    /** The failure, or null for a retryable status. */
    readonly error: unknown,
    /** The status, or 0 when the attempt threw. */
    readonly status: number,
  ) {
    super();
  }
}

/** A retry was denied (budget, deadline, policy). */
export class RetrySkippedEvent extends ClientEvent {
  /** `RetrySkippedEvent`. */
  readonly type = 'RetrySkippedEvent';
  constructor(
    /** The attempt that failed. */
    readonly attempt: number,
    /** Why no retry. */
    readonly reason: string,
    /** The failure, or null. */
    readonly error: unknown,
    /** The status, or 0. */
    readonly status: number,
  ) {
    super();
  }
}

/** A redirect was followed. */
export class RedirectEvent extends ClientEvent {
  /** `RedirectEvent`. */
  readonly type = 'RedirectEvent';
  constructor(
    /** The redirect's status. */
    readonly status: number,
    /** URL that answered with the redirect. */
    readonly from: string,
    /** URL followed. */
    readonly to: string,
    /** Redirects followed so far in this call. */
    readonly count: number,
  ) {
    super();
  }
}

/** The call finished, with a response or an error. */
export class DoneEvent extends ClientEvent {
  /** `DoneEvent`. */
  readonly type = 'DoneEvent';
  constructor(
    /** The final URL. */
    readonly url: string,
    /** The final response, or null. */
    readonly response: Response | null,
    /** The error the call threw, or null. */
    readonly error: unknown,
    /** Attempts made. */
    readonly attempts: number,
    /** Whole call, ms. */
    readonly elapsedMs: number,
  ) {
    super();
  }
}

/** Any of the trace events. */
export type AnyClientEvent = RequestEvent | ResponseHeadEvent | RetryEvent | RetrySkippedEvent | RedirectEvent | DoneEvent;

/** The `verbose` option as a trace callback: one line per step on stderr; level 2 adds the heads. */
export function verbosePrinter(level: 1 | 2, out: (line: string) => void = (l) => process.stderr.write(`${l}\n`)): (e: ClientEvent) => void {
  return (ev) => {
    const e = ev as AnyClientEvent;
    switch (e.type) {
      case 'RequestEvent':
        out(`switchyard > ${e.request.method} ${e.url} (attempt ${e.attempt})`);
        if (level === 2) for (const [k, v] of e.request.headers) out(`switchyard >   ${k}: ${v}`);
        break;
      case 'ResponseHeadEvent':
        // HTTP/2 has no reason phrase: no double space then.
        out(`switchyard < ${e.status}${e.response.reason === '' ? '' : ` ${e.response.reason}`} ${e.url} (${e.elapsedMs.toFixed(1)} ms)`);
        if (level === 2) for (const [k, v] of e.response.headers) out(`switchyard <   ${k}: ${v}`);
        break;
      case 'RetryEvent':
        out(`switchyard ~ retry after attempt ${e.attempt} in ${e.delayMs.toFixed(1)} ms: ${e.reason}`);
        break;
      case 'RetrySkippedEvent':
        out(`switchyard ~ no retry after attempt ${e.attempt}: ${e.reason}`);
        break;
      case 'RedirectEvent':
        out(`switchyard ~ ${e.status} redirect ${e.from} -> ${e.to}`);
        break;
      case 'DoneEvent':
        out(
          e.error !== null
            ? `switchyard x ${e.url} failed after ${e.elapsedMs.toFixed(1)} ms: ${e.error instanceof Error ? e.error.message : String(e.error)}`
            : `switchyard = ${e.response?.status} ${e.url} in ${e.elapsedMs.toFixed(1)} ms (${e.attempts} attempt${e.attempts === 1 ? '' : 's'})`,
        );
        break;
    }
  };
}
