/**
 * Headless Chromium loads a small static site from fileServer (HTML, CSS, JS, an image), then
 * reloads it: with `Cache-Control: no-cache` Chromium revalidates every resource, and each is
 * answered 304. The statuses are read from Chromium's own network log (CDP
 * `Network.responseReceivedExtraInfo`: the status as received), and cross-checked against
 * what the server saw.
 */
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Request, type RequestHandler } from '../../../kernel/index.js';
import { fileServer } from '../../../plugins/fileserver/index.js';
import { onCleanup, startServer, waitFor } from '../../helpers/server.js';
import { makeSite, type Site } from './fixture.js';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const RESOURCES = ['/', '/style.css', '/app.js', '/logo.png'];

let site: Site;
let browser: Browser;
beforeAll(async () => {
  site = makeSite();
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
}, 30_000);
afterAll(async () => {
  await browser?.close();
  site?.remove();
});

interface Seen {
  path: string;
  status: number;
}

describe('Chromium', () => {
  it.each([
    ['weak_stat ETag', { etag: 'weak_stat' as const, cacheControl: 'no-cache' }, 'If-None-Match'],
    ['Last-Modified only', { cacheControl: 'no-cache' }, 'If-Modified-Since'],
  ])(
    'loads the site, then a reload is answered 304 for every resource (%s)',
    async (_name, options, conditional) => {
      const files = fileServer(site.root, options);
      const server: { path: string; status: number; conditional: boolean }[] = [];
      const handler: RequestHandler = async (req: Request) => {
        const res = await files(req);
        if (!req.target.startsWith('/favicon')) server.push({ path: req.target, status: res.status, conditional: req.headers.has(conditional) });
        return res;
      };
      const { port } = await startServer(handler);
      const origin = `http://127.0.0.1:${port}`;

      const context = await browser.newContext();
      onCleanup(() => context.close());
      const page = await context.newPage();
      const cdp = await context.newCDPSession(page);
      await cdp.send('Network.enable');
      // Network.responseReceived reports a revalidated navigation with the cached 200, so the
      // status as received off the wire comes from Network.responseReceivedExtraInfo. Its URL comes
      // from Network.requestWillBeSent; the two arrive in either order, so they are joined later.
      const urls = new Map<string, string>();
      let wire = new Map<string, number>();
      cdp.on('Network.requestWillBeSent', (e) => {
        urls.set(e.requestId, e.request.url);
      });
      cdp.on('Network.responseReceivedExtraInfo', (e) => {
        wire.set(e.requestId, e.statusCode);
      });
      const log = (): Seen[] => {
        const out: Seen[] = [];
        for (const [id, status] of wire) {
          const u = urls.get(id);
          if (u === undefined) continue;
          const url = new URL(u);
          if (url.origin === origin && url.pathname !== '/favicon.ico') out.push({ path: url.pathname, status });
        }
        return out;
      };
      const complete = (): boolean => RESOURCES.every((p) => log().some((s) => s.path === p));

      await page.goto(`${origin}/`, { waitUntil: 'load' });
      await waitFor(complete, 5000, "Chromium's log of all four resources");
      expect(await page.title()).toBe('loaded'); // app.js ran
      expect(await page.evaluate('getComputedStyle(document.body).color')).toBe('rgb(17, 34, 51)'); // style.css applied
      expect(await page.evaluate('document.querySelector("img").naturalWidth')).toBe(1); // logo.png decoded
      expect(
        log()
          .map((s) => s.path)
          .sort(),
      ).toEqual([...RESOURCES].sort());
      expect(log().every((s) => s.status === 200)).toBe(true);

      wire = new Map();
      server.length = 0;
      await page.reload({ waitUntil: 'load' });
      expect(await page.title()).toBe('loaded');
      // Extra-info events may trail the load event.
      await waitFor(complete, 5000, "Chromium's log of all four resources");
      const byPath = new Map(log().map((s) => [s.path, s.status]));
      for (const p of RESOURCES) expect(byPath.get(p), `Chromium's status for ${p} on reload`).toBe(304);
      // The server agrees: each was a conditional request it answered 304.
      for (const p of RESOURCES) {
        const hit = server.find((s) => s.path === p);
        expect(hit, `server saw ${p}`).toBeDefined();
        expect([hit!.status, hit!.conditional], p).toEqual([304, true]);
      }
    },
    30_000,
  );
});
