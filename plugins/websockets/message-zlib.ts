/**
 * permessage-deflate's compression (RFC 7692 §7.2), on node's zlib, once the handshake agreed
 * its parameters (ws's `PerMessageDeflate` negotiates them; this module only compresses).
 *
 * Why not ws's own compress/decompress: ws writes a message, then asks for a flush, then (to
 * inflate) writes the 4-byte tail apart: node's zlib runs each write as its own trip to the
 * thread pool, so ws makes two trips per message deflated and three per message inflated.
 * Here the zlib streams are made with `flush: Z_SYNC_FLUSH`, so one write is one trip that ends
 * on a flush boundary: one trip each way for a message (two for an inflated message over
 * 64 KiB, whose tail is written apart rather than copied on). Measured (bench/README.md), a
 * 64-byte message: deflate 34-40 µs -> 19-21 µs, inflate 46-48 µs -> 15-17 µs (serial, from
 * write to callback).
 *
 * What is kept from ws, rule for rule: the window bits each side agreed (`server_` /
 * `client_max_window_bits`, zlib's default 15 when not given), the contexts reset after each
 * message under `*_no_context_takeover`, the compressed message's 4-byte `00 00 ff ff` tail
 * taken off (and put back to inflate), an inflated message bounded by `maxPayload` (a
 * RangeError, which the codec turns into close code 1009, with zlib stopped on the spot so
 * memory stays bounded), an inflate stream that met a final block replaced, and at most 10
 * zlib jobs in flight in the process (ws's limit, against the memory fragmentation of many at
 * once; node issue 8871).
 */
import { Buffer } from 'node:buffer';
import type { DeflateRaw, InflateRaw } from 'node:zlib';
import { nodeZlib } from '../../kernel/index.js';
import type { MessageDeflate } from './frame-connection.js';

const TRAILER = Buffer.from([0x00, 0x00, 0xff, 0xff]);
/**
 * An empty message, compressed (RFC 7692 §7.2.3.6): an empty stored block, which is this byte
 * once the trailer is taken off. zlib writes nothing for a sync flush without input right
 * after another one, so a message sent empty after a compressed one would otherwise go out
 * with no payload, which the peer (putting the trailer back) reads as the start of a stored
 * block and inflates the next message into.
 */
const EMPTY_BLOCK = Buffer.from([0x00]);
const EMPTY = Buffer.alloc(0);
/** Above this, a compressed frame is written apart from the trailer rather than copied onto it. */
const COPY_TAIL_MAX = 65536;
/**
 * Output buffer of an inflate stream (zlib's default is 16 KiB). Each time it fills, node goes
 * back to the thread pool for the rest: a 1 MiB message took 64 trips, now 16 (the 1 MiB
 * compressed echo went from 0.93-1.09x ws to 1.19-1.24x; 32 KiB gave 1.06-1.21x). The cost is
 * 48 KiB more per connection that receives compressed messages, beside the ~300 KiB of zlib
 * state (deflate window and hash, inflate window) such a connection holds anyway. The deflate
 * side keeps 16 KiB: its output is the smaller one.
 */
const INFLATE_CHUNK = 65536;
/** zlib jobs in flight in the process (ws's default `concurrencyLimit`). */
const CONCURRENCY = 10;

type Callback = (err: Error | null, out?: Buffer) => void;

// ---- the process-wide limit ---------------------------------------------------------------

let running = 0;
const waiting: (() => void)[] = [];

function schedule(job: () => void): void {
  if (running < CONCURRENCY) {
    running++;
    job();
  } else waiting.push(job);
}

function jobDone(): void {
  const next = waiting.shift();
  if (next !== undefined) next();
  else running--;
}

// ---- one connection's compression ----------------------------------------------------------

/**
 * @internal The compression of one connection under agreed permessage-deflate parameters. One
 * compression and one inflation at a time (the codec waits for each before the next), as the
 * contexts are per direction and continue from message to message.
 */
export class MessageZlib implements MessageDeflate {
  readonly params: Record<string, unknown>;
  private readonly isServer: boolean;
  private readonly maxPayload: number;
  private deflater: DeflateRaw | null = null;
  private inflater: InflateRaw | null = null;
  private outParts: Buffer[] = [];
  private outBytes = 0;
  private inParts: Buffer[] = [];
  private inBytes = 0;
  /** Compressed bytes of the message being inflated, so far. */
  private inCompressed = 0;
  /** Why the inflation in flight failed (a RangeError past maxPayload, or zlib's error). */
  private inError: Error | null = null;
  /** The callback of the compression in flight (cleanup() and zlib errors fail it). */
  private deflating: Callback | null = null;
  /** The end of the inflation in flight: run once, by its write's callback or zlib's error. */
  private inflating: (() => void) | null = null;
  private closed = false;

  constructor(params: Record<string, unknown>, isServer: boolean, maxPayload: number) {
    this.params = params;
    this.isServer = isServer;
    this.maxPayload = maxPayload;
  }

  /** The window bits agreed for `side`'s compressor. */
  private windowBits(side: 'server' | 'client'): number {
    const v = this.params[`${side}_max_window_bits`];
    return typeof v === 'number' ? v : nodeZlib().constants.Z_DEFAULT_WINDOWBITS;
  }

  /** Compresses one whole message (the codec never compresses fragments apart: `fin` is true). */
  compress(data: Buffer, fin: boolean, cb: Callback): void {
    schedule(() => this.runCompress(data, fin, cb));
  }

