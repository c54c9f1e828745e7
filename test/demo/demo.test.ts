/**
 * The demo behind `npm start`, driven end to end in headless Chromium (playwright-core with
 * Debian's /usr/bin/chromium): the router API renders, SSE events arrive through the browser's
 * EventSource, a chat message round-trips through the browser's WebSocket with
 * permessage-deflate, a multipart upload shows its parts, a Range request gets 206. A
 * screenshot goes to test/artifacts/demo.png (not committed). What a first visit meets: no
 * console error or failed request (the favicon included), cards that fit a 420 px screen,
 * the protocol the page came over (HTTP/1.1 on the plain port, h2 over TLS), and the
 * WebSocket's upgrade in the access log while the chat is open. The demo runs as its own
 * process, exactly as `npm start` runs it, on free ports, and must exit 0 on SIGTERM.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
let demo: ChildProcess;
let output = '';
let base = '';
let secureBase = '';
let browser: Browser;
/** Called with each piece of the demo's output (stdout and stderr). */
const outputWatchers = new Set<() => void>();

/** Resolves once the demo's output from offset `from` on matches `re`; rejects after `ms` with the output so far. */
function outputMatching(re: RegExp, from = 0, ms = 10_000): Promise<void> {
  if (re.test(output.slice(from))) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const check = (): void => {
      if (!re.test(output.slice(from))) return;
      clearTimeout(timer);
      outputWatchers.delete(check);
      resolve();
    };
    const timer = setTimeout(() => {
      outputWatchers.delete(check);
      reject(new Error(`the demo's output never matched ${re}:\n${output}`));
    }, ms);
    outputWatchers.add(check);
  });
}

/** What went wrong in a page: console errors, uncaught exceptions, failed requests, 4xx/5xx answers. */
function problemsOf(page: Page): string[] {
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console error: ${m.text()} (${m.location().url})`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.method()} ${r.url()} ${r.failure()?.errorText ?? ''}`));
  page.on('response', (r) => {
    if (r.status() >= 400) problems.push(`${r.status()} for ${r.request().method()} ${r.url()}`);
  });
  return problems;
}

