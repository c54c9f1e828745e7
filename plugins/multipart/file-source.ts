/**
 * A file part read straight from disk into the caller's buffer. An `fs.ReadStream` given to a
 * {@link Form} is replaced by one of these when it has not started: the form then knows the
 * part's size (so the upload carries Content-Length instead of going chunked), and each read
 * lands in the sender's buffer with no per-chunk allocation (a ReadStream allocates a fresh
 * 64 KiB Buffer per read, which is what made a large upload's memory churn).
 */
import { Buffer } from 'node:buffer';
import { ReadStream, closeSync, openSync, readSync, statSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';

/** A byte range of a file, read on demand. */
export class FileSource {
  /** The file. */
  readonly path: string;
  /** Bytes this part carries. */
  readonly size: number;
  private position: number;
  private left: number;
  private handle: FileHandle | null = null;
  private opening: Promise<FileHandle> | null = null;
  private done = false;

  private constructor(path: string, start: number, size: number) {
    this.path = path;
    this.position = start;
    this.size = size;
    this.left = size;
  }

  /**
   * The file behind `stream` when it is a ReadStream that has not read yet and names its file
   * by path; `null` otherwise (then the stream is read as a stream). The stream is destroyed:
   * the form reads the file itself.
   */
  static from(stream: unknown): FileSource | null {
    if (!(stream instanceof ReadStream)) return null;
    const s = stream as ReadStream & { start?: number; end?: number };
    // Only a stream named by path (one made from a caller's descriptor has no string path).
    if (typeof s.path !== 'string' || s.bytesRead !== 0 || s.readableLength !== 0 || s.destroyed) return null;
    let fileSize: number;
    try {
      const st = statSync(s.path);
      if (!st.isFile()) return null;
      fileSize = st.size;
    } catch {
      return null; // the stream reports the error when read, as it would have anyway
    }
    const start = typeof s.start === 'number' ? s.start : 0;
    const endExclusive = typeof s.end === 'number' && Number.isFinite(s.end) ? Math.min(s.end + 1, fileSize) : fileSize;
    const source = new FileSource(s.path, start, Math.max(0, endExclusive - start));
    s.destroy();
    return source;
  }

  /**
   * Up to `n` bytes from the part's start, read synchronously (the form needs them to sniff the
   * part's type while it is being built and sized); null when the file cannot be read, which
   * the reads report later.
   */
  head(n: number): Uint8Array | null {
    const buf = Buffer.alloc(Math.min(n, this.size));
    if (buf.length === 0) return buf;
    let fd: number;
    try {
      fd = openSync(this.path, 'r');
    } catch {
      return null;
    }
    try {
      return buf.subarray(0, readSync(fd, buf, 0, buf.length, this.position));
    } catch {
      return null;
    } finally {
      closeSync(fd);
    }
  }

  /** Reads the next bytes into `dst`; 0 at the end (or when the file shrank since it was sized). */
  async read(dst: Uint8Array): Promise<number> {
    if (this.done || this.left === 0 || dst.length === 0) {
      await this.close();
      return 0;
    }
    this.opening ??= open(this.path, 'r');
    const fh = (this.handle ??= await this.opening);
    const { bytesRead } = await fh.read(dst, 0, Math.min(dst.length, this.left), this.position);
    if (bytesRead === 0) {
      await this.close();
      return 0;
    }
    this.position += bytesRead;
    this.left -= bytesRead;
    return bytesRead;
  }

  /** Closes the file (idempotent). */
  async close(): Promise<void> {
    this.done = true;
    const h = this.handle ?? (this.opening !== null ? await this.opening.catch(() => null) : null);
    this.handle = null;
    this.opening = null;
    if (h !== null) await h.close().catch(() => undefined);
  }
}
