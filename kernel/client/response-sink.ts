/**
 * Writing a response body into the caller's `responseStream`, as `stream.pipeline` would:
 * with back-pressure, the sink ended once the body is in (the call resolves after its
 * 'finish', so a file is complete when the call returns) and destroyed when the call fails;
 * with `{ stream, end: false }` the caller keeps the sink open and owns it. `process.stdout`
 * and `process.stderr` are never ended, as `readable.pipe` never ends them.
 */
import process from 'node:process';
import type { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { CanceledError } from '../errors.js';
import { AbstractBody, type Body } from '../message/body.js';
import type { ResponseSink } from './options.js';

/** The sink of a `responseStream` option and whether the call ends it. */
function sinkOf(option: Writable | ResponseSink): { sink: Writable; end: boolean } {
  if (typeof (option as Writable).write === 'function') return { sink: option as Writable, end: true };
  const o = option as ResponseSink;
  return { sink: o.stream, end: o.end !== false };
}

function ends(sink: Writable, end: boolean): boolean {
  return end && sink !== process.stdout && sink !== process.stderr;
}

/** The error a write to a sink that is gone fails with: its own error, else a cancel. */
function goneError(sink: Writable): Error {
  return sink.errored ?? new CanceledError('the responseStream was closed before the response body was written to it');
}

/** Resolves at the sink's next 'drain'; rejects when it errors or closes first. */
function drained(sink: Writable): Promise<void> {
  if (sink.destroyed) return Promise.reject(goneError(sink));
  return new Promise<void>((resolve, reject) => {
    const done = (): void => {
      sink.removeListener('drain', onDrain);
      sink.removeListener('error', onGone);
      sink.removeListener('close', onGone);
    };
    const onDrain = (): void => {
      done();
      resolve();
    };
    const onGone = (): void => {
      done();
      reject(goneError(sink));
    };
    sink.on('drain', onDrain);
    sink.on('error', onGone);
    sink.on('close', onGone);
  });
}

/** Writes `body` (a final response's) into the `responseStream` option's sink, then ends it unless told not to. */
export async function writeToSink(body: Body, option: Writable | ResponseSink): Promise<void> {
  const { sink, end } = sinkOf(option);
  // A sink that fails while the call writes to it fails the call, not the process (as in a pipeline).
  sink.on('error', ignore);
  let failed = false;
  try {
    if (body instanceof AbstractBody) {
      try {
        for await (const chunk of body) {
          if (!sink.write(chunk)) await drained(sink);
        }
      } finally {
        body.close();
      }
    } else if (body !== null && body.length > 0) {
      if (!sink.write(body)) await drained(sink);
    }
    if (ends(sink, end)) {
      sink.end();
      await finished(sink);
    }
  } catch (err) {
    failed = true;
    abandonSink(option, err);
  } finally {
    // After a failure its 'error' event may still be on its way (node emits it on a later tick).
    if (failed) setImmediate(() => sink.removeListener('error', ignore));
    else sink.removeListener('error', ignore);
  }
}

/**
 * The call failed: a sink the call ends is destroyed with the error (the call's rejection
 * reports it, so its 'error' event is not left unhandled); a caller-owned one is left as is.
 * Always throws `err`.
 */
export function abandonSink(option: Writable | ResponseSink, err: unknown): never {
  const { sink, end } = sinkOf(option);
  if (ends(sink, end) && !sink.destroyed && !sink.writableFinished) {
    sink.on('error', ignore);
    sink.destroy(err instanceof Error ? err : new Error(String(err)));
    setImmediate(() => sink.removeListener('error', ignore));
  }
  throw err;
}

function ignore(): void {}
