/**
 * The package as a user installs it: the sources type-check under `strict`, and the tsup
 * build produces every entry of package.json "exports" with their declarations.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = resolve(import.meta.dirname, '../..');
const bin = (name: string) => join(root, 'node_modules/.bin', name);

describe('project', () => {
  it('type-checks with strict settings', async () => {
    const r = await run(bin('tsc'), ['--noEmit', '-p', root], { cwd: root }).catch((e: { stdout: string }) => e);
    expect(r.stdout).toBe('');
  }, 120_000);

  it('builds every exported entry with declarations, and a consumer of them gets option types checked', async () => {
    // Inside the project (node_modules/.cache): the built declarations import tapable, avvio and
    // node's types, which resolve from the project's node_modules as a user's install would.
    const cache = join(root, 'node_modules', '.cache');
    await mkdir(cache, { recursive: true });
    const out = await mkdtemp(join(cache, 'switchyard-build-'));
    try {
      await run(bin('tsup'), ['--out-dir', out], { cwd: root });
      // ASCII only: one other character makes V8 hold a file's whole source as UTF-16, twice its size.
      const js = readdirSync(out, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.js'));
      expect(js.length).toBeGreaterThan(0);
      for (const f of js) expect(readFileSync(join(out, f), 'utf8').match(/[^\x00-\x7f].{0,40}/)?.[0], f).toBeUndefined();
      // Importing the top-level entry in a plain node loads no CommonJS through the ES-module
      // interop (whose export-name lexer V8 optimizes on a background thread, ~3 MiB of RSS),
      // and no built-in that only some programs need.
      const probe = `await import(${JSON.stringify(pathToFileURL(join(out, 'index.js')).href)}); console.log(JSON.stringify(process.moduleLoadList.filter((m) => /^NativeModule (internal\\/deps\\/cjs-module-lexer\\/.*|tls|crypto|zlib)$/.test(m))));`;
      // As in the package, whose package.json says the files are ES modules.
      await writeFile(join(out, 'package.json'), '{ "type": "module" }\n');
      const loaded = await run(process.execPath, ['--input-type=module', '-e', probe], { cwd: out });
      expect(JSON.parse(loaded.stdout) as string[]).toEqual([]);
      const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
        exports: Record<string, { default: string; types: string }>;
      };
      for (const [entry, target] of Object.entries(pkg.exports)) {
        const js = join(out, target.default.replace(/^\.\/dist\//, ''));
        const dts = join(out, target.types.replace(/^\.\/dist\//, ''));
        expect(existsSync(js), `${entry} → ${js}`).toBe(true);
        expect(existsSync(dts), `${entry} → ${dts}`).toBe(true);
        const mod = (await import(pathToFileURL(js).href)) as Record<string, unknown>;
        expect(Object.keys(mod).length, `${entry} exports names`).toBeGreaterThan(0);
      }
      const top = (await import(pathToFileURL(join(out, 'index.js')).href)) as Record<string, unknown>;
      for (const name of ['Headers', 'Request', 'Response', 'RequestContext', 'ParseError', 'ArgumentError', 'createKernel', 'readRequest']) {
        expect(top[name], name).toBeDefined();
      }
      // A consumer compiled against the built declarations (skipLibCheck off): plugin options
      // are typed through the top-level entry, and a misspelt or mistyped option is an error
      // (each @ts-expect-error below must meet one, or tsc reports it unused).
      const consumer = join(out, 'consumer');
      await mkdir(consumer);
      await writeFile(
        join(consumer, 'use.ts'),
        [
          "import * as HTTP from '../index.js';",
          "import { createKernel } from '../kernel/index.js';",
          'export async function use(): Promise<void> {',
          "  await HTTP.get('http://x/', { redirectLimit: 3, decompress: true, requestTimeout: 5, retries: 2 });",
          "  await HTTP.get('http://x/', { headers: { 'X-Extra': '1' } });",
          '  // @ts-expect-error an object in the options position is options: headers go in headers:',
          "  await HTTP.get('http://x/', { 'X-Extra': '1' });",
          '  // @ts-expect-error not an option (requestTimeout)',
          "  await HTTP.get('http://x/', { timeout: 1000 });",
          "  await HTTP.post('http://x/', { 'Content-Type': 'text/plain' }, 'body', { statusException: false });",
          '  const c = new HTTP.Client({ redirectLimit: 2, statusException: false, http2PriorKnowledge: true, kernel: await createKernel().ready() });',
          "  await c.get('http://x/', { cookiejar: new HTTP.Cookies.CookieJar() });",
          '  // @ts-expect-error redirectLimit is a number',
          "  await HTTP.get('http://x/', { redirectLimit: 'three' });",
          '  // @ts-expect-error not a client option',
          '  new HTTP.Client({ redirectLimt: 2 });',
          '  // @ts-expect-error retries is a number',
          "  await c.get('http://x/', { retries: 'many' });",
          '}',
          '',
        ].join('\n'),
      );
      await writeFile(
        join(consumer, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: { strict: true, module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', noEmit: true, skipLibCheck: false, types: ['node'] },
          files: ['use.ts'],
        }),
      );
      const tsc = await run(bin('tsc'), ['-p', consumer], { cwd: consumer }).catch((e: { stdout: string }) => e);
      expect(tsc.stdout).toBe('');
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  }, 120_000);
});
