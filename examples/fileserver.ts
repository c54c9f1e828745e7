/**
 * Plugin `fileserver` and `fileServer`: static files streamed from disk with content types,
 * ETags and `If-None-Match` (304), byte ranges (206), index files, never a path outside the
 * root. `HTTP.fileServer(root, options)` is a handler (for a Router route or `serve`); the
 * plugin mounts directories in front of a server's handler, as here.
 * Makes a temporary folder, serves it on 127.0.0.1, fetches from it, prints and exits.
 *
 *   node --import tsx examples/fileserver.ts
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as HTTP from '../index.js';
import { fileserver } from '../plugins/index.js';

const root = await mkdtemp(path.join(tmpdir(), 'switchyard-files-'));
await writeFile(path.join(root, 'index.html'), '<h1>hello from disk</h1>\n');
await writeFile(path.join(root, 'notes.txt'), '0123456789abcdefghij\n');

// /static/... comes from `root`; a missing file falls through to the server's handler.
const kernel = await HTTP.createKernel().register(fileserver, { root, prefix: '/static', etag: 'weak_stat' }).ready();
const server = await kernel.serve(() => new HTTP.Response(404, 'not a file: the handler answered'), { host: '127.0.0.1', port: 0 });
const base = `http://127.0.0.1:${server.port}`;
const get = (p: string, headers: Record<string, string> = {}) => HTTP.get(base + p, { headers, statusException: false });

const page = await get('/static/');
console.log(`GET /static/ -> ${page.status} ${page.headers.get('Content-Type')} ${JSON.stringify(page.text())}`);

const notes = await get('/static/notes.txt');
const etag = notes.headers.get('ETag')!;
console.log(`GET /static/notes.txt -> ${notes.status}, ${notes.headers.get('Content-Length')} bytes, ETag ${etag}, Accept-Ranges ${notes.headers.get('Accept-Ranges')}`);

const cached = await get('/static/notes.txt', { 'If-None-Match': etag });
console.log(`  again with If-None-Match -> ${cached.status} (${cached.body?.length ?? 0} body bytes)`);

const part = await get('/static/notes.txt', { Range: 'bytes=10-14' });
console.log(`  Range: bytes=10-14 -> ${part.status} ${part.headers.get('Content-Range')} "${part.text()}"`);

const missing = await get('/static/missing.txt');
console.log(`GET /static/missing.txt -> ${missing.status} ${missing.text()}`);

HTTP.close(HTTP.getDefaultClient());
await kernel.close();
await rm(root, { recursive: true, force: true });
