/**
 * Record and replay: real exchanges written to a JSON file, and read back as interceptors.
 *
 * The recorder taps `client.onResponseHead` first of all (before decompression), wraps the
 * response body in one that keeps a copy of the bytes as the caller reads them, and files
 * the exchange when that body ends or is closed: so the file holds the bytes as the server
 * sent them (still compressed, with their `Content-Encoding`), and a replay goes through the
 * same plugins again.
 */
import { Buffer } from 'node:buffer';
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { AbstractBody, ArgumentError, ChunkBody, Headers, type Response } from '../../kernel/index.js';

/** Request headers never written to a recording: credentials. */
const SECRET_HEADERS: ReadonlySet<string> = new Set(['authorization', 'proxy-authorization', 'cookie']);

/** One exchange in a recording file. */
export interface RecordedExchange {
  /** Request method. */
  method: string;
  /** Absolute request URL. */
  url: string;
  /** Request headers as sent, without `Authorization`, `Proxy-Authorization` and `Cookie`. */
  requestHeaders: [string, string][];
  /** The request body (when it was text or bytes), else absent. */
  requestBody?: RecordedBody;
  /** Response status. */
  status: number;
  /** Response headers as received. */
  headers: [string, string][];
  /** Response body as received (before decoding). */
  body: RecordedBody;
  /** Trailers that ended the body, when there were any. */
  trailers?: [string, string][];
}

/** A body in a recording: UTF-8 text as it is, anything else base64. */
export interface RecordedBody {
  /** `utf8` or `base64`. */
  encoding: 'utf8' | 'base64';
  /** The bytes in that encoding. */
  data: string;
}

/** The file: a version and the exchanges in the order their responses arrived. */
export interface Recording {
  /** Always 1. */
  version: 1;
  /** The exchanges. */
  exchanges: RecordedExchange[];
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** `bytes` as a {@link RecordedBody}: text when it is valid UTF-8 and not content-coded. */
export function encodeBody(bytes: Uint8Array, coded: boolean): RecordedBody {
  if (!coded) {
    try {
      return { encoding: 'utf8', data: utf8.decode(bytes) };
    } catch {
      // Not UTF-8: base64 below.
    }
  }
  return { encoding: 'base64', data: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64') };
}

/** The bytes of a {@link RecordedBody}. */
export function decodeBody(b: RecordedBody): Buffer {
  return Buffer.from(b.data, b.encoding);
}

/** @internal Keeps the exchanges of a recording session and writes them. */
export class Recorder {
  private readonly exchanges: { entry: RecordedExchange; chunks: Uint8Array[] | null }[] = [];
  constructor(readonly file: string) {}

  /** Replaces `res.body` with one that copies what is read, and files the exchange. */
  tee(res: Response): void {
    const req = res.request;
    // An interim or upgrade answer (a WebSocket's 101) has no exchange to replay.
    if (req === null || res.status < 200) return;
    const requestHeaders: [string, string][] = [];
    for (const [k, v] of req.headers) if (!SECRET_HEADERS.has(k.toLowerCase())) requestHeaders.push([k, v]);
    const entry: RecordedExchange = { method: req.method, url: req.url, requestHeaders, status: res.status, headers: res.headers.toArray(), body: { encoding: 'utf8', data: '' } };
    const rb = req.body;
    if (typeof rb === 'string') entry.requestBody = { encoding: 'utf8', data: rb };
    else if (rb instanceof Uint8Array && rb.length > 0) entry.requestBody = encodeBody(rb, false);
    const slot = { entry, chunks: [] as Uint8Array[] | null };
    this.exchanges.push(slot);
    const coded = res.headers.has('Content-Encoding');
    const b = res.body;
    const finish = (): void => {
      const chunks = slot.chunks;
      if (chunks === null) return;
      slot.chunks = null;
      entry.body = encodeBody(Buffer.concat(chunks), coded);
      const t = b instanceof AbstractBody ? b.trailers() : res.trailers;
      if (t.size > 0) entry.trailers = t.toArray();
    };
    if (b instanceof AbstractBody) res.body = new TeeBody(b, slot.chunks!, finish);
    else {
      if (b !== null && b.length > 0) slot.chunks!.push(typeof b === 'string' ? Buffer.from(b, 'utf8') : b);
      finish();
    }
  }

  /** The recording so far (a body not read to its end holds what was read). */
  recording(): Recording {
    const exchanges: RecordedExchange[] = [];
    for (const s of this.exchanges) {
      if (s.chunks !== null)
        exchanges.push({
          ...s.entry,
          body: encodeBody(
            Buffer.concat(s.chunks),
            s.entry.headers.some(([k]) => k.toLowerCase() === 'content-encoding'),
          ),
        });
      else exchanges.push(s.entry);
    }
    return { version: 1, exchanges };
  }

  /** Writes the file (its directory made when missing). */
  async save(): Promise<void> {
    await mkdir(dirname(this.file), { recursive: true });
    await writeFile(this.file, `${JSON.stringify(this.recording(), null, 2)}\n`);
  }
}

/** A body that hands on what it reads from `inner` and keeps a copy. */
class TeeBody extends ChunkBody {
  private isClosed = false;
  private readonly buf = new Uint8Array(65536);
  constructor(
    private readonly inner: AbstractBody,
    private readonly copy: Uint8Array[],
    private readonly done: () => void,
  ) {
    super();
  }

  override get length(): number {
    return this.inner.length;
  }

  protected async nextChunk(): Promise<Uint8Array | null> {
    if (this.isClosed) return null;
    const n = await this.inner.read(this.buf);
    if (n === 0) {
      this.done();
      return null;
    }
    const chunk = Buffer.from(this.buf.subarray(0, n));
    this.copy.push(chunk);
    return chunk;
  }

  override trailers(): Headers {
    return this.inner.trailers();
  }

  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.dropWaiting();
    this.inner.close();
    this.done();
  }

  get closed(): boolean {
    return this.isClosed;
  }
}

/** Reads a recording file, or throws `ArgumentError` saying what is wrong with it. */
export function loadRecording(file: string): Recording {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ArgumentError(`mock replay: cannot read ${file} (${(err as Error).message}); record it first with mock({ record: ${JSON.stringify(file)} })`, { cause: err });
  }
  let r: unknown;
  try {
    r = JSON.parse(text);
  } catch (err) {
    throw new ArgumentError(`mock replay: ${file} is not JSON (${(err as Error).message})`, { cause: err });
  }
  const rec = r as Partial<Recording> | null;
  if (typeof rec !== 'object' || rec === null || rec.version !== 1 || !Array.isArray(rec.exchanges)) {
    throw new ArgumentError(`mock replay: ${file} is not a recording (expected { "version": 1, "exchanges": [...] })`);
  }
  rec.exchanges.forEach((e, i) => {
    const ok =
      typeof e === 'object' &&
      e !== null &&
      typeof e.method === 'string' &&
      typeof e.url === 'string' &&
      Number.isInteger(e.status) &&
      Array.isArray(e.headers) &&
      (e.trailers === undefined || Array.isArray(e.trailers)) &&
      isBody(e.body) &&
      (e.requestBody === undefined || isBody(e.requestBody));
    if (!ok) throw new ArgumentError(`mock replay: exchange ${i} of ${file} lacks method, url, status, headers or body`);
  });
  return rec as Recording;
}

function isBody(b: unknown): b is RecordedBody {
  const x = b as RecordedBody | null;
  return typeof x === 'object' && x !== null && (x.encoding === 'utf8' || x.encoding === 'base64') && typeof x.data === 'string';
}
