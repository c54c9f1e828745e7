/**
 * Multipart helpers: `Form` builds a streamed `multipart/form-data` body (text fields, bytes
 * with a file name, a file read from disk chunk by chunk); `parseMultipartForm` reads one on
 * the server. Starts its own server on 127.0.0.1, uploads to it, prints the parsed parts and exits.
 *
 *   node --import tsx examples/multipart.ts
 */
import { createReadStream } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as HTTP from '../index.js';

const server = await HTTP.serve(
  (req) => {
    const parts = HTTP.parseMultipartForm(req);
    if (parts === undefined) return new HTTP.Response(400, 'send multipart/form-data');
    const summary = parts.map((p) => ({ name: p.name, filename: p.filename, contentType: p.contentType, bytes: p.data.length }));
    return new HTTP.Response(200, JSON.stringify(summary), { headers: { 'Content-Type': 'application/json' } });
  },
  { host: '127.0.0.1', port: 0 },
);

// A file on disk, streamed by the Form (sent with its base name as the file name).
const dir = await mkdtemp(path.join(tmpdir(), 'switchyard-multipart-'));
const report = path.join(dir, 'report.csv');
await writeFile(report, 'day,requests\nmon,120\ntue,98\n');

const form = new HTTP.Form({
  title: 'weekly numbers',
  count: 2,
  report: createReadStream(report),
  logo: new HTTP.Multipart('logo.png', new Uint8Array([0x89, 0x50, 0x4e, 0x47]), 'image/png'),
});
console.log(`sending ${form.length} bytes as ${HTTP.contentType(form)}`);

// The Form sets Content-Type (with its boundary) itself.
const res = await HTTP.post(`http://127.0.0.1:${server.port}/upload`, { body: form });
for (const p of res.json() as { name: string; filename: string | null; contentType: string; bytes: number }[]) {
  console.log(`part ${p.name}: ${p.bytes} bytes, ${p.contentType}${p.filename !== null ? `, file ${p.filename}` : ''}`);
}

HTTP.close(HTTP.getDefaultClient());
await server.close();
await rm(dir, { recursive: true, force: true });
