/**
 * The library's sources read `Buffer`, `process` and `performance` from their modules. In an ES
 * module these globals are accessors on globalThis: each read is a getter call (a global IC
 * miss), about 13 ns for `Buffer.byteLength` against a plain module binding, on paths that run
 * several times per request.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');

const GLOBALS: { name: string; module: string }[] = [
  { name: 'Buffer', module: 'node:buffer' },
  { name: 'process', module: 'node:process' },
  { name: 'performance', module: 'node:perf_hooks' },
];

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...sources(p));
    else if (e.name.endsWith('.ts')) out.push(p);
  }
  return out;
}

/** The code of a file without comments and string contents (so prose naming a global does not count). */
function codeOf(src: string): string {
  return src
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/\/\/[^\n]*/g, '')
    .replace(/'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`/g, '""');
}

/** Reads of `name` as a value: `name.x` or `name(`, not `obj.name` nor a method named so. */
function readsGlobal(code: string, name: string): boolean {
  const re = new RegExp(`(?<![\\w.$])${name}\\s*[.(]`, 'g');
  for (const m of code.matchAll(re)) {
    const before = code.slice(Math.max(0, m.index - 30), m.index);
    // A method declaration `private process(…)` or a call `this.process(…)` is not the global.
    if (/(private|public|protected|static|async|get|set)\s+$/.test(before)) continue;
    return true;
  }
  return false;
}

describe('project sources', () => {
  it('import Buffer, process and performance instead of reading the globals', () => {
    const offenders: string[] = [];
    for (const file of [...sources(join(root, 'kernel')), ...sources(join(root, 'plugins'))]) {
      const src = readFileSync(file, 'utf8');
      const code = codeOf(src);
      for (const g of GLOBALS) {
        if (!readsGlobal(code, g.name)) continue;
        const imported = new RegExp(`^import[^;]*\\b${g.name}\\b[^;]*from '${g.module}'`, 'm').test(src);
        if (!imported) offenders.push(`${relative(root, file)}: ${g.name} (import it from '${g.module}')`);
      }
    }
    expect(offenders).toEqual([]);
  });

  it('the check sees a global read and ignores prose and methods', () => {
    expect(readsGlobal(codeOf('const n = Buffer.byteLength(s);'), 'Buffer')).toBe(true);
    expect(readsGlobal(codeOf('process.nextTick(f);'), 'process')).toBe(true);
    expect(readsGlobal(codeOf('// Buffer.from is\n/* process.exit */ const s = "performance.now()";'), 'Buffer')).toBe(false);
    expect(readsGlobal(codeOf('class A { private process(b: Buffer) { this.process(b); } }'), 'process')).toBe(false);
  });
});
