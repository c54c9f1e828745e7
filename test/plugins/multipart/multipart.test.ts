/**
 * Multipart helpers: Form → bytes → parse round trips, Batch/mixed, a Form POSTed by the
 * project's client to the project's server, a curl `-F` body parsed (and rebuilt) byte for
 * byte, and malformed input rejected with ParseError.
 */
import { execFile } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ArgumentError, Client, ParseError, Request, Response, readAll } from '../../../kernel/index.js';
import { Batch, Form, Multipart, contentType, parseMultipart, parseMultipartForm, parseMultipartMixed } from '../../../plugins/index.js';
import { onCleanup, startServer } from '../../helpers/server.js';

const execFileP = promisify(execFile);
let dir = '';
let binPath = '';
const binData = Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 7 + 3) & 0xff));

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'swy-multipart-'));
  binPath = path.join(dir, 'data.bin');
  await writeFile(binPath, binData);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');

describe('Form', () => {
  it('round trips strings, numbers, bytes, a Multipart and a file stream', async () => {
    const form = new Form([
      ['a', 'hello "world"'],
      ['n', 42],
      ['bytes', new Uint8Array([0, 1, 2, 255])],
      ['doc', new Multipart('notes.txt', 'some text', 'text/markdown')],
      ['file', createReadStream(binPath)],
      ['other', { toString: () => 'custom' }],
    ]);
    // An unread fs read stream is sized from its file, so the whole form is.
    const declared = form.length;
    expect(form.contentType).toBe(contentType(form));
    expect(contentType(form)).toMatch(/^multipart\/form-data; boundary=[-0-9a-z]+$/);
    const bytes = await readAll(form);
    expect(declared).toBe(bytes.length);
    const parts = parseMultipartForm(contentType(form), bytes)!;
    expect(parts.map((p) => [p.name, p.filename, p.contentType])).toEqual([
      ['a', null, 'text/plain'],
      ['n', null, 'text/plain'],
      ['bytes', null, 'application/octet-stream'],
      ['doc', 'notes.txt', 'text/markdown'],
      ['file', 'data.bin', 'application/octet-stream'],
      ['other', null, 'text/plain'],
    ]);
    expect(text(parts[0]!.data)).toBe('hello "world"');
    expect(text(parts[1]!.data)).toBe('42');
    expect([...parts[2]!.data]).toEqual([0, 1, 2, 255]);
    expect(text(parts[3]!.data)).toBe('some text');
    expect(Buffer.from(parts[4]!.data).equals(binData)).toBe(true);
    expect(text(parts[5]!.data)).toBe('custom');
    expect(parts[0]!.headers.get('Content-Disposition')).toBe('form-data; name="a"');
  });

  it('sizes a file stream from its start and end; any other stream leaves the length unknown', async () => {
    const ranged = new Form([['f', createReadStream(binPath, { start: 10, end: 19 })]], { boundary: 'B' });
    const bytes = await readAll(ranged);
    expect(ranged.length).toBe(bytes.length);
    const part = parseMultipartForm(contentType(ranged), bytes)![0]!;
    expect(Buffer.from(part.data).equals(binData.subarray(10, 20))).toBe(true);

    // A stream that already started reading is sent as a stream (chunked), from where it is.
    const started = createReadStream(binPath);
    await new Promise<void>((resolve) => started.once('readable', () => resolve()));
    const generic = new Form([
      ['f', started],
      ['g', Readable.from([Buffer.from('xyz')])],
    ]);
    expect(generic.length).toBe(-1);
    const parts = parseMultipartForm(contentType(generic), await readAll(generic))!;
    expect(Buffer.from(parts[0]!.data).equals(binData)).toBe(true);
    expect(text(parts[1]!.data)).toBe('xyz');
  });

  it('knows its length when every part is sized; an object of parts; detection of empty types', async () => {
    const form = new Form({ x: '1', y: new Multipart(null, new Uint8Array([0])), z: new Multipart('p.png', new Uint8Array([1])) }, { boundary: 'XyZ' });
    const bytes = await readAll(form);
    expect(form.length).toBe(bytes.length);
    expect(text(bytes)).toBe(
      '--XyZ\r\nContent-Disposition: form-data; name="x"\r\n\r\n1\r\n' +
        '--XyZ\r\nContent-Disposition: form-data; name="y"\r\nContent-Type: application/octet-stream\r\n\r\n\x00\r\n' +
        '--XyZ\r\nContent-Disposition: form-data; name="z"; filename="p.png"\r\nContent-Type: image/png\r\n\r\n\x01\r\n' +
        '--XyZ--\r\n',
    );
    expect(new Multipart(null, 'abc').contentType).toBe('');
  });

  it('streams a Readable part by part and close() destroys unread streams', async () => {
    let pulled = 0;
    const src = Readable.from(
      (function* () {
        for (let i = 0; i < 3; i++) {
          pulled++;
          yield Buffer.from(`chunk${i}`);
        }
      })(),
    );
    // A given type: the head goes out before the stream is pulled (an empty type would need its first bytes).
    const form = new Form([['s', new Multipart(null, src, 'application/octet-stream')]], { boundary: 'b' });
    const first = new Uint8Array(8);
    const n = await form.read(first);
    expect(text(first.subarray(0, n))).toBe('--b\r\nCon');
    expect(pulled).toBe(0);
    const rest = await readAll(form);
    expect(text(rest)).toContain('chunk0chunk1chunk2\r\n--b--\r\n');
    const other = Readable.from(['x']);
    const f2 = new Form([['s', other]]);
    f2.close();
    expect(f2.closed).toBe(true);
    expect(other.destroyed).toBe(true);
    expect(await f2.read(new Uint8Array(4))).toBe(0);
  });

  it('rejects bad boundaries', () => {
    expect(() => new Form([], { boundary: 'x'.repeat(71) })).toThrow(/boundary/);
    expect(() => new Form([], { boundary: 'a\r\nb' })).toThrow(/boundary/);
  });
});

