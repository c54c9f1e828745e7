/**
 * The demo behind `npm start`, driven end to end in headless Chromium (playwright-core with
 * Debian's /usr/bin/chromium): the router API renders, SSE events arrive through the browser's
 * EventSource, a chat message round-trips through the browser's WebSocket with
 * permessage-deflate, a multipart upload shows its parts, a Range request gets 206. A
 * screenshot goes to test/artifacts/demo.png (not committed). The demo runs as its own
 * process, exactly as `npm start` runs it, on free ports, and must exit 0 on SIGTERM.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
let demo: ChildProcess;
let output = '';
let base = '';
let secureBase = '';
let browser: Browser;

beforeAll(async () => {
  demo = spawn(process.execPath, ['--import', 'tsx', 'examples/demo/server.ts'], {
    cwd: root,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  demo.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  [base, secureBase] = await new Promise<[string, string]>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the demo printed no URLs:\n${output}`)), 15_000);
    demo.once('exit', (code) => reject(new Error(`the demo exited with ${code}:\n${output}`)));
    demo.stdout!.on('data', (d: Buffer) => {
      output += d.toString();
      const plain = /http:\/\/(127\.0\.0\.1:\d+)\//.exec(output);
      const secure = /https:\/\/(127\.0\.0\.1:\d+)\//.exec(output);
      if (plain !== null && secure !== null) {
        clearTimeout(timer);
        resolve([`http://${plain[1]}`, `https://${secure[1]}`]);
      }
    });
  });
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}, 30_000);

afterAll(async () => {
  await browser?.close();
  if (demo !== undefined && demo.exitCode === null) {
    const exited = new Promise<number | null>((resolve) => demo.once('exit', (code) => resolve(code)));
    demo.kill('SIGTERM');
    const code = await exited;
    expect(code, `the demo's graceful close; its output:\n${output}`).toBe(0);
  }
});

describe('the demo page in Chromium', () => {
  it('shows the router API, SSE, the WebSocket chat, an upload and a Range download', async () => {
    const page = await browser.newPage();
    try {
      await page.goto(`${base}/`);
      expect(await page.title()).toBe('switchyard demo');

      // Router API.
      await page.fill('#api-id', '3');
      await page.click('#api-form button');
      await page.waitForFunction(`document.getElementById('api-result').textContent.includes('buffer stop')`);
      expect(await page.textContent('#api-result')).toMatch(/^200 /);

      // At least three server-sent events.
      await page.waitForFunction(`document.querySelectorAll('#sse-list li').length >= 3`, undefined, { timeout: 10_000 });
      expect(await page.textContent('#sse-list')).toMatch(/#3 \d{4}-\d\d-\d\dT/);

      // The chat: connected with permessage-deflate, and a message comes back.
      await page.waitForFunction(`document.getElementById('chat-log').textContent.includes('connected, extensions')`);
      expect(await page.textContent('#chat-log')).toContain('permessage-deflate');
      await page.fill('#chat-input', 'hello from chromium');
      await page.click('#chat-form button');
      await page.waitForFunction(`[...document.querySelectorAll('#chat-log li')].some((li) => li.textContent === 'hello from chromium')`);

      // Multipart upload, answered with the parsed parts.
      await page.fill('#upload-note', 'a note');
      await page.setInputFiles('#upload-file', { name: 'hello.txt', mimeType: 'text/plain', buffer: Buffer.from('file body') });
      await page.click('#upload-form button');
      await page.waitForFunction(`document.getElementById('upload-result').textContent.includes('hello.txt')`);
      const upload = await page.textContent('#upload-result');
      expect(upload).toMatch(/^200\n/);
      const parts = JSON.parse(upload!.slice(4)) as { name: string; filename: string | null; size: number; preview?: string }[];
      expect(parts).toEqual([
        { name: 'note', filename: null, contentType: 'text/plain', size: 6, preview: 'a note' },
        { name: 'file', filename: 'hello.txt', contentType: 'text/plain', size: 9 },
      ]);

      // A Range request for 16 bytes.
      await page.click('#range-button');
      await page.waitForFunction(`document.getElementById('range-result').textContent.startsWith('206')`);
      expect(await page.textContent('#range-result')).toContain('Content-Range: bytes 0-15/1048576');

      await mkdir(path.join(root, 'test/artifacts'), { recursive: true });
      await page.screenshot({ path: path.join(root, 'test/artifacts/demo.png'), fullPage: true });
    } finally {
      await page.close();
    }
    // The access log went to the terminal.
    expect(output).toMatch(/INFO \(access\): GET \/api\/items\/3 200/);
  }, 40_000);

  it('serves the same page over HTTPS', async () => {
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    try {
      const page = await context.newPage();
      const res = await page.goto(`${secureBase}/`);
      expect(res?.status()).toBe(200);
      expect(await page.title()).toBe('switchyard demo');
    } finally {
      await context.close();
    }
  });
});
