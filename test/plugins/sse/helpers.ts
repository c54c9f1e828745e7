/**
 * Helpers of the sse tests: an event-stream reader on node:http (a client we did not write),
 * a gate a producer can wait on, and the server helpers of the kernel tests.
 */
import http from 'node:http';
import { SSEParser, type SSEEvent } from '../../../plugins/sse/index.js';
import { onCleanup } from '../../helpers/server.js';

export { onCleanup, startServer, startStreamServer, stopServer, waitFor, within, waitConnections } from '../../helpers/server.js';

/** A promise and its resolve function: `await gate.promise` in a producer, `gate.open()` in the test. */
export interface Gate {
  promise: Promise<void>;
  open(): void;
}

/** A new closed gate. */
export function gate(): Gate {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

/** An event-stream response read with node:http, parsed as it arrives. */
export interface SSEReader {
  res: http.IncomingMessage;
  /** Raw body bytes so far. */
  raw(): string;
  /** Events parsed so far. */
  events: SSEEvent[];
  /** Resolves with the next event not yet taken by `next()`. */
  next(): Promise<SSEEvent>;
  /** Resolves when the body ended cleanly ('end'), rejects when it was cut off. */
  ended: Promise<void>;
  /** Destroys the socket (a client that goes away). */
  destroy(): void;
}

/** GETs (or `method`s) `path` on 127.0.0.1:`port` with a fresh connection and parses the body as events. */
export function readSSE(port: number, path = '/', method = 'GET', headers: http.OutgoingHttpHeaders = {}): Promise<SSEReader> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method, agent: false, headers });
    req.on('error', reject);
    req.on('response', (res) => {
      const parser = new SSEParser();
      const events: SSEEvent[] = [];
      const chunks: Buffer[] = [];
      let taken = 0;
      let wake: (() => void) | null = null;
      res.on('data', (c: Buffer) => {
        chunks.push(c);
        parser.push(c, events);
        const w = wake;
        wake = null;
        w?.();
      });
      res.on('close', () => {
        const w = wake;
        wake = null;
        w?.();
      });
      const ended = new Promise<void>((ok, fail) => {
        res.on('end', ok);
        res.on('aborted', () => fail(new Error('response aborted')));
        res.on('error', fail);
      });
      ended.catch(() => undefined);
      const reader: SSEReader = {
        res,
        events,
        raw: () => Buffer.concat(chunks).toString('utf8'),
        async next() {
          while (taken >= events.length) {
            if (res.complete || res.destroyed) throw new Error(`stream ended after ${events.length} events`);
            await new Promise<void>((r) => (wake = r));
          }
          return events[taken++]!;
        },
        ended,
        destroy: () => req.destroy(),
      };
      onCleanup(() => req.destroy());
      resolve(reader);
    });
    req.end();
  });
}
