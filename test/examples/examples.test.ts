/**
 * The `examples` smoke test: every example program runs as its own process, exactly as its
 * header says (`node --import tsx examples/<name>.ts`), starts its servers, does its thing
 * against itself and must exit 0 on its own (so it closed everything it opened) within a
 * bound, with the key line of its output printed and nothing on stderr.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runNode } from '../helpers/run-node.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** Longest an example may run, ms (they take about a second alone; the machine is shared). */
const BOUND_MS = 15_000;

/** Each example and a line of its output that proves it did its thing. */
const EXAMPLES: readonly (readonly [name: string, keyLine: RegExp])[] = [
  ['cookies', /^\/profile saw cookies: session=abc123, theme=dark$/m],
  ['redirects', /^GET \/old: 200 "GET \/final" after 301 \/old -> \/moved\/here, 307 \/moved\/here -> \/final$/m],
  ['decompression', /^decoded: 110000 bytes, was br, Content-Encoding now \(removed\)$/m],
  ['retries', /^GET: 200 "GET ok after 3 calls"$/m],
  ['mock', /^replayed with the server closed: 200 "hello from the real server"$/m],
  ['multipart', /^part report: 28 bytes, text\/csv, file report\.csv$/m],
  ['proxy', /^proxy saw: GET http:\/\/shop\.test:\d+\/cart \| CONNECT shop\.test:\d+$/m],
  ['proxy-protocol', /^peerAddr\(\) is the client, not the relay: true$/m],
  ['router', /^DELETE \/users\/42 -> 405 \(Allow: GET, HEAD\)$/m],
  ['middleware', /^GET \/slow -> 503 handler timed out$/m],
  ['inject', /^POST \/sum -> 200 \{"sum":42\}$/m],
  ['shutdown', /^ready: false, \/healthz after SIGTERM: 503 draining$/m],
  ['workers', /^after reload: 2 new workers answer, none of the old$/m],
  ['fileserver', /^ {2}Range: bytes=10-14 -> 206 bytes 10-14\/21 "abcde"$/m],
  ['sse', /^sseConnect: #3 train departed$/m],
  ['compression', /^events: tick 1 \(br\), tick 2 \(br\), tick 3 \(br\)$/m],
  ['websockets', /^client: got "HELLO OVER A WEBSOCKET"$/m],
  ['h2', /^10 concurrent requests: all HTTP\/2, server connections: 1$/m],
  ['custom-plugin', /^GET \/users\/\{id\} +count=3 statuses=\{"200":3\}$/m],
  ['protocol-plugin', /^ping-pong: PONG one, PONG two$/m],
  ['opentelemetry', /^ {4}CLIENT GET 200 \(HTTP\/1\.1\) \[retry after 503\]$/m],
  ['diagnostics', /^client: retry after attempt 1 \(status 503 \(Retry-After 0 ms\)\)$/m],
  ['cache', /^GET \/news again +200 revalidated "today: the cache works"$/m],
];

/** Examples that run until stopped, so no smoke test can wait for their exit. */
const LONG_RUNNING = new Set(['hello-server']);

describe.concurrent('examples', () => {
  it.each(EXAMPLES)(
    '%s starts, does its thing against itself and exits 0',
    async (name, keyLine) => {
      const run = await runNode(['--import', 'tsx', `examples/${name}.ts`], root, BOUND_MS);
      const output = `stdout:\n${run.stdout}\nstderr:\n${run.stderr}`;
      expect(run.code, output).toBe(0);
      expect(run.stdout, output).toMatch(keyLine);
      expect(run.stderr, output).toBe('');
    },
    BOUND_MS + 5_000,
  );

  it('every example program has a smoke test here', () => {
    const programs = readdirSync(path.join(root, 'examples'))
      .filter((f) => f.endsWith('.ts'))
      .map((f) => f.slice(0, -3))
      .filter((n) => !LONG_RUNNING.has(n));
    expect(programs.sort()).toEqual(EXAMPLES.map(([n]) => n).sort());
  });
});
