/**
 * Runs a Node program of the tests to its exit, collecting its output; kills it (and fails)
 * past a bound, so a program that never exits fails its test instead of hanging the suite.
 */
import { spawn } from 'node:child_process';

/** How a program ended and what it printed. */
export interface NodeRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs `node ...args` in `cwd`; rejects naming the program when it has not exited within `boundMs`. */
export function runNode(args: string[], cwd: string, boundMs: number): Promise<NodeRun> {
  return new Promise((resolve, reject) => {
    const file = args.at(-1)!;
    const child = spawn(process.execPath, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${file} did not exit within ${boundMs} ms\nstdout:\n${stdout}\nstderr:\n${stderr}`));
    }, boundMs);
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
