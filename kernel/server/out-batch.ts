/**
 * The bytes a connection's responses produce while it handles one read, gathered for one
 * socket write. Small pieces are encoded into a slab shared by every connection (as Node's
 * own Buffer pool is), so a pipelined read's responses cost neither a Buffer each nor a copy to
 * join them: the write takes a view of the slab, and the rest of the slab serves later batches.
 * A batch's run of slab bytes is contiguous: should another batch write into the slab between
 * two of its pieces, it starts a new run. The bytes a view covers are never written again.
 */
import { Buffer } from 'node:buffer';
import { encodeMessageInto, messageLength, writeLatin1 } from '../http1/serialize.js';

/** Size of a slab; a view the socket still holds keeps its slab alive, so it stays small. */
const SLAB_BYTES = 8192;
/** Pieces larger than this are not copied into the slab but queued as they are. */
const SLAB_PIECE = 2048;

let slab: Buffer = Buffer.allocUnsafe(SLAB_BYTES);
let slabAt = 0;

/** @internal One connection's output while it handles a read. */
export class OutBatch {
  /** Finished pieces, in order. */
  private readonly pieces: Buffer[] = [];
  /** The slab and the bounds of this batch's current run of slab bytes (null: no run). */
  private runSlab: Buffer | null = null;
  private runFrom = 0;
  private runEnd = 0;
  /** Bytes gathered. */
  bytes = 0;

  /** Adds bytes (a string as latin1). `data` is kept as it is when too large to copy, so the caller must not change it. */
  add(data: Uint8Array | string): void {
    const n = data.length;
    if (n > SLAB_PIECE) {
      this.piece(typeof data === 'string' ? Buffer.from(data, 'latin1') : (data as Buffer));
      return;
    }
    const at = this.reserve(n);
    if (typeof data === 'string') writeLatin1(slab, data, at);
    else slab.set(data, at);
  }

  /** Adds a head (latin1) and a body (a string as UTF-8) as one message. */
  addMessage(head: string, body: Uint8Array | string): void {
    const n = messageLength(head, body);
    if (n > SLAB_PIECE) {
      const out = Buffer.allocUnsafe(n);
      encodeMessageInto(out, 0, head, body);
      this.piece(out);
      return;
    }
    const at = this.reserve(n); // first: it may replace the slab
    encodeMessageInto(slab, at, head, body);
  }

  /** The gathered pieces in order (then empty until more is added); the caller writes them. */
  take(): Buffer[] {
    this.endRun();
    this.bytes = 0;
    return this.pieces;
  }

  /** Room for `n` bytes in the slab, in this batch's run; returns where they go. */
  private reserve(n: number): number {
    if (slabAt + n > slab.length) {
      this.endRun();
      slab = Buffer.allocUnsafe(SLAB_BYTES);
      slabAt = 0;
    }
    if (this.runSlab !== slab || this.runEnd !== slabAt) {
      this.endRun();
      this.runSlab = slab;
      this.runFrom = slabAt;
    }
    const at = slabAt;
    slabAt += n;
    this.runEnd = slabAt;
    this.bytes += n;
    return at;
  }

  private piece(b: Buffer): void {
    this.endRun();
    this.pieces.push(b);
    this.bytes += b.length;
  }

  /** Closes the run of slab bytes into a piece (a view). */
  private endRun(): void {
    const s = this.runSlab;
    if (s === null) return;
    this.runSlab = null;
    if (this.runEnd > this.runFrom) this.pieces.push(s.subarray(this.runFrom, this.runEnd));
  }
}
