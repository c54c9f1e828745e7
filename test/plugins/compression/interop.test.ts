/**
 * Real decoders against the compression plugin: curl `--compressed` (gzip and br), switchyard's
 * own client with the decompression plugin (JSON, and SSE events one by one), and headless
 * Chromium loading a page, a JSON resource and an EventSource feed.
 */
import fs from 'node:fs';
import http2 from 'node:http2';
import path from 'node:path';
import zlib from 'node:zlib';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, createKernel, Response, type Request } from '../../../kernel/index.js';
import { SSEEvent, compression, decodedContentEncoding, fileServer, h2, h2c, presets, sseStream, type SSEStream } from '../../../plugins/index.js';
import { closeAfter, closeKernelAfter, destroyAfter, onCleanup } from '../../helpers/cleanup.js';
import { curlEnv, deferred, runCurl, startServer, waitFor, within } from '../../helpers/server.js';
import { compressedServer, jsonOf, siteDir } from './helpers.js';

const DATA = jsonOf(64 * 1024);
const jsonHandler = (): Response => new Response(200, DATA, { headers: { 'Content-Type': 'application/json' } });

describe('curl --compressed', () => {
  for (const coding of ['gzip', 'br']) {
    it(`asks for ${coding} only, gets it, and decodes the 64 KiB JSON`, async () => {
      const { port } = await compressedServer(jsonHandler);
      const dir = siteDir();
      const headers = path.join(dir, 'headers.txt');
      const r = await runCurl(['--compressed', '-H', `Accept-Encoding: ${coding}`, '-D', headers, `http://127.0.0.1:${port}/`], curlEnv());
      expect(r.code, r.stderr).toBe(0);
      const head = fs.readFileSync(headers, 'latin1');
      expect(head).toMatch(new RegExp(`^content-encoding: ${coding}\\r$`, 'im'));
      expect(head).toMatch(/^vary: Accept-Encoding\r$/im);
      expect(r.stdout.toString()).toBe(DATA);
    });
  }

  it('a stream of unknown length (SSE) decodes as it comes, and curl sees it end cleanly', async () => {
    const { port } = await compressedServer((req) =>
      sseStream(
        async (s) => {
          for (let i = 0; i < 3; i++) await s.write(new SSEEvent(`e${i}`));
        },
        { request: req },
      ),
    );
    const r = await runCurl(['--compressed', `http://127.0.0.1:${port}/`], curlEnv());
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.toString()).toBe('data: e0\n\ndata: e1\n\ndata: e2\n\n');
  });
});

describe("switchyard's client with the decompression plugin", () => {
  async function client(): Promise<Client> {
    const kernel = closeKernelAfter(await createKernel().register(presets.defaults).ready());
    return closeAfter(new Client({ kernel }));
  }

  it('gets the JSON br-encoded (its default Accept-Encoding offers gzip, deflate, br) and decodes it', async () => {
    const { port } = await compressedServer(jsonHandler);
    const res = await (await client()).get(`http://127.0.0.1:${port}/`);
    expect(decodedContentEncoding(res)).toBe('br');
    expect(Buffer.from(res.body as Uint8Array).toString()).toBe(DATA);
  });

  it('gets SSE events through gzip one by one (sseCallback)', async () => {
    const next = [deferred(), deferred()];
    const { port } = await compressedServer(
      (req) =>
        sseStream(
          async (s: SSEStream) => {
            await s.write(new SSEEvent('one'));
            await next[0]!.promise;
            await s.write(new SSEEvent('two'));
            await next[1]!.promise;
          },
          { request: req },
        ),
      { encodings: ['gzip'] },
    );
    const got: string[] = [];
    let coding: string | null = null;
    const call = (await client()).get(`http://127.0.0.1:${port}/`, {
      sseCallback: (ev, res) => {
        coding = decodedContentEncoding(res);
        got.push(ev.data);
      },
    });
    await within(
      waitFor(() => got.length === 1),
      3000,
      'the first event while the server waits',
    );
    next[0]!.resolve();
    await within(
      waitFor(() => got.length === 2),
      3000,
      'the second event',
    );
    next[1]!.resolve();
    await within(call, 3000, 'the end of the stream');
    expect(got).toEqual(['one', 'two']);
    expect(coding).toBe('gzip');
  });
});

