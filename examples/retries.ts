/**
 * Plugin `retries`: idempotent requests are sent again after recoverable failures (503, 429,
 * a refused connection, …) with jittered backoff or `Retry-After`; POST only with
 * `retryNonIdempotent`; a shared `RetryBucket` caps retries against a failing host.
 * Starts its own server on 127.0.0.1, talks to it, prints what happened and exits.
 *
 *   node --import tsx examples/retries.ts
 */
import * as HTTP from '../index.js';

let calls = 0;
const server = await HTTP.serve(
  (req) => {
    calls++;
    // Every third call succeeds: attempts 1 and 2 of a call get 503.
    if (calls % 3 !== 0) return new HTTP.Response(503, 'busy', { headers: { 'Retry-After': '0' } });
    return new HTTP.Response(200, `${req.method} ok after ${calls} calls`);
  },
  { host: '127.0.0.1', port: 0 },
);
const url = `http://127.0.0.1:${server.port}/flaky`;

const log: string[] = [];
const trace = (e: HTTP.ClientEvent): void => {
  if (e instanceof HTTP.RetryEvent) log.push(`retry after attempt ${e.attempt} (${e.reason})`);
  if (e instanceof HTTP.RetrySkippedEvent) log.push(`no retry after attempt ${e.attempt} (${e.reason})`);
};
const show = (what: string): void => void console.log(`${what}\n  ${log.splice(0).join('\n  ')}`);

const res = await HTTP.get(url, { trace });
show(`GET: ${res.status} "${res.text()}"`);

calls = 0;
try {
  await HTTP.post(url, { body: 'x', trace });
} catch (err) {
  if (!(err instanceof HTTP.StatusError)) throw err;
  show(`POST: StatusError ${err.status} (POST is not retried by default)`);
}
const posted = await HTTP.post(url, { body: 'x', trace, retryNonIdempotent: true });
show(`POST with retryNonIdempotent: ${posted.status} "${posted.text()}"`);

// A refused connection is recoverable too; a bucket of 20 tokens allows two such retries (10 each).
await server.close();
const bucket = new HTTP.RetryBucket({ capacity: 20 });
try {
  await HTTP.get(url, { trace, retryBucket: bucket, retryDelayScale: 5 });
} catch (err) {
  show(`GET to a closed port: ${(err as Error).name}; bucket has ${bucket.available(`127.0.0.1:${server.port}`)} tokens left`);
}

HTTP.close(HTTP.getDefaultClient());