beforeAll(async () => {
  demo = spawn(process.execPath, ['--import', 'tsx', 'examples/demo/server.ts'], {
    cwd: root,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  demo.stderr!.on('data', (d: Buffer) => {
    output += d.toString();
    for (const w of outputWatchers) w();
  });
  demo.stdout!.on('data', (d: Buffer) => {
    output += d.toString();
    for (const w of outputWatchers) w();
  });
  [base, secureBase] = await new Promise<[string, string]>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the demo printed no URLs:\n${output}`)), 15_000);
    demo.once('exit', (code) => reject(new Error(`the demo exited with ${code}:\n${output}`)));
    demo.stdout!.on('data', () => {
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

describe('what a first visit meets', () => {
  it('no console error, uncaught exception or failed request while the page loads and is used (the favicon included)', async () => {
    // A context of its own: Chromium remembers a favicon that failed for the rest of a profile.
    const context = await browser.newContext();
    const page = await context.newPage();
    const problems = problemsOf(page);
    const from = output.length;
    try {
      await page.goto(`${base}/`, { waitUntil: 'load' });
      // The browser asks for a favicon (the page's, else /favicon.ico); the access log shows
      // it, as the page's events do not.
      await outputMatching(/GET \/favicon\.\w+ \d{3} /, from);
      await page.click('#api-form button');
      await page.waitForFunction(`document.getElementById('api-result').textContent.startsWith('200')`);
      await page.waitForFunction(`document.getElementById('chat-log').textContent.includes('connected, extensions')`);
      await page.fill('#chat-input', 'no errors here');
      await page.click('#chat-form button');
      await page.waitForFunction(`[...document.querySelectorAll('#chat-log li')].some((li) => li.textContent === 'no errors here')`);
      await page.click('#range-button');
      await page.waitForFunction(`document.getElementById('range-result').textContent.startsWith('206')`);
      await page.waitForFunction(`document.querySelectorAll('#sse-list li').length >= 1`, undefined, { timeout: 10_000 });
      await page.waitForFunction(`document.getElementById('protocol').textContent !== ''`);
      expect(problems).toEqual([]);
      const failed = output
        .slice(from)
        .split('\n')
        .filter((line) => /\(access\): \S+ \S+ [45]\d\d /.test(line));
      expect(failed).toEqual([]);
    } finally {
      await context.close();
    }
  }, 30_000);

  for (const width of [420, 1280]) {
    it(`the cards fit a ${width} px wide screen: no horizontal scroll, every card inside the viewport`, async () => {
      const context = await browser.newContext({ viewport: { width, height: 800 } });
      try {
        const page = await context.newPage();
        await page.goto(`${base}/`);
        // Long lines arrive: JSON, event lines, a long chat message, the hex of the Range answer.
        await page.click('#api-form button');
        await page.waitForFunction(`document.getElementById('api-result').textContent.startsWith('200')`);
        await page.waitForFunction(`document.getElementById('chat-log').textContent.includes('connected, extensions')`);
        await page.fill('#chat-input', 'https://example.org/a/very/long/url/without/any/space/in/it/that/must/wrap/somewhere/anyway?x=1');
        await page.click('#chat-form button');
        await page.waitForFunction(`[...document.querySelectorAll('#chat-log li')].some((li) => li.textContent.startsWith('https://'))`);
        await page.click('#range-button');
        await page.waitForFunction(`document.getElementById('range-result').textContent.startsWith('206')`);
        await page.waitForFunction(`document.querySelectorAll('#sse-list li').length >= 1`, undefined, { timeout: 10_000 });
        await page.screenshot({ path: `/tmp/switchyard-demo-${width}.png`, fullPage: true });
        expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(width);
        const cards = await page.$$eval('main > section', (els) =>
          els.map((e) => {
            const r = e.getBoundingClientRect();
            return { id: e.id, left: r.left, right: r.right };
          }),
        );
        expect(cards).toHaveLength(5);
        for (const c of cards) {
          expect(c.left, c.id).toBeGreaterThanOrEqual(0);
          expect(c.right, c.id).toBeLessThanOrEqual(width);
        }
        // Long lines wrap inside the output boxes instead of scrolling sideways.
        const wide = await page.$$eval('.out', (els) => els.filter((e) => e.scrollWidth > e.clientWidth).map((e) => e.id));
        expect(wide).toEqual([]);
      } finally {
        await context.close();
      }
    }, 30_000);
  }

  it('shows the protocol the page came over: HTTP/1.1 on the plain port, HTTP/2 (h2) over TLS', async () => {
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    try {
      const page = await context.newPage();
      await page.goto(`${base}/`);
      await page.waitForFunction(`document.getElementById('protocol').textContent.startsWith('Loaded over')`, undefined, { timeout: 5000 });
      expect(await page.textContent('#protocol')).toMatch(/^Loaded over HTTP\/1\.1\b/);
      const secure = await context.newPage();
      await secure.goto(`${secureBase}/`);
      await secure.waitForFunction(`document.getElementById('protocol').textContent.startsWith('Loaded over')`, undefined, { timeout: 5000 });
      expect(await secure.textContent('#protocol')).toMatch(/^Loaded over HTTP\/2 \(h2\)/);
      // The WebSocket still works from the h2 page (on an HTTP/1.1 connection of its own).
      await secure.waitForFunction(`document.getElementById('chat-log').textContent.includes('connected, extensions')`);
    } finally {
      await context.close();
    }
  });

  it('the access log has the WebSocket upgrade (GET /chat 101) while the chat is still open', async () => {
    const page = await browser.newPage();
    const from = output.length;
    try {
      await page.goto(`${base}/`);
      await page.waitForFunction(`document.getElementById('chat-log').textContent.includes('connected, extensions')`);
      await outputMatching(/INFO \(access\): GET \/chat 101 [\d.]+ms .*peer=127\.0\.0\.1:\d+/, from);
      // Still open: the line came with the switch, not at the end of the session.
      expect(await page.evaluate(`document.getElementById('chat-log').textContent.includes('(closed')`)).toBe(false);
    } finally {
      await page.close();
    }
  });
});