  private runCompress(data: Buffer, fin: boolean, cb: Callback): void {
    if (this.closed) {
      jobDone();
      cb(new Error('the deflate stream was closed while data was being processed'));
      return;
    }
    const side = this.isServer ? 'server' : 'client';
    let d = this.deflater;
    if (d === null) {
      const zlib = nodeZlib();
      d = this.deflater = zlib.createDeflateRaw({ windowBits: this.windowBits(side), flush: zlib.constants.Z_SYNC_FLUSH });
      d.on('data', (chunk: Buffer) => {
        this.outParts.push(chunk);
        this.outBytes += chunk.length;
      });
      d.on('error', (err: Error) => {
        // zlib failed (out of memory): the write's callback may never come.
        const pending = this.deflating;
        this.deflating = null;
        this.deflater = null;
        if (pending !== null) {
          jobDone();
          pending(err);
        }
      });
    }
    this.deflating = cb;
    d.write(data, () => {
      if (this.deflating !== cb) return; // failed already (cleanup() or a zlib error)
      this.deflating = null;
      const parts = this.outParts;
      let out = parts.length === 1 ? parts[0]! : Buffer.concat(parts, this.outBytes);
      this.outParts = [];
      this.outBytes = 0;
      if (fin) {
        out = out.length >= 4 ? out.subarray(0, out.length - 4) : EMPTY_BLOCK;
        if (this.params[`${side}_no_context_takeover`] === true) d.reset();
      }
      // The slot goes to the next job only now: it may be this connection's next message.
      jobDone();
      cb(null, out);
    });
  }

  /** Inflates one frame's payload (`fin`: the message's last frame). */
  decompress(data: Buffer, fin: boolean, cb: Callback): void {
    schedule(() => this.runDecompress(data, fin, cb));
  }

  private runDecompress(data: Buffer, fin: boolean, cb: Callback): void {
    if (this.closed) {
      jobDone();
      return;
    }
    if (fin && this.inCompressed + data.length === 0) {
      // A compressed message of no bytes at all, as peers with zlib's sync-flush quirk (see
      // EMPTY_BLOCK) send an empty one: empty. The trailer alone would open a stored block
      // that swallows the next message; leaving zlib untouched keeps it in step with the peer's.
      jobDone();
      cb(null, EMPTY);
      return;
    }
    this.inCompressed = fin ? 0 : this.inCompressed + data.length;
    const side = this.isServer ? 'client' : 'server';
    let inf = this.inflater;
    if (inf === null) inf = this.inflater = this.newInflater(side);
    const done = (): void => {
      if (this.inflating !== done) return; // ended already (by zlib's error, or cleanup())
      this.inflating = null;
      const err = this.inError;
      if (err !== null) {
        this.dropInflater();
        jobDone();
        cb(err);
        return;
      }
      const parts = this.inParts;
      const out = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
      this.inParts = [];
      if (fin) this.inBytes = 0;
      if (inf.readableEnded)
        this.dropInflater(); // a final block ended zlib's stream: a new one next time
      else if (fin && this.params[`${side}_no_context_takeover`] === true) inf.reset();
      // The slot goes to the next job only now: it may be this connection's next frame.
      jobDone();
      cb(null, out);
    };
    this.inflating = done;
    if (!fin) inf.write(data, done);
    else if (data.length <= COPY_TAIL_MAX) inf.write(Buffer.concat([data, TRAILER], data.length + 4), done);
    else {
      inf.write(data);
      inf.write(TRAILER, done);
    }
  }

  private newInflater(side: 'server' | 'client'): InflateRaw {
    const zlib = nodeZlib();
    const inf = zlib.createInflateRaw({ windowBits: this.windowBits(side), flush: zlib.constants.Z_SYNC_FLUSH, chunkSize: INFLATE_CHUNK });
    const onData = (chunk: Buffer): void => {
      this.inBytes += chunk.length;
      if (this.maxPayload <= 0 || this.inBytes <= this.maxPayload) {
        this.inParts.push(chunk);
        return;
      }
      // Past the bound: stop zlib here (the rest of the input is not inflated), keep nothing.
      this.inError = new RangeError('Max payload size exceeded');
      this.inParts = [];
      inf.removeListener('data', onData);
      inf.reset();
    };
    inf.on('data', onData);
    inf.on('error', (err: Error) => {
      // Not a deflate stream: the write's callback may never come, so the job ends here.
      this.inError ??= err;
      this.inflating?.();
    });
    this.inError = null;
    this.inBytes = 0;
    return inf;
  }

  private dropInflater(): void {
    const inf = this.inflater;
    this.inflater = null;
    this.inParts = [];
    this.inBytes = 0;
    this.inCompressed = 0;
    inf?.close();
  }

  /** Releases the zlib streams; a compression in flight fails. */
  cleanup(): void {
    if (this.closed) return;
    this.closed = true;
    // A job in flight gives its slot back now: its callbacks are ignored from here on.
    if (this.inflating !== null) {
      this.inflating = null;
      jobDone();
    }
    if (this.deflating !== null) jobDone();
    this.deflater?.close();
    this.deflater = null;
    this.dropInflater();
    const cb = this.deflating;
    this.deflating = null;
    cb?.(new Error('the deflate stream was closed while data was being processed'));
  }
}
