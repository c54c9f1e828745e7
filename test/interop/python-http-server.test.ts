/**
 * The client against Python's standard library servers (Debian python3): `python3 -m
 * http.server` (HTTP/1.0 responses, connection closed after each) and a BaseHTTPRequestHandler
 * whose bodies carry no Content-Length and end when the server closes the connection.
 * Each is started by the test on a free port and stopped in afterAll.
 */
import { createHash, randomBytes } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Client, Request, StatusError, type AbstractBody, type Response } from '../../kernel/index.js';
import { cleanEnv, findBinary, startPeer, stopPeer, tempDir, waitListening, type Peer } from '../helpers/peers.js';

const PYTHON = (() => {
  try {
    return findBinary(['/usr/bin/python3'], 'python3');
  } catch {
    return 'python3';
  }
})();

let dir = '';
const peers: Peer[] = [];
let simple = '';
let closeDelimited = '';
const clients: Client[] = [];

const HELLO = 'hello from python\n';
const BINARY = randomBytes(3 * 1024 * 1024 + 5);

/** A handler that answers HTTP/1.0 with a body and no Content-Length: the close ends it. `/port` returns the client's source port. */
const CLOSE_DELIMITED = `
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class H(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.0'
    def log_message(self, *a):
        pass
    def do_GET(self):
        if self.path == '/port':
            body = str(self.client_address[1]).encode()
        elif self.path == '/big':
            body = b'0123456789abcdef' * 65536
        else:
            body = ('path=' + self.path).encode()
        self.send_response(200)
        self.send_header('Content-Type', 'text/plain')
        self.end_headers()
        self.wfile.write(body)
s = ThreadingHTTPServer(('127.0.0.1', 0), H)
print('PORT', s.server_address[1], flush=True)
s.serve_forever()
`;

function client(): Client {
  const c = new Client();
  clients.push(c);
  return c;
}

function text(res: Response): string {
  const b = res.body as Uint8Array;
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString();
}

/** Starts a python server that prints its port (on stdout); resolves to its origin. */
async function startPython(args: string[], portLine: RegExp): Promise<string> {
  const p = startPeer(PYTHON, args, { env: cleanEnv(), cwd: dir });
  peers.push(p);
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    const t = setTimeout(() => reject(new Error(`python did not report its port: ${out} ${p.stderr()}`)), 5000);
    p.child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = portLine.exec(out);
      if (m !== null) {
        clearTimeout(t);
        resolve(Number(m[1]));
      }
    });
    void p.exited.then((code) => reject(new Error(`python exited (${code}): ${p.stderr()}`)));
  });
  await waitListening(port, p);
  return `http://127.0.0.1:${port}`;
}

beforeAll(async () => {
  dir = await tempDir('swy-python-');
  await writeFile(join(dir, 'hello.txt'), HELLO);
  await writeFile(join(dir, 'data.bin'), BINARY);
  await writeFile(join(dir, 'close_delimited.py'), CLOSE_DELIMITED);
  simple = await startPython(['-u', '-m', 'http.server', '0', '--bind', '127.0.0.1', '--directory', dir], /port (\d+)/);
  closeDelimited = await startPython(['-u', join(dir, 'close_delimited.py')], /PORT (\d+)/);
});

afterAll(async () => {
  for (const p of peers.splice(0)) await stopPeer(p);
  if (dir !== '') await rm(dir, { recursive: true, force: true });
});

afterEach(() => {
  for (const c of clients.splice(0)) c.close();
});

describe('python3 -m http.server', () => {
  it('GET works; the HTTP/1.0 response is not kept alive', async () => {
    const c = client();
    const res = await c.get(`${simple}/hello.txt`);
    expect(res.status).toBe(200);
    expect(res.protoMinor).toBe(0);
    expect(res.headers.get('Server')).toMatch(/Python/);
    expect(text(res)).toBe(HELLO);
    expect(res.close).toBe(true);
    expect(c.transport.idleConnectionCount()).toBe(0);
    expect(c.transport.connectionCount()).toBe(0);
  });

  it('sequential GETs each succeed on a new connection', async () => {
    const c = client();
    for (let i = 0; i < 4; i++) {
      expect(text(await c.get(`${simple}/hello.txt`))).toBe(HELLO);
      expect(c.transport.idleConnectionCount()).toBe(0);
    }
  });

  it('a 3 MiB file arrives intact', async () => {
    const res = await client().get(`${simple}/data.bin`);
    const b = res.body as Uint8Array;
    expect(b.length).toBe(BINARY.length);
    expect(createHash('sha256').update(b).digest('hex')).toBe(createHash('sha256').update(BINARY).digest('hex'));
  });

  it('HEAD: the length, no body', async () => {
    const res = await client().head(`${simple}/data.bin`);
    expect(res.status).toBe(200);
    expect(res.headers.get('Content-Length')).toBe(String(BINARY.length));
    expect((res.body as Uint8Array).length).toBe(0);
  });

  it('the directory listing', async () => {
    const res = await client().get(`${simple}/`);
    expect(res.headers.get('Content-Type')).toMatch(/text\/html/);
    expect(text(res)).toContain('hello.txt');
    expect(text(res)).toContain('data.bin');
  });

  it('a 404 is a StatusError with the error page', async () => {
    let err: unknown;
    try {
      await client().get(`${simple}/missing.txt`);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(StatusError);
    expect((err as StatusError).status).toBe(404);
    expect(text((err as StatusError).response)).toMatch(/File not found/);
  });

  it('a POST is answered 501 (StatusError)', async () => {
    let err: unknown;
    try {
      await client().post(`${simple}/hello.txt`, { body: 'x' });
    } catch (e) {
      err = e;
    }
    expect((err as StatusError).status).toBe(501);
  });
});

describe('HTTP/1.0 bodies delimited by the close (BaseHTTPRequestHandler)', () => {
  it('GET reads the body to the close', async () => {
    const c = client();
    const res = await c.get(`${closeDelimited}/a/b?c=d`);
    expect(res.status).toBe(200);
    expect(res.protoMinor).toBe(0);
    expect(res.headers.has('Content-Length')).toBe(false);
    expect(text(res)).toBe('path=/a/b?c=d');
    expect(c.transport.connectionCount()).toBe(0);
  });

  it('the connection is not reused: each request comes from a new source port', async () => {
    const c = client();
    const ports = new Set<string>();
    for (let i = 0; i < 3; i++) ports.add(text(await c.get(`${closeDelimited}/port`)));
    expect(ports.size).toBe(3);
  });

  it('a 1 MiB close-delimited body, buffered and streamed through dispatch', async () => {
    const c = client();
    const expected = Buffer.from('0123456789abcdef'.repeat(65536));
    const res = await c.get(`${closeDelimited}/big`);
    expect(Buffer.compare(Buffer.from(res.body as Uint8Array), expected)).toBe(0);
    const req = Object.assign(new Request('GET', '/big'), { url: `${closeDelimited}/big` });
    const streamed = await c.dispatch(req);
    expect(streamed.contentLength).toBe(-1);
    const chunks: Uint8Array[] = [];
    for await (const ch of streamed.body as AbstractBody) chunks.push(ch);
    expect(Buffer.compare(Buffer.concat(chunks), expected)).toBe(0);
    expect(c.transport.connectionCount()).toBe(0);
  });
});
