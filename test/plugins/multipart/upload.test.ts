/**
 * Large streamed uploads: a 50 MiB file sent with Form by the project's client to a
 * Python http.server that hashes the raw body as it streams in, and to the project's own server
 * that parses it with parseMultipartForm; the client's resident memory stays flat during the upload.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, Response } from '../../../kernel/index.js';
import { Form, contentType, parseMultipartForm } from '../../../plugins/index.js';
import { onCleanup, startServer } from '../../helpers/server.js';

const MiB = 1024 * 1024;
const SIZE = 50 * MiB;

let dir = '';
let filePath = '';
let fileDigest = '';
let py: ChildProcess | null = null;
let pyPort = 0;

// Hashes the raw request body as it streams in (chunked or Content-Length), never storing it.
const PY_SERVER = String.raw`
import hashlib, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class H(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    def log_message(self, *a):
        pass
    def do_POST(self):
        h = hashlib.sha256()
        n = 0
        if 'chunked' in (self.headers.get('Transfer-Encoding') or '').lower():
            while True:
                line = self.rfile.readline(1024)
                size = int(line.split(b';', 1)[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline(1024) not in (b'\r\n', b'\n', b''):
                        pass
                    break
                left = size
                while left > 0:
                    b = self.rfile.read(min(left, 65536))
                    if not b:
                        raise EOFError
                    h.update(b); n += len(b); left -= len(b)
                self.rfile.readline(8)
        else:
            left = int(self.headers.get('Content-Length') or 0)
            while left > 0:
                b = self.rfile.read(min(left, 65536))
                if not b:
                    raise EOFError
                h.update(b); n += len(b); left -= len(b)
        out = ('%s %d %s' % (h.hexdigest(), n, self.headers.get('Content-Type') or '')).encode()
        self.send_response(200)
        self.send_header('Content-Type', 'text/plain')
        self.send_header('Content-Length', str(len(out)))
        self.end_headers()
        self.wfile.write(out)

s = ThreadingHTTPServer(('127.0.0.1', 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
`;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'swy-upload-'));
  filePath = path.join(dir, 'big.bin');
  const fh = await open(filePath, 'w');
  const hash = createHash('sha256');
  try {
    const chunk = Buffer.alloc(MiB);
    for (let i = 0; i < SIZE / MiB; i++) {
      for (let j = 0; j < MiB; j += 4) chunk.writeUInt32LE((i * 2654435761 + j * 40503) >>> 0, j);
      hash.update(chunk);
      await fh.write(chunk);
    }
  } finally {
    await fh.close();
  }
  fileDigest = hash.digest('hex');

  const child = spawn('python3', ['-c', PY_SERVER], { stdio: ['ignore', 'pipe', 'inherit'] });
  py = child;
  pyPort = await new Promise<number>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('python server did not start')), 10_000);
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`python server exited with ${code}`));
    });
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /^(\d+)\n/.exec(out);
      if (m !== null) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
  });
});

afterAll(async () => {
  if (py !== null && py.exitCode === null) {
    const p = py;
    await new Promise<void>((resolve) => {
      p.once('exit', () => resolve());
      p.kill('SIGKILL');
    });
  }
  if (dir !== '') await rm(dir, { recursive: true, force: true });
});

const text = (b: unknown) => (b instanceof Uint8Array ? Buffer.from(b).toString('utf8') : String(b));

/** sha256 and length of what a Form produces, read in 64 KiB pieces (never buffered whole). */
async function digestForm(form: Form): Promise<{ hex: string; size: number }> {
  const h = createHash('sha256');
  const buf = new Uint8Array(64 * 1024);
  let size = 0;
  for (;;) {
    const n = await form.read(buf);
    if (n === 0) break;
    h.update(buf.subarray(0, n));
    size += n;
  }
  return { hex: h.digest('hex'), size };
}

describe('50 MiB streamed Form upload', () => {
  it("to Python's http.server: the raw body hashes the same as the Form's bytes, memory stays flat", async () => {
    const client = new Client();
    onCleanup(() => client.close());
    const form = new Form([['f', createReadStream(filePath)]]);

    // Resident memory, sampled every 5 ms with no forced GC: what a user's process sees. The form
    // reads the file straight into the client's send buffer (no per-chunk allocation), so
    // RSS stays flat; before that, each 64 KiB read left garbage that RSS carried until a GC.
    const baseline = process.memoryUsage().rss;
    let peak = baseline;
    const timer = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 5);
    let res;
    try {
      res = await client.post(`http://127.0.0.1:${pyPort}/upload`, { body: form });
    } finally {
      clearInterval(timer);
    }
    peak = Math.max(peak, process.memoryUsage().rss);
    expect(res.status).toBe(200);
    const [hex, count, ...ct] = text(res.body).split(' ');
    expect(ct.join(' ')).toBe(contentType(form));

    const expected = await digestForm(new Form([['f', createReadStream(filePath)]], { boundary: form.boundary }));
    expect(expected.size).toBeGreaterThan(SIZE);
    expect(Number(count)).toBe(expected.size);
    expect(hex).toBe(expected.hex);
    // Nothing buffered the 50 MiB, and nothing churned: resident memory grew by < 10 MiB.
    expect(peak - baseline).toBeLessThan(10 * MiB);
  });

  it("to the project's server: parseMultipartForm gets the file part whole", async () => {
    const { port, errors } = await startServer((req) => {
      const parts = parseMultipartForm(req);
      if (parts === undefined) return new Response(400, 'not multipart');
      return new Response(200, JSON.stringify(parts.map((p) => ({ name: p.name, filename: p.filename, size: p.data.length, sha256: createHash('sha256').update(p.data).digest('hex') }))));
    });
    const client = new Client();
    onCleanup(() => client.close());
    const res = await client.post(`http://127.0.0.1:${port}/up`, { body: new Form([['f', createReadStream(filePath)]]) });
    expect(errors).toEqual([]);
    expect(res.status).toBe(200);
    expect(JSON.parse(text(res.body))).toEqual([{ name: 'f', filename: 'big.bin', size: SIZE, sha256: fileDigest }]);
  });
});
