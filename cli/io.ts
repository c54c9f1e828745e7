/**
 * The streams a command talks to (the process's, in the binary), so commands never reach for
 * `process.stdout` themselves.
 */
import type { Readable, Writable } from 'node:stream';

/** A terminal-aware output stream (`process.stdout`, `process.stderr`). */
export type Output = Writable & { readonly isTTY?: boolean; readonly columns?: number };

/** Standard input, output and error of a command. */
export interface Io {
  readonly stdin: Readable & { readonly isTTY?: boolean };
  readonly stdout: Output;
  readonly stderr: Output;
  /** Environment variables. */
  readonly env: NodeJS.ProcessEnv;
  /**
   * Resolves when the user asks to stop (Ctrl-C, SIGTERM). Commands that run until stopped
   * wait on it; until one calls it, Ctrl-C ends the process as usual.
   */
  waitForInterrupt(): Promise<void>;
}

/** Writes `text` and resolves once the stream took it (or failed: output errors are not fatal here). */
export function writeOut(out: Writable, text: string | Uint8Array): Promise<void> {
  return new Promise((resolve) => {
    if (out.destroyed || out.writableEnded) return resolve();
    out.write(text, () => resolve());
  });
}
