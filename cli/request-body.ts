/**
 * The request body of the request commands, from `-d` (data), `-F` (multipart form) and
 * `--json`.
 *
 * - `-d DATA`: sent as given; `-d @FILE` sends the file's bytes unchanged (curl's
 *   `--data-binary`: no newline stripping), `-d @-` standard input. Several `-d` are joined
 *   with `&`. Content-Type `application/x-www-form-urlencoded` unless a `-H` sets one, or
 *   `application/json` with `--json` (the data must then parse as JSON).
 * - `-F name=value`, `-F name=@FILE` (a file part, streamed from disk, named by its base name),
 *   with optional `;type=MEDIA` and `;filename=NAME` after the file, as curl has them.
 *   The form's length is computed from the files' sizes, so the upload carries a
 *   Content-Length (servers that refuse chunked uploads accept it) while the files are still
 *   read chunk by chunk, never whole.
 */
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { Form, Multipart, detectContentType } from '../plugins/multipart/index.js';
import { UsageError } from './errors.js';

/** What the body options gave. */
export interface BuiltBody {
  /** The body, or undefined for none. */
  body: Uint8Array | Form | undefined;
  /** The Content-Type to send unless the user set one (a Form sets its own). */
  contentType: string | undefined;
}

/** A form whose length is known up front (file sizes from `stat`), so it is sent with a Content-Length. */
class SizedForm extends Form {
  private readonly size: number;
  constructor(parts: [string, unknown][], boundary: string, size: number) {
    super(parts, { boundary });
    this.size = size;
  }

  /** The byte length computed before sending. */
  override get length(): number {
    return this.size;
  }
}

/** Builds the body of a request command; `stdin` is read for `-d @-`. */
export async function buildBody(data: readonly string[], form: readonly string[], json: boolean, command: string, stdin: Readable): Promise<BuiltBody> {
  if (data.length > 0 && form.length > 0) throw new UsageError('-d and -F cannot be combined: send either data or a multipart form', command);
  if (form.length > 0) {
    if (json) throw new UsageError('--json and -F cannot be combined: a multipart form is not JSON', command);
    return { body: await buildForm(form, command), contentType: undefined };
  }
  if (data.length === 0) return { body: undefined, contentType: undefined };
  const pieces: Buffer[] = [];
  for (const d of data) {
    if (pieces.length > 0) pieces.push(Buffer.from('&'));
    pieces.push(await dataValue(d, command, stdin));
  }
  const bytes = Buffer.concat(pieces);
  if (json) {
    try {
      JSON.parse(bytes.toString('utf8'));
    } catch (err) {
      throw new UsageError(`--json: the data is not valid JSON (${(err as Error).message})`, command);
    }
  }
  return { body: bytes, contentType: json ? 'application/json' : 'application/x-www-form-urlencoded' };
}

async function dataValue(d: string, command: string, stdin: Readable): Promise<Buffer> {
  if (!d.startsWith('@')) return Buffer.from(d, 'utf8');
  const file = d.slice(1);
  if (file === '-') {
    const chunks: Buffer[] = [];
    for await (const c of stdin) chunks.push(typeof c === 'string' ? Buffer.from(c) : (c as Buffer));
    return Buffer.concat(chunks);
  }
  try {
    return await readFile(file);
  } catch (err) {
    throw new UsageError(`-d @${file}: cannot read the file (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, command);
  }
}

interface FilePart {
  name: string;
  file: string;
  filename: string;
  type: string;
  size: number;
}

async function buildForm(specs: readonly string[], command: string): Promise<Form> {
  const parsed: ([string, string] | FilePart)[] = [];
  for (const spec of specs) {
    const eq = spec.indexOf('=');
    if (eq <= 0) throw new UsageError(`-F ${JSON.stringify(spec)}: expected name=value or name=@file`, command);
    const name = spec.slice(0, eq);
    const value = spec.slice(eq + 1);
    if (!value.startsWith('@')) {
      parsed.push([name, value]);
      continue;
    }
    // name=@file[;type=media][;filename=name]
    const [file, ...params] = value.slice(1).split(';');
    if (file === undefined || file === '') throw new UsageError(`-F ${JSON.stringify(spec)}: no file name after @`, command);
    let type = '';
    let filename = path.basename(file);
    for (const p of params) {
      const i = p.indexOf('=');
      const key = i < 0 ? p.trim() : p.slice(0, i).trim();
      const v = i < 0 ? '' : p.slice(i + 1).trim();
      if (key === 'type' && v !== '') type = v;
      else if (key === 'filename' && v !== '') filename = v;
      else throw new UsageError(`-F ${JSON.stringify(spec)}: unknown parameter ${JSON.stringify(p)} (type=… and filename=… are known)`, command);
    }
    let size: number;
    try {
      const st = await stat(file);
      if (!st.isFile()) throw new Error('not a regular file');
      size = st.size;
    } catch (err) {
      throw new UsageError(`-F ${name}=@${file}: cannot read the file (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, command);
    }
    // The type the form would detect for a stream, fixed now so the sizing form below matches.
    parsed.push({ name, file, filename, type: type || detectContentType(Buffer.alloc(0), filename), size });
  }
  // The length: the same form with every file left empty, plus the files' sizes.
  const boundary = `----------------switchyard-cli${Date.now().toString(36)}${Math.random().toString(36).slice(2, 10)}`;
  const empty = new Form(
    parsed.map((p): [string, unknown] => (Array.isArray(p) ? p : [p.name, new Multipart(p.filename, new Uint8Array(0), p.type)])),
    { boundary },
  );
  const size = empty.length + parsed.reduce((n, p) => n + (Array.isArray(p) ? 0 : p.size), 0);
  empty.close();
  const parts = parsed.map((p): [string, unknown] => (Array.isArray(p) ? p : [p.name, new Multipart(p.filename, lazyFile(p.file), p.type)]));
  return new SizedForm(parts, boundary, size);
}

/** The file's bytes as an async iterable that opens the file only when the form reaches it (no open descriptors before sending). */
function lazyFile(file: string): AsyncIterable<Uint8Array> {
  return {
    async *[Symbol.asyncIterator]() {
      const s = createReadStream(file, { highWaterMark: 64 * 1024 });
      try {
        for await (const chunk of s) yield chunk as Buffer;
      } finally {
        s.destroy();
      }
    },
  };
}