describe('HTTP/2 (h2c, node:http2 client)', () => {
  it('compresses over HTTP/2 too, and flushes SSE events one by one', async () => {
    const kernel = closeKernelAfter(await createKernel().register([h2, h2c, compression]).ready());
    const next = deferred();
    const { port } = await startServer(
      (req) =>
        req.target === '/feed'
          ? sseStream(
              async (s) => {
                await s.write(new SSEEvent('first'));
                await next.promise;
                await s.write(new SSEEvent('second'));
              },
              { request: req },
            )
          : jsonHandler(),
      { kernel },
    );
    const session = destroyAfter(http2.connect(`http://127.0.0.1:${port}`));
    const json = await new Promise<{ headers: http2.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
      const st = session.request({ ':path': '/', 'accept-encoding': 'gzip' });
      let headers: http2.IncomingHttpHeaders = {};
      const chunks: Buffer[] = [];
      st.on('response', (h) => (headers = h));
      st.on('data', (c: Buffer) => chunks.push(c));
      st.on('end', () => resolve({ headers, body: Buffer.concat(chunks) }));
      st.on('error', reject);
    });
    expect(json.headers['content-encoding']).toBe('gzip');
    expect(json.headers.vary).toBe('Accept-Encoding');
    expect(zlib.gunzipSync(json.body).toString()).toBe(DATA);
    let text = '';
    await within(
      new Promise<void>((resolve, reject) => {
        const st = session.request({ ':path': '/feed', 'accept-encoding': 'br' });
        const dec = zlib.createBrotliDecompress();
        st.pipe(dec);
        dec.on('data', (c: Buffer) => {
          text += c.toString();
          if (text.includes('data: first\n\n')) next.resolve();
        });
        dec.on('end', resolve);
        dec.on('error', reject);
      }),
      5000,
      'both events, the second written after the first was decoded',
    );
    expect(text).toBe('data: first\n\ndata: second\n\n');
  });
});

describe('Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
  }, 30_000);
  afterAll(async () => {
    await browser?.close();
  });

  it('loads a compressed page, fetches compressed JSON and reads SSE events through it', async () => {
    const dir = siteDir({
      'index.html': `<!doctype html><meta charset="utf-8"><title>compressed</title><script>
window.events = [];
window.json = fetch('/data.json').then((r) => r.json()).then((v) => v.length);
const es = new EventSource('/feed');
es.onmessage = (e) => { window.events.push(e.data); if (window.events.length === 3) es.close(); };
</script><p>${'padding text to compress '.repeat(200)}</p>`,
    });
    const files = fileServer(dir);
    const seen: { path: string; encoding: string | null }[] = [];
    const { port } = await compressedServer(async (req: Request) => {
      if (req.target === '/feed') {
        return sseStream(
          async (s) => {
            for (let i = 0; i < 3; i++) await s.write(new SSEEvent(`tick ${i}`));
            // Open until the page closes it (the client going away cancels the stream).
            await new Promise<void>((resolve) => s.ctx.onCancel(() => resolve()));
          },
          { request: req },
        );
      }
      return files(req);
    });
    const context = await browser.newContext();
    onCleanup(() => context.close());
    const page = await context.newPage();
    page.on('response', (r) => {
      const url = new URL(r.url());
      if (url.pathname !== '/favicon.ico') seen.push({ path: url.pathname, encoding: r.headers()['content-encoding'] ?? null });
    });
    await page.goto(`http://127.0.0.1:${port}/`, { waitUntil: 'load' });
    expect(await page.evaluate(() => (globalThis as unknown as { json: Promise<number> }).json)).toBe(JSON.parse(DATA).length);
    await within(
      page.waitForFunction(() => (globalThis as unknown as { events: string[] }).events.length === 3),
      10_000,
      'three events in the page',
    );
    expect(await page.evaluate(() => (globalThis as unknown as { events: string[] }).events)).toEqual(['tick 0', 'tick 1', 'tick 2']);
    // What Chromium offers by default (gzip, deflate, br, zstd): br is this server's first choice.
    await waitFor(() => seen.length >= 3, 5000, 'three responses');
    expect(seen.sort((a, b) => a.path.localeCompare(b.path))).toEqual([
      { path: '/', encoding: 'br' },
      { path: '/data.json', encoding: 'br' },
      { path: '/feed', encoding: 'br' },
    ]);
    await page.close();
  }, 30_000);
});
