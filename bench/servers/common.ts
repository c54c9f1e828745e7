/**
 * Shared bits of the benchmark server programs (bench/servers/*.ts). Each server is a child
 * process of bench/server.ts: it reads `SCENARIO` (`hello`: the 11-byte `hello world` body;
 * `big`: a preallocated 64 KiB Buffer) and `PORT` (default 0, i.e. any free port), listens on
 * 127.0.0.1, prints `PORT <n>` on stdout once listening, and exits on SIGTERM or SIGINT.
 * With `BENCH_CHILD=1` (set by the harness) it also exits when its stdin closes, so a server
 * never outlives a harness that was killed without a chance to clean up.
 */

/** Scenario selected by the harness. */
export const SCENARIO: 'hello' | 'big' = process.env.SCENARIO === 'big' ? 'big' : 'hello';

/** Size of the `big` body. */
export const BIG_SIZE = 64 * 1024;

/** The response body: a string for `hello`, a preallocated Buffer for `big`. */
export const BODY: string | Buffer = SCENARIO === 'big' ? Buffer.alloc(BIG_SIZE, 'x') : 'hello world';

/** Byte length of {@link BODY}. */
export const BODY_LENGTH: number = typeof BODY === 'string' ? Buffer.byteLength(BODY) : BODY.length;

/** Host every server binds. */
export const HOST = '127.0.0.1';

/** Port to listen on (`PORT` env, default 0). */
export const PORT: number = Number(process.env.PORT ?? 0) || 0;

/** Tells the harness the server is ready. */
export function announce(port: number): void {
  process.stdout.write(`PORT ${port}\n`);
}

/**
 * Exits on SIGTERM/SIGINT, and on stdin EOF when `watchStdin` (a harness's child, whose parent
 * going away ends its stdin). `close` runs first, capped at 300 ms so idle keep-alive
 * connections never hold the exit up.
 */
export function exitOnSignal(close?: () => unknown, watchStdin = process.env.BENCH_CHILD === '1'): void {
  let exiting = false;
  const exit = (): void => {
    if (exiting) return;
    exiting = true;
    setTimeout(() => process.exit(0), 300).unref();
    if (!close) process.exit(0);
    Promise.resolve()
      .then(close)
      .then(
        () => process.exit(0),
        () => process.exit(0),
      );
  };
  process.on('SIGTERM', exit);
  process.on('SIGINT', exit);
  if (watchStdin) {
    process.stdin.on('end', exit);
    process.stdin.on('error', exit);
    process.stdin.resume();
  }
}
