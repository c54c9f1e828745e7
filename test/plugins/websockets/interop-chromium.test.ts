/**
 * Interop with headless Chromium's native `WebSocket`: a page served by switchyard opens a
 * WebSocket to the same server (a stream handler that upgrades on `/ws`), echoes text and
 * binary messages up to 1 MiB, with and without permessage-deflate, and closes with a code.
 * Chromium is Debian's /usr/bin/chromium driven by playwright-core, started with the flags of
 * the environment notes (no background networking on this closed network). With the default
 * `checkOrigin`, a page opening a WebSocket to another origin is refused (403, the page sees
 * an error and 1006) and a page of the same origin is accepted.
 */
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKernel, listen, type Stream } from '../../../kernel/index.js';
import { WebSockets, websockets } from '../../../plugins/websockets/index.js';
import { trackServer, waitFor } from '../../helpers/websockets.js';

const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

const PAGE = `<!doctype html><meta charset="utf-8"><title>ws</title><script>
async function run() {
  const ws = new WebSocket('ws://' + location.host + '/ws', ['chat']);
  ws.binaryType = 'arraybuffer';
  const inbox = [];
  let wake = null;
  ws.onmessage = (e) => { inbox.push(e.data); if (wake) { const w = wake; wake = null; w(); } };
  const next = () => inbox.length ? Promise.resolve(inbox.shift()) : new Promise((r) => { wake = r; }).then(() => inbox.shift());
  const closed = new Promise((r) => { ws.onclose = (e) => r({ code: e.code, reason: e.reason, wasClean: e.wasClean }); });
  await new Promise((r, j) => { ws.onopen = r; ws.onerror = () => j(new Error('websocket error')); });
  const result = { protocol: ws.protocol, extensions: ws.extensions, echoes: [] };
  result.greeting = await next();
  for (const n of [1, 125, 126, 65536, 1048576]) {
    const text = 'é'.repeat(n);
    ws.send(text);
    result.echoes.push((await next()) === text);
    const bin = new Uint8Array(n).map((_, i) => (i * 7) & 255);
    ws.send(bin);
    const got = new Uint8Array(await next());
    result.echoes.push(got.length === n && got.every((v, i) => v === bin[i]));
  }
  ws.close(4100, 'from the page');
  result.close = await closed;
  return result;
}
</script>`;

/** Opens a WebSocket to `url`: did it open, its first message, the close code. */
const PROBE = `<!doctype html><meta charset="utf-8"><title>probe</title><script>
function probe(url) {
  return new Promise((resolve) => {
    const ws = new WebSocket(url);
    const r = { opened: false };
    ws.onopen = () => { r.opened = true; };
    ws.onmessage = (e) => { r.message = e.data; };
    ws.onclose = (e) => { r.code = e.code; resolve(r); };
  });
}
</script>`;

let browser: Browser;

beforeAll(async () => {
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: FLAGS, headless: true });
});

afterAll(async () => {
  await browser?.close();
});

describe('WebSockets interop: headless Chromium', () => {
  for (const compress of [false, true]) {
    it(`a page talks to the server that served it (compress ${compress})`, async () => {
      const serverSaw: { code: number | null; reason: string | null }[] = [];
      const kernel = await createKernel().register(websockets).ready();
      const server = await listen(
        async (stream) => {
          if (stream.message.target === '/ws') {
            await WebSockets.upgrade(
              stream,
              async (ws) => {
                await ws.send(`hello ${ws.subprotocol}`);
                try {
                  for await (const m of ws) await ws.send(m);
                } catch {
                  // 4100 is not a normal closure: iteration throws; the code is what we check.
                }
                serverSaw.push({ code: ws.closeCode, reason: ws.closeReason });
              },
              { compress, subprotocols: ['chat'], checkOrigin: true },
            );
            return;
          }
          stream.setHeader('Content-Type', 'text/html; charset=utf-8');
          await stream.write(PAGE);
        },
        { port: 0, kernel },
      );
      trackServer(server);
      const page = await browser.newPage();
      try {
        await page.goto(`http://127.0.0.1:${server.port}/`);
        const result = (await page.evaluate('run()')) as {
          protocol: string;
          extensions: string;
          greeting: string;
          echoes: boolean[];
          close: { code: number; reason: string; wasClean: boolean };
        };
        expect(result.protocol).toBe('chat');
        expect(result.extensions.startsWith('permessage-deflate')).toBe(compress);
        expect(result.greeting).toBe('hello chat');
        expect(result.echoes).toEqual(Array(10).fill(true));
        expect(result.close).toEqual({ code: 4100, reason: 'from the page', wasClean: true });
        await waitFor(() => serverSaw.length === 1, 3000, 'the server handler to end');
        expect(serverSaw).toEqual([{ code: 4100, reason: 'from the page' }]);
      } finally {
        await page.close();
      }
    });
  }

  it('default checkOrigin: a page of another origin is refused, a page of the same origin accepted', async () => {
    const kernel = await createKernel().register(websockets).ready();
    let sessions = 0;
    // Serves the probe page, and a WebSocket echo on /ws with the default options.
    const site = async (stream: Stream): Promise<void> => {
      if (stream.message.target === '/ws') {
        await WebSockets.upgrade(stream, async (ws) => {
          sessions++;
          await ws.send('welcome');
        });
        return;
      }
      stream.setHeader('Content-Type', 'text/html; charset=utf-8');
      await stream.write(PROBE);
    };
    const a = await listen(site, { port: 0, kernel });
    trackServer(a);
    const b = await listen(site, { port: 0, kernel });
    trackServer(b);
    const page = await browser.newPage();
    try {
      await page.goto(`http://127.0.0.1:${a.port}/`);
      // Another port is another origin; the browser sends the page's cookies all the same.
      expect(await page.evaluate(`probe('ws://127.0.0.1:${b.port}/ws')`)).toEqual({ opened: false, code: 1006 });
      expect(sessions).toBe(0);
      expect(await page.evaluate(`probe('ws://127.0.0.1:${a.port}/ws')`)).toEqual({ opened: true, message: 'welcome', code: 1000 });
      expect(sessions).toBe(1);
    } finally {
      await page.close();
    }
  });
});
