/**
 * A response body that streams a byte range of an open file with positional reads: each
 * `read(dst)` reads straight into the buffer the server hands over, so the file is never held
 * whole in memory. Its length is exact, so the server frames it with Content-Length.
 */
import fs from 'node:fs';
import { AbstractBody } from '../../kernel/index.js';

/** A file descriptor's owner: how the body releases it when closed. */
export type FdCloser = () => void;

/** Streams `length` bytes of file descriptor `fd` from `start`; closing the body releases the descriptor. */
export class FileBody extends AbstractBody {
  private fd: number;
  private position: number;
  private remaining: number;
  private release: FdCloser | null;
  private isClosed = false;
  // A read in flight: closing the descriptor under it could let the number be reused by
  // another open() and the read land in someone else's file, so release waits for it.
  private reading = false;

  /** Reads `length` bytes of `fd` from `start`; `release` runs once on close (default: `fs.close(fd)`). */
  constructor(fd: number, start: number, length: number, release?: FdCloser) {
    super();
    this.fd = fd;
    this.position = start;
    this.remaining = length;
    this.release = release ?? (() => fs.close(fd, () => {}));
  }

  /** See {@link AbstractBody.read}. Resolves 0 at the end of the range, or early if the file shrank. */
  read(dst: Uint8Array): Promise<number> {
    if (this.isClosed || this.remaining === 0 || dst.length === 0) return Promise.resolve(0);
    const want = Math.min(dst.length, this.remaining);
    this.reading = true;
    return new Promise<number>((resolve, reject) => {
      fs.read(this.fd, dst, 0, want, this.position, (err, n) => {
        this.reading = false;
        if (this.isClosed) {
          this.releaseNow();
          resolve(0);
          return;
        }
        if (err !== null) {
          reject(err);
          return;
        }
        this.position += n;
        // A file that shrank ends early; the server then sees fewer bytes than announced.
        this.remaining = n === 0 ? 0 : this.remaining - n;
        resolve(n);
      });
    });
  }

  /** Releases the file descriptor (once). */
  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.remaining = 0;
    if (!this.reading) this.releaseNow();
  }

  private releaseNow(): void {
    const r = this.release;
    this.release = null;
    r?.();
  }

  /** See {@link AbstractBody.closed}. */
  get closed(): boolean {
    return this.isClosed;
  }

  /** Bytes left to send. */
  override get length(): number {
    return this.remaining;
  }
}
