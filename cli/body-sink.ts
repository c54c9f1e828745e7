/**
 * Where a response body goes: a Writable passed as the call's `responseStream`, forwarding to
 * stdout or a file with backpressure, telling the caller when the first byte comes (to print
 * the head before it) and how many bytes each chunk had (for the progress bar).
 */
import { Writable } from 'node:stream';

/** Callbacks of a {@link BodySink}. */
export interface BodySinkEvents {
  /** Before the first byte is forwarded. */
  onStart?: () => void;
  /** After each chunk is handed on. */
  onBytes?: (n: number) => void;
}

/** Forwards a body to `target`; ending the sink ends `target` only when `endTarget` is true (a file, not stdout). */
export class BodySink extends Writable {
  /** Bytes forwarded. */
  bytes = 0;
  /** Take the body's bytes without forwarding them (`-I`, `-f` on a 4xx/5xx); set before the body comes. */
  drop = false;
  private started = false;

  constructor(
    private readonly target: Writable,
    private readonly endTarget: boolean,
    private readonly events: BodySinkEvents = {},
  ) {
    super({ highWaterMark: 64 * 1024 });
    // The client's body copy adds a 'drain' and an 'error' listener at each backpressure wait
    // and leaves the 'error' one behind: harmless here (one call per sink), but not worth a warning.
    this.setMaxListeners(0);
    target.on('error', (err) => this.destroy(err));
  }

  /** Calls `onStart` unless it ran already (also used when the body turns out empty). */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.events.onStart?.();
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    if (this.drop) return cb();
    this.start();
    this.bytes += chunk.length;
    const ok = this.target.write(chunk);
    this.events.onBytes?.(chunk.length);
    if (ok) cb();
    else this.target.once('drain', () => cb());
  }

  override _final(cb: (err?: Error | null) => void): void {
    if (!this.drop) this.start();
    if (!this.endTarget) return cb();
    this.target.once('error', cb);
    this.target.end(() => cb());
  }
}
