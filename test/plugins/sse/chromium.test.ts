/**
 * Headless Chromium's native EventSource against a page and a feed served by switchyard: events
 * arrive as written, named events and multi-line data, and the browser's own reconnect with
 * Last-Event-ID after the server's retry.
 */
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Response, type Request } from '../../../kernel/index.js';
import { SSEEvent, sseStream } from '../../../plugins/sse/index.js';
import { gate, startServer, within } from './helpers.js';

const PAGE = `<!doctype html><meta charset="utf-8"><title>sse</title><script>
window.got = [];
window.errors = 0;
const es = new EventSource('/feed');
es.onmessage = (e) => window.got.push({ type: e.type, data: e.data, id: e.lastEventId });
es.addEventListener('named', (e) => window.got.push({ type: e.type, data: e.data, id: e.lastEventId }));
es.onerror = () => { window.errors++; };
window.es = es;
</script>`;

/** What the page keeps on its global object (functions given to page.evaluate run in the page). */
interface PageGlobals {
  got: { type: string; data: string; id: string }[];
  errors: number;
  es: { close(): void };
}

let browser: Browser;

beforeAll(async () => {
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
});

afterAll(async () => {
  await browser?.close();
});

describe('Chromium EventSource', () => {
  it('receives events as written, named and multi-line, and reconnects with Last-Event-ID', async () => {
    const g = gate();
    const feeds: (string | undefined)[] = [];
    const handler = (req: Request): Response => {
      if (req.target === '/') return new Response(200, PAGE, { headers: { 'Content-Type': 'text/html; charset=utf-8' } });
      if (req.target !== '/feed') return new Response(404, '');
      const last = req.headers.get('Last-Event-ID');
      feeds.push(last);
      if (last === undefined) {
        return sseStream(
          async (s) => {
            await s.write(new SSEEvent('hello', { id: '1', retry: 100 }));
            // The browser must show the first event while the producer waits.
            await g.promise;
            await s.write(new SSEEvent('line 1\nline 2', { event: 'named', id: '2' }));
            // Ending the response makes EventSource reconnect after `retry`.
          },
          200,
          { request: req },
        );
      }
      return sseStream(
        async (s) => {
          await s.write(new SSEEvent(`resumed after ${last}`, { id: '3' }));
          await s.comment('idle');
          // Keep this connection open until the page closes it.
          await new Promise<void>((resolve) => s.ctx.onCancel(() => resolve()));
        },
        200,
        { request: req },
      );
    };
    const { port } = await startServer(handler);
    const page = await browser.newPage();
    try {
      await page.goto(`http://127.0.0.1:${port}/`);
      await within(
        page.waitForFunction(() => (globalThis as unknown as PageGlobals).got.length >= 1),
        10_000,
        'first event in the page',
      );
      const first = await page.evaluate(() => (globalThis as unknown as PageGlobals).got.slice());
      expect(first).toEqual([{ type: 'message', data: 'hello', id: '1' }]);
      g.open();
      await within(
        page.waitForFunction(() => (globalThis as unknown as PageGlobals).got.length >= 3),
        10_000,
        'the named event and the resumed one',
      );
      const got = await page.evaluate(() => (globalThis as unknown as PageGlobals).got.slice());
      expect(got).toEqual([
        { type: 'message', data: 'hello', id: '1' },
        { type: 'named', data: 'line 1\nline 2', id: '2' },
        { type: 'message', data: 'resumed after 2', id: '3' },
      ]);
      expect(feeds).toEqual([undefined, '2']);
      expect(await page.evaluate(() => (globalThis as unknown as PageGlobals).errors)).toBe(1);
      await page.evaluate(() => (globalThis as unknown as PageGlobals).es.close());
    } finally {
      await page.close();
    }
  }, 30_000);
});
