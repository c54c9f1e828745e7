/**
 * The heavy dependencies load on first use, not at import: a program that imports the
 * top-level entry, serves a request on the default preset and makes one call has loaded
 * neither the public suffix list (`tldts`), the MIME database (`mime-types`, `mime-db`), `ws`,
 * nor node's tls and zlib; the first Domain cookie, the first file typed by its name (a served file, a multipart
 * part), the first WebSocket and the first use of a disk cache store (`cacache`) load each, and each then works as before. Run in a fresh
 * process, since this one has loaded them all long ago.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runNode } from '../helpers/run-node.js';

const root = resolve(import.meta.dirname, '../..');
const url = (file: string): string => pathToFileURL(resolve(root, file)).href;

/** The child: prints one JSON line of what was loaded at each step, and what each first use gave. */
const PROGRAM = `
import { createRequire } from 'node:module';
const PACKAGES = ['tldts', 'mime-types', 'mime-db', 'ws', 'cacache'];
const cache = createRequire(import.meta.url).cache;
const loaded = () => PACKAGES.filter((p) => Object.keys(cache).some((f) => f.includes('/node_modules/' + p + '/')));
const HTTP = await import(${JSON.stringify(url('index.ts'))});
const server = await HTTP.serve(() => new HTTP.Response(200, 'hello'), { port: 0 });
const hello = await HTTP.get('http://127.0.0.1:' + server.port + '/');
const builtins = () => ['tls', 'zlib'].filter((m) => process.moduleLoadList.includes('NativeModule ' + m));
const out = { hello: hello.status, atStart: loaded(), builtinsAtStart: builtins() };

const P = await import(${JSON.stringify(url('plugins/index.ts'))});
const jar = new HTTP.Cookies.CookieJar();
const store = (domain) => P.storeCookie(jar, 'https', 'www.example.co.uk', '/', HTTP.Cookies.parseSetCookie('a=1; Domain=' + domain));
out.cookies = { suffix: store('co.uk'), registrable: store('example.co.uk') };
out.afterCookies = loaded();

const file = await HTTP.serveContent(new HTTP.Request('GET', '/page.html'), new TextEncoder().encode('<p>x</p>'), { name: 'page.html' });
out.served = HTTP.header(file, 'Content-Type');
out.part = P.detectContentType('{}', 'a.json');
out.afterMime = loaded();

const ws = await HTTP.WebSockets.listen(async (s) => { for await (const m of s) await HTTP.WebSockets.send(s, m); }, { port: 0 });
out.echo = await HTTP.WebSockets.open('ws://127.0.0.1:' + HTTP.WebSockets.serverAddr(ws).port, async (s) => {
  await HTTP.WebSockets.send(s, 'ping');
  return HTTP.WebSockets.receive(s);
});
out.afterWs = loaded();

const { mkdtempSync, rmSync } = await import('node:fs');
const dir = mkdtempSync((await import('node:os')).tmpdir() + '/lazy-');
const disk = new P.DiskStore(dir);
out.afterDiskImport = loaded();
out.diskEntries = (await disk.get('GET http://x/')).length;
out.afterDisk = loaded();
rmSync(dir, { recursive: true, force: true });
await ws.close();
await server.close();
HTTP.close(HTTP.getDefaultClient());
console.log(JSON.stringify(out));
`;

describe('start-up weight', () => {
  it('leaves the public suffix list, the MIME database and ws unloaded until their first use, which works', async () => {
    const run = await runNode(['--import', 'tsx', '--input-type=module', '-e', PROGRAM], root, 30_000);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const out = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
    expect(out.hello).toBe(200);
    expect(out.atStart, 'loaded by import, serve and one call').toEqual([]);
    // Imported as ES modules, built-ins load at once (tls with its whole root store as strings).
    expect(out.builtinsAtStart, 'built-ins loaded by import, serve and one call').toEqual([]);
    expect(out.cookies).toEqual({ suffix: false, registrable: true });
    expect(out.afterCookies).toEqual(['tldts']);
    expect(out.served).toBe('text/html; charset=utf-8');
    expect(out.part).toBe('application/json');
    expect(out.afterMime).toEqual(['tldts', 'mime-types', 'mime-db']);
    expect(out.echo).toBe('ping');
    expect(out.afterWs).toEqual(['tldts', 'mime-types', 'mime-db', 'ws']);
    expect(out.afterDiskImport, 'plugins imported, a disk store made, not used').toEqual(['tldts', 'mime-types', 'mime-db', 'ws']);
    expect(out.diskEntries).toBe(0);
    expect(out.afterDisk).toEqual(['tldts', 'mime-types', 'mime-db', 'ws', 'cacache']);
  }, 40_000);

  it('the command loads a subcommand only to run it: --version loads none, `ws --help` loads the ws one', async () => {
    const program = `
      import { Writable } from 'node:stream';
      const { main } = await import(${JSON.stringify(url('cli/main.ts'))});
      let text = '';
      const sink = new Writable({ write(c, _e, cb) { text += c; cb(); } });
      const io = { stdin: process.stdin, stdout: sink, stderr: sink, env: {}, waitForInterrupt: () => new Promise(() => {}) };
      // node:readline is the ws command's own import.
      const readline = () => process.moduleLoadList.includes('NativeModule readline');
      const version = await main(['--version'], io);
      const out = { version, text, afterVersion: readline() };
      out.wsHelp = await main(['ws', '--help'], io);
      out.afterWs = readline();
      console.log(JSON.stringify(out));
    `;
    const run = await runNode(['--import', 'tsx', '--input-type=module', '-e', program], root, 30_000);
    expect(run.stderr).toBe('');
    const out = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
    expect(out).toMatchObject({ version: 0, afterVersion: false, wsHelp: 0, afterWs: true });
    expect(out.text).toMatch(/^switchyard \d/);
  }, 40_000);
});
