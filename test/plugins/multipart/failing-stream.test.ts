/**
 * A request body whose stream fails (a missing file in `createReadStream`, as in the README's
 * `new HTTP.Form({ file: createReadStream('a.bin') })`) rejects the request with the stream's
 * error; it never crashes the process with an unhandled 'error' event. Each case runs a user's
 * script (child/failing-stream.ts) as its own process against the project's server, so a
 * crash shows as the script's exit code and stderr.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { Response } from '../../../kernel/index.js';
import { killAfter } from '../../helpers/cleanup.js';
import { startServer } from '../../helpers/server.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const SCRIPT = fileURLToPath(new URL('./child/failing-stream.ts', import.meta.url));

/** Runs the script for case `how` against `url`; resolves with its exit code and output. */
function run(how: string, url: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = killAfter(spawn(process.execPath, ['--import', 'tsx', SCRIPT, how, url], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] }));
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
}

async function server(): Promise<string> {
  const { port } = await startServer(() => new Response(200, 'ok'));
  return `http://127.0.0.1:${port}/upload`;
}

describe('a body stream that fails rejects the request with its error', () => {
  it('Form with createReadStream of a missing file (the README example): rejected with ENOENT, no crash', async () => {
    const r = await run('form-missing', await server());
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('rejected ENOENT a.bin\n');
    expect(r.code).toBe(0);
  });

  it('Form of a file removed after the form was built: rejected with ENOENT, no crash', async () => {
    const r = await run('form-removed', await server());
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('rejected ENOENT a.bin\n');
    expect(r.code).toBe(0);
  });

  it('body: createReadStream of a missing file: rejected with ENOENT, no crash', async () => {
    const r = await run('body-missing', await server());
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('rejected ENOENT a.bin\n');
    expect(r.code).toBe(0);
  });
});
