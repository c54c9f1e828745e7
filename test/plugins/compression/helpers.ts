/**
 * Helpers of the compression tests: a kernel with the plugin, servers on it, and a raw
 * `node:http` GET that returns the head and the bytes as sent (nothing decoded).
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { closeKernelAfter, destroyAfter, onCleanup } from '../../helpers/cleanup.js';
import { startServer, startStreamServer, type Started } from '../../helpers/server.js';
import { createKernel, type Kernel, type RequestHandler, type StreamHandler } from '../../../kernel/index.js';
import { compression, type CompressionOptions } from '../../../plugins/index.js';

/** A booted kernel with the compression plugin, closed after the test. */
export async function compressionKernel(options: CompressionOptions = {}): Promise<Kernel> {
  return closeKernelAfter(await createKernel().register(compression, options).ready());
}

/** `serve(handler)` on a kernel with the compression plugin. */
export async function compressedServer(handler: RequestHandler, options: CompressionOptions = {}): Promise<Started> {
  return startServer(handler, { kernel: await compressionKernel(options) });
}

/** `listen(handler)` on a kernel with the compression plugin. */
export async function compressedStreamServer(handler: StreamHandler, options: CompressionOptions = {}): Promise<Started> {
  return startStreamServer(handler, { kernel: await compressionKernel(options) });
}

/** A response as received: status, headers (lowercase names, joined), the raw body bytes. */
export interface Raw {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** A request with node:http (no decoding, a fresh connection), resolved with the bytes as sent. */
export function raw(port: number, path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('socket', (s) => destroyAfter(s));
    req.on('error', reject);
    req.end();
  });
}

/** A JSON document of about `bytes` bytes, compressible as real JSON is. */
export function jsonOf(bytes: number): string {
  const items: unknown[] = [];
  let size = 2;
  for (let i = 0; size < bytes; i++) {
    const item = { id: i, name: `item ${i}`, tags: ['alpha', 'beta', i % 7 === 0 ? 'gamma' : 'delta'], price: (i * 37) % 1000, active: i % 3 !== 0 };
    size += JSON.stringify(item).length + 1;
    items.push(item);
  }
  return JSON.stringify(items);
}

/**
 * A directory of files removed after the test: `data.json` (about 64 KiB of JSON), `small.json`
 * (`{}`), `page.html`, `logo.png` (PNG-typed bytes), and each name in `extra` with its content.
 */
export function siteDir(extra: Record<string, string | Uint8Array> = {}): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'swy-compress-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  const files: Record<string, string | Uint8Array> = {
    'data.json': jsonOf(64 * 1024),
    'small.json': '{}',
    'page.html': `<!doctype html><title>compressed</title><pre id="out">${'<p>hello</p>\n'.repeat(300)}</pre>`,
    'logo.png': Buffer.alloc(4096, 7),
    ...extra,
  };
  for (const [name, content] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), content);
  return dir;
}
