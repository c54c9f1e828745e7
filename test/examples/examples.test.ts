/**
 * The `examples` smoke test: every example program runs as its own process, exactly as its
 * header says (`node --import tsx examples/<name>.ts`), starts its servers, does its thing
 * against itself and must exit 0 on its own (so it closed everything it opened) within a
 * bound, with the key line of its output printed and nothing on stderr.
 */
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** Longest an example may run, ms (they take about a second alone; the machine is shared). */
const BOUND_MS = 15_000;

/** Each example and a line of its output that proves it did its thing. */
const EXAMPLES: readonly (readonly [name: string, keyLine: RegExp])[] = [
  ['cookies', /^\/profile saw cookies: session=abc123, theme=dark$/m],
  ['redirects', /^GET \/old: 200 "GET \/final" after 301 \/old -> \/moved\/here, 307 \/moved\/here -> \/final$/m],
  ['decompression', /^decoded: 110000 bytes, was br, Content-Encoding now \(removed\)$/m],
  ['retries', /^GET: 200 "GET ok after 3 calls"$/m],
  ['multipart', /^part report: 28 bytes, text\/csv, file report\.csv$/m],
  ['proxy', /^proxy saw: GET http:\/\/shop\.test:\d+\/cart \| CONNECT shop\.test:\d+$/m],
  ['router', /^DELETE \/users\/42 -> 405 \(Allow: GET, HEAD\)$/m],
  ['middleware', /^GET \/slow -> 503 handler timed out$/m],
  ['fileserver', /^ {2}Range: bytes=10-14 -> 206 bytes 10-14\/21 "abcde"$/m],
  ['sse', /^sseConnect: #3 train departed$/m],
  ['websockets', /^client: got "HELLO OVER A WEBSOCKET"$/m],
  ['h2', /^10 concurrent requests: all HTTP\/2, server connections: 1$/m],
  ['custom-plugin', /^GET \/users\/\{id\} +count=3 statuses=\{"200":3\}$/m],
  ['protocol-plugin', /^ping-pong: PONG one, PONG two$/m],
];

/** Examples that run until stopped, so no smoke test can wait for their exit. */
const LONG_RUNNING = new Set(['hello-server']);

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs one example to its exit; kills it (and fails) past {@link BOUND_MS}. */
function runExample(name: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', `examples/${name}.ts`], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`examples/${name}.ts did not exit within ${BOUND_MS} ms\nstdout:\n${stdout}\nstderr:\n${stderr}`));
    }, BOUND_MS);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

describe.concurrent('examples', () => {
  it.each(EXAMPLES)('%s starts, does its thing against itself and exits 0', async (name, keyLine) => {
    const run = await runExample(name);
    const output = `stdout:\n${run.stdout}\nstderr:\n${run.stderr}`;
    expect(run.code, output).toBe(0);
    expect(run.stdout, output).toMatch(keyLine);
    expect(run.stderr, output).toBe('');
  }, BOUND_MS + 5_000);

  it('every example program has a smoke test here', () => {
    const programs = readdirSync(path.join(root, 'examples'))
      .filter((f) => f.endsWith('.ts'))
      .map((f) => f.slice(0, -3))
      .filter((n) => !LONG_RUNNING.has(n));
    expect(programs.sort()).toEqual(EXAMPLES.map(([n]) => n).sort());
  });
});
