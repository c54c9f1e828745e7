/**
 * The package as a user installs it: the sources type-check under `strict`, and the tsup
 * build produces the three entries of package.json "exports" with their declarations.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
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

  it('builds every exported entry with declarations', async () => {
    const out = await mkdtemp(join(tmpdir(), 'switchyard-build-'));
    try {
      await run(bin('tsup'), ['--out-dir', out], { cwd: root });
      const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
        exports: Record<string, { import: string; types: string }>;
      };
      for (const [entry, target] of Object.entries(pkg.exports)) {
        const js = join(out, target.import.replace(/^\.\/dist\//, ''));
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
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  }, 120_000);
});
