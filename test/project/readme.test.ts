/**
 * The code in the documentation runs as written. Every ```ts block of README.md and of
 * docs/*.md is written to its own file under `.scratch/doc-blocks/` (inside the repository)
 * and run as a process with `node --import tsx`; it must exit 0 on its own (so it closed what it
 * opened) with nothing on stderr. A line `console.log(…); // → text` (or `// → text` alone, for
 * a value printed on several lines) also requires `text` as a line of its output, so the
 * outputs the docs promise are checked too.
 *
 * The blocks import the package by its name (`switchyard`, `switchyard/kernel`,
 * `switchyard/protocol`, `switchyard/plugins`, `switchyard/opentelemetry`), as a user would. In a checkout that name does not resolve to the
 * sources (the package's exports point at `dist/`, which `npm run build` makes), so this test
 * rewrites those specifiers to the repository's `index.ts`, `kernel/index.ts`,
 * `kernel/protocol.ts` and `plugins/index.ts` before running a block. Nothing else in a block is changed.
 *
 * The blocks are also type-checked together, with the repository's compiler options (a
 * block that runs but would not compile in a user's TypeScript project fails here).
 *
 * The relative links of these pages (and of plugin-api.md and bench/README.md) must lead to
 * files that exist.
 *
 * A block that is deliberately not a whole program (a fragment, a type declaration) is fenced
 * as ```ts no-run and only counted: there are few, and each says why in its prose.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runNode } from '../helpers/run-node.js';

const root = path.resolve(import.meta.dirname, '../..');
const scratch = path.join(root, '.scratch', 'doc-blocks');
/** Longest a block may run, ms (each takes well under a second alone; the machine is shared). */
const BOUND_MS = 20_000;

interface Block {
  /** `README.md:42`: the file and line of the opening fence. */
  where: string;
  code: string;
  run: boolean;
}

/** The ```ts blocks of one Markdown file, with where each starts. */
function blocksOf(file: string): Block[] {
  const rel = path.relative(root, file);
  const lines = readFileSync(file, 'utf8').split('\n');
  const out: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```ts(?:\s+(.*))?$/.exec(lines[i]!);
    if (open === null) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i] !== '```'; i++) body.push(lines[i]!);
    out.push({ where: `${rel}:${start + 1}`, code: body.join('\n') + '\n', run: !/\bno-run\b/.test(open[1] ?? '') });
  }
  return out;
}

const docsDir = path.join(root, 'docs');
const files = [
  path.join(root, 'README.md'),
  ...readdirSync(docsDir)
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => path.join(docsDir, f)),
];
const blocks = files.flatMap(blocksOf);

/** Points the package's own specifiers at the sources (see the file comment). */
function resolvePackage(code: string): string {
  const to = (p: string) => path.relative(scratch, path.join(root, p)).split(path.sep).join('/');
  return code
    .replace(/(['"])switchyard\/kernel\1/g, `'${to('kernel/index.js')}'`)
    .replace(/(['"])switchyard\/protocol\1/g, `'${to('kernel/protocol.js')}'`)
    .replace(/(['"])switchyard\/plugins\1/g, `'${to('plugins/index.js')}'`)
    .replace(/(['"])switchyard\/opentelemetry\1/g, `'${to('plugins/opentelemetry/index.js')}'`)
    .replace(/(['"])switchyard\1/g, `'${to('index.js')}'`);
}

/** The output lines a block promises: `console.log(…); // → text`, or `// → text` alone on a line. */
function promised(code: string): string[] {
  return [...code.matchAll(/^(?:.*console\.log\(.*\);?)?\s*\/\/ → (.*)$/gm)].map((m) => m[1]!.trimEnd());
}

rmSync(scratch, { recursive: true, force: true });
mkdirSync(scratch, { recursive: true });
const runnable = blocks
  .filter((b) => b.run)
  .map((b) => {
    const file = path.join(scratch, `${b.where.replace(/[/.:]/g, '_')}.ts`);
    writeFileSync(file, resolvePackage(b.code));
    return [b.where, file, promised(b.code)] as const;
  });
writeFileSync(path.join(scratch, 'tsconfig.json'), JSON.stringify({ extends: '../../tsconfig.json', include: ['*.ts'] }));

describe('documentation code blocks', () => {
  it('README.md and docs/ have code to run, and few blocks are exempt', () => {
    expect(runnable.length).toBeGreaterThan(10);
    expect(blocks.filter((b) => !b.run).length).toBeLessThanOrEqual(4);
  });

  it('their relative links lead to files of the repository', () => {
    const broken: string[] = [];
    for (const file of [...files, path.join(root, 'plugin-api.md'), path.join(root, 'bench/README.md')]) {
      for (const m of readFileSync(file, 'utf8').matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1]!.split('#')[0]!;
        if (target === '' || /^[a-z]+:/.test(target)) continue;
        if (!existsSync(path.resolve(path.dirname(file), target))) broken.push(`${path.relative(root, file)}: ${m[1]}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it(
    'they type-check',
    async () => {
      const run = await runNode([path.join(root, 'node_modules/typescript/bin/tsc'), '--noEmit', '-p', scratch], scratch, BOUND_MS * 3);
      expect(run.stdout + run.stderr).toBe('');
      expect(run.code).toBe(0);
    },
    BOUND_MS * 3 + 5_000,
  );

  describe.concurrent('each runs as written', () => {
    it.each(runnable)(
      '%s',
      async (_where, file, lines) => {
        const run = await runNode(['--import', 'tsx', file], scratch, BOUND_MS);
        const output = `stdout:\n${run.stdout}\nstderr:\n${run.stderr}`;
        expect(run.code, output).toBe(0);
        expect(run.stderr, output).toBe('');
        const got = run.stdout.split('\n');
        for (const line of lines) expect(got, output).toContain(line);
      },
      BOUND_MS + 5_000,
    );
  });
});