const PNG = Buffer.concat([Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'), Buffer.alloc(40, 1)]);
const PDF = Buffer.from('%PDF-1.7\n%\xe2\xe3\n1 0 obj\n', 'latin1');
const GZIP = Buffer.from('1f8b0800000000000003', 'hex');
const ZIP = Buffer.from('504b0304140000000800', 'hex');
const GIF = Buffer.from('GIF89a\x01\x00\x01\x00', 'latin1');
const JPEG = Buffer.from('ffd8ffe000104a464946', 'hex');

/** The Content-Type line of each part of a built form, in order (null when a part has none). */
async function partTypes(form: Form): Promise<(string | null)[]> {
  const parts = parseMultipart(contentType(form), await readAll(form))!;
  return parts.map((p) => p.headers.get('Content-Type') ?? null);
}

describe('Form: part headers carry user strings safely', () => {
  it('a name or file name cannot end its quotes or start a header: " CR LF are percent-encoded (WHATWG form-data)', async () => {
    const form = new Form(
      [
        ['n"\r\nX-Injected: 1', new Multipart('a"b\r\nX-Injected: 2\r\n\r\nboo.txt', 'data', 'text/plain')],
        ['cr\ronly', new Multipart('lf\nonly', 'x', 'text/plain')],
        ['nul\0and\x01ctl\x7f', new Multipart('tab\there.txt', 'y', 'text/plain')],
      ],
      { boundary: 'QQ' },
    );
    const bytes = await readAll(form);
    const raw = text(bytes);
    expect(raw).toContain('Content-Disposition: form-data; name="n%22%0D%0AX-Injected: 1"; filename="a%22b%0D%0AX-Injected: 2%0D%0A%0D%0Aboo.txt"\r\n');
    expect(raw).toContain('name="cr%0Donly"; filename="lf%0Aonly"\r\n');
    expect(raw).toContain('name="nul%00and%01ctl%7F"; filename="tab%09here.txt"\r\n');
    const parts = parseMultipartForm(contentType(form), bytes)!;
    expect(parts.map((p) => [...p.headers].map(([k]) => k.toLowerCase()))).toEqual([
      ['content-disposition', 'content-type'],
      ['content-disposition', 'content-type'],
      ['content-disposition', 'content-type'],
    ]);
    expect(parts.map((p) => [p.name, p.filename, text(p.data)])).toEqual([
      ['n%22%0D%0AX-Injected: 1', 'a%22b%0D%0AX-Injected: 2%0D%0A%0D%0Aboo.txt', 'data'],
      ['cr%0Donly', 'lf%0Aonly', 'x'],
      ['nul%00and%01ctl%7F', 'tab%09here.txt', 'y'],
    ]);
  });

  it('the same for a multipart/mixed part name', async () => {
    const raw = text(await readAll(Batch([new Multipart(null, 'x', 'text/plain', '', 'a"\r\nb')], { boundary: 'M' })));
    expect(raw).toContain('Content-Disposition: attachment; name="a%22%0D%0Ab"\r\n');
  });

  it.each([
    ['content type with CR LF', ['text/plain\r\nX-Injected: 1', ''], /U\+000D/],
    ['content type with NUL', ['text/plain\0', ''], /U\+0000/],
    ['content type with a CTL', ['text/plain\x01', ''], /U\+0001/],
    ['transfer encoding with LF', ['', 'binary\nX-Injected: 1'], /U\+000A/],
    ['transfer encoding with DEL', ['', 'binary\x7f'], /U\+007F/],
  ])('%s is refused', (_what, [type, cte], char) => {
    expect(() => new Multipart('f.txt', 'x', type, cte)).toThrow(ArgumentError);
    expect(() => new Multipart('f.txt', 'x', type, cte)).toThrow(char);
  });
});

describe('Form: an empty part content type is detected from the data (WHATWG MIME sniffing)', () => {
  it('bytes: PNG, GIF, JPEG, PDF, gzip, zip, text, binary', async () => {
    const form = new Form([
      ['png', new Multipart(null, PNG)],
      ['gif', new Multipart('upload', GIF)],
      ['jpeg', new Multipart('photo.bin', JPEG)], // a name that says only "bytes" does not stop sniffing
      ['pdf', new Multipart(null, PDF)],
      ['gz', new Multipart(null, GZIP)],
      ['zip', new Multipart(null, ZIP)],
      ['text', new Multipart(null, Buffer.from('plain words\n'))],
      ['html', new Multipart('page', Buffer.from('<!DOCTYPE html><html></html>'))],
      ['bin', new Multipart(null, Buffer.from([0, 1, 2, 3]))],
      ['empty', new Multipart(null, new Uint8Array(0))],
    ]);
    expect(await partTypes(form)).toEqual([
      'image/png',
      'image/gif',
      'image/jpeg',
      'application/pdf',
      'application/x-gzip',
      'application/zip',
      'text/plain; charset=utf-8',
      'text/html; charset=utf-8',
      'application/octet-stream',
      'application/octet-stream',
    ]);
  });

  it('a file name with a known extension wins; an explicit type wins over both; a plain string field has none', async () => {
    const form = new Form([
      ['a', new Multipart('data.json', Buffer.from('{"a":1}'))],
      ['b', new Multipart('x.png', Buffer.from('not a png'))],
      ['c', new Multipart(null, PNG, 'application/x-custom')],
      ['d', 'a plain field'],
      ['e', new Multipart(null, '<html> as a string </html>')],
    ]);
    expect(await partTypes(form)).toEqual(['application/json', 'image/png', 'application/x-custom', null, 'text/html; charset=utf-8']);
  });

  it('an unread fs read stream is sniffed from its first bytes (and the form still knows its length)', async () => {
    const pngPath = path.join(dir, 'picture'); // no extension
    await writeFile(pngPath, PNG);
    const form = new Form([
      ['f', createReadStream(pngPath)],
      ['g', createReadStream(pngPath, { start: 8 })],
    ]);
    const declared = form.length;
    const bytes = await readAll(form);
    expect(declared).toBe(bytes.length);
    const parts = parseMultipartForm(contentType(form), bytes)!;
    expect(parts.map((p) => [p.filename, p.contentType])).toEqual([
      ['picture', 'image/png'],
      ['picture', 'application/octet-stream'], // from byte 8 on: the signature is not there
    ]);
    expect(Buffer.from(parts[0]!.data).equals(PNG)).toBe(true);
  });

  it('a stream part is sniffed from its first bytes when sent, across small chunks, and streamed on', async () => {
    let pulled = 0;
    const chunks = [PNG.subarray(0, 1), PNG.subarray(1, 5), PNG.subarray(5), Buffer.alloc(100_000, 7)];
    const src = Readable.from(
      (function* () {
        for (const c of chunks) {
          pulled++;
          yield c;
        }
      })(),
    );
    const form = new Form(
      [
        ['s', src],
        ['t', Readable.from(['plain ', 'text'])],
        ['u', Readable.from([])],
      ],
      { boundary: 'SS' },
    );
    expect(form.length).toBe(-1);
    expect(pulled).toBe(0); // nothing is read before the body is
    const bytes = await readAll(form);
    const parts = parseMultipartForm(contentType(form), bytes)!;
    expect(parts.map((p) => p.contentType)).toEqual(['image/png', 'text/plain; charset=utf-8', 'application/octet-stream']);
    expect(Buffer.from(parts[0]!.data).equals(Buffer.concat(chunks))).toBe(true);
    expect(text(parts[1]!.data)).toBe('plain text');
    expect(parts[2]!.data.length).toBe(0);
  });

  it("over loopback: the project's server sees the sniffed types of bytes and stream parts", async () => {
    const { port } = await startServer((req) => {
      const parts = parseMultipartForm(req) ?? [];
      return new Response(200, JSON.stringify(parts.map((p) => [p.name, p.contentType, p.data.length])));
    });
    const client = new Client();
    onCleanup(() => client.close());
    const form = new Form([
      ['img', new Multipart(null, PNG)],
      ['doc', Readable.from([PDF])],
      ['txt', new Multipart('notes', Buffer.from('hello'))],
    ]);
    const res = await client.post(`http://127.0.0.1:${port}/`, { body: form });
    expect(JSON.parse(text(res.body as Uint8Array))).toEqual([
      ['img', 'image/png', PNG.length],
      ['doc', 'application/pdf', PDF.length],
      ['txt', 'text/plain; charset=utf-8', 5],
    ]);
  });
});

describe('Batch and multipart/mixed', () => {
  it('builds and parses multipart/mixed', async () => {
    const b = Batch([new Multipart(null, '{"a":1}', 'application/json', '', 'first'), ['second', 'two']], { boundary: 'mixedB' });
    expect(b.type).toBe('mixed');
    expect(contentType(b)).toBe('multipart/mixed; boundary=mixedB');
    const bytes = await readAll(b);
    expect(parseMultipartForm(contentType(b), bytes)).toBeUndefined();
    const parts = parseMultipartMixed(contentType(b), bytes)!;
    expect(parts.map((p) => [p.name, p.contentType, text(p.data)])).toEqual([
      ['first', 'application/json', '{"a":1}'],
      ['second', 'text/plain; charset=utf-8', 'two'],
    ]);
    expect(parseMultipart(contentType(b), bytes)).toHaveLength(2);
    expect(parseMultipart(contentType(b), bytes, 'formdata')).toBeUndefined();
  });
});

describe('parsing', () => {
  const ct = 'multipart/form-data; boundary=BB';
  it('accepts a message, a preamble, quoted boundaries and filename*', () => {
    const body = 'preamble\r\n--BB\r\nContent-Disposition: form-data; name="f"; filename*=UTF-8\'\'%C3%A9.txt\r\n\r\nx\r\n--BB--\r\nepilogue';
    const req = new Request('POST', '/', [['Content-Type', 'multipart/form-data; boundary="BB"']], Buffer.from(body));
    const parts = parseMultipartForm(req)!;
    expect(parts).toHaveLength(1);
    expect(parts[0]!.filename).toBe('é.txt');
    expect(parseMultipartForm(new Response(200, body, { headers: [['Content-Type', ct]] }))).toHaveLength(1);
  });

  it('form-data: a part with no name, or with no form-data Content-Disposition, is skipped (RFC 7578 §4.2)', () => {
    const body =
      '--BB\r\nContent-Disposition: form-data; filename="orphan.txt"\r\n\r\nno name\r\n' +
      '--BB\r\nContent-Disposition: form-data; name="kept"\r\n\r\nyes\r\n' +
      '--BB\r\nContent-Type: text/plain\r\n\r\nno disposition\r\n' +
      '--BB\r\nContent-Disposition: attachment; name="wrongtype"\r\n\r\nattachment\r\n' +
      '--BB\r\nContent-Disposition: form-data; name=""\r\n\r\nempty name\r\n' +
      '--BB\r\nContent-Disposition: form-data\r\n\r\nbare\r\n' +
      '--BB--\r\n';
    const parts = parseMultipartForm(ct, body)!;
    expect(parts.map((p) => [p.name, text(p.data)])).toEqual([
      ['kept', 'yes'],
      ['', 'empty name'], // a name parameter that is empty is still a name
    ]);
    expect(parseMultipart(ct, body)!.map((p) => p.name)).toEqual(['kept', '']);
    // multipart/mixed parts need no name.
    const mixed = parseMultipartMixed('multipart/mixed; boundary=BB', body)!;
    expect(mixed).toHaveLength(6);
  });

  it('type mismatch or no body → undefined', () => {
    expect(parseMultipartForm('text/plain', '--BB--')).toBeUndefined();
    expect(parseMultipartForm('multipart/mixed; boundary=BB', '--BB--')).toBeUndefined();
    expect(parseMultipartMixed(ct, '--BB--')).toBeUndefined();
    expect(parseMultipartForm(ct, null)).toBeUndefined();
    expect(parseMultipartForm(ct, new Uint8Array(0))).toBeUndefined();
    expect(parseMultipartForm(new Request('POST', '/', [['Content-Type', ct]]))).toBeUndefined();
  });

  it.each([
    ['missing final boundary', ct, '--BB\r\nContent-Disposition: form-data; name="a"\r\n\r\nvalue'],
    ['truncated after a delimiter', ct, '--BB\r\nContent-Disposition: form-data; name="a"\r\n\r\nv\r\n--BB'],
    ['no delimiter at all', ct, 'just bytes'],
    ['boundary over 70 characters', `multipart/form-data; boundary=${'b'.repeat(71)}`, `--${'b'.repeat(71)}--`],
    ['no boundary parameter', 'multipart/form-data', '--BB--'],
    ['header block over 64 KiB', ct, `--BB\r\nX-Big: ${'a'.repeat(70000)}\r\n\r\nv\r\n--BB--`],
    ['unterminated header block', ct, '--BB\r\nX-A: b\r\n'],
    ['malformed header line', ct, '--BB\r\nnot a header\r\n\r\nv\r\n--BB--'],
  ])('%s → ParseError', (_what, type, body) => {
    expect(() => parseMultipart(type, body)).toThrow(ParseError);
  });

  it('a large body with no delimiter fails fast (linear search)', () => {
    const big = Buffer.alloc(8 * 1024 * 1024, 0x2d); // all dashes
    big.write('--BB\r\n\r\n', 0);
    const t = Date.now();
    expect(() => parseMultipart(ct, big)).toThrow(ParseError);
    expect(Date.now() - t).toBeLessThan(2000);
  });
});

describe('over real loopback', () => {
  it("the project's server parses a Form POSTed by the project's client", async () => {
    const { port } = await startServer((req) => {
      const parts = parseMultipartForm(req);
      if (parts === undefined) return new Response(400, 'not multipart');
      return new Response(
        200,
        JSON.stringify(parts.map((p) => ({ name: p.name, filename: p.filename, type: p.contentType, size: p.data.length, sum: Buffer.from(p.data).reduce((a, c) => (a + c) % 65521, 0) }))),
      );
    });
    const client = new Client();
    onCleanup(() => client.close());
    const form = new Form([
      ['a', '1'],
      ['f', createReadStream(binPath)],
    ]);
    // No Content-Type given: the client takes it from the Form.
    const res = await client.post(`http://127.0.0.1:${port}/up`, { body: form });
    expect(res.status).toBe(200);
    const body = res.body instanceof Uint8Array ? text(res.body) : String(res.body);
    expect(JSON.parse(body)).toEqual([
      { name: 'a', filename: null, type: 'text/plain', size: 1, sum: 49 },
      { name: 'f', filename: 'data.bin', type: 'application/octet-stream', size: binData.length, sum: binData.reduce((a, c) => (a + c) % 65521, 0) },
    ]);
  });

  it('parses a body produced by curl -F byte for byte (and a Form with its boundary produces the same bytes)', async () => {
    const { port } = await startServer((req) => {
      const body = req.body instanceof Uint8Array ? req.body : new Uint8Array(0);
      return new Response(200, body, {
        headers: [
          ['Content-Type', 'application/octet-stream'],
          ['X-Echo-Type', req.headers.get('Content-Type') ?? ''],
        ],
      });
    });
    const outPath = path.join(dir, 'curl-out');
    const { stdout } = await execFileP('curl', ['-sS', '-H', 'Expect:', '-o', outPath, '-D', '-', '-F', 'a=1', '-F', `f=@${binPath}`, `http://127.0.0.1:${port}/echo`]);
    const echoType = /^x-echo-type:\s*(.*?)\r?$/im.exec(stdout)![1]!;
    const bytes = await readFile(outPath);
    const parts = parseMultipartForm(echoType, bytes)!;
    expect(parts.map((p) => [p.name, p.filename])).toEqual([
      ['a', null],
      ['f', 'data.bin'],
    ]);
    expect(text(parts[0]!.data)).toBe('1');
    expect(Buffer.from(parts[1]!.data).equals(binData)).toBe(true);
    const boundary = /boundary=(.*)$/.exec(echoType)![1]!;
    const mine = await readAll(
      new Form(
        [
          ['a', '1'],
          ['f', createReadStream(binPath)],
        ],
        { boundary },
      ),
    );
    expect(Buffer.from(mine).equals(bytes)).toBe(true);
  });
});
