/**
 * The import graph of the library (index.ts, kernel/, plugins/, cli/) keeps its shape: no
 * import cycle (type-only imports count), the kernel imports no plugin, code outside the kernel
 * (plugins, the command) reaches it only through its public entries (`kernel/index.ts`,
 * `kernel/protocol.ts`), and code outside a plugin reaches that plugin only through its
 * `index.ts`. The graph is read by test/project/import-graph.ts;
 * the checks are also run on small made-up trees, so each can be seen to fail.
 */
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findCycles, importGraph, importSpecifiers, sourceFiles, type ImportGraph } from './import-graph.js';

const root = resolve(import.meta.dirname, '../..');

/** The library's sources: what the package ships (the command included). */
function libraryGraph(at: string): ImportGraph {
  const files = [...sourceFiles(at, 'index.ts'), ...sourceFiles(at, 'kernel'), ...sourceFiles(at, 'plugins'), ...sourceFiles(at, 'cli'), ...sourceFiles(at, 'tls')];
  return importGraph(at, files);
}

/** The kernel files a plugin may import: the plugin authors' entry and the protocol plugins' entry. */
const KERNEL_ENTRIES: ReadonlySet<string> = new Set(['kernel/index.ts', 'kernel/protocol.ts']);

/**
 * Cycles known and being removed, each named, with the files among which it runs. Imports
 * between the files of one allowance are left out of the cycle check; any other cycle fails it,
 * and an allowance whose files no longer import each other in a circle fails the test below,
 * so it is deleted with its cycle.
 */
const ALLOWED_CYCLES: Readonly<Record<string, readonly string[]>> = {};

/** `graph` without the imports an allowance covers (or, with `only`, with just those of `only`). */
function allowedCut(graph: ImportGraph, only?: readonly string[]): ImportGraph {
  const sets = Object.values(ALLOWED_CYCLES).map((files) => new Set(files));
  const inside = (a: string, b: string): boolean => sets.some((s) => s.has(a) && s.has(b));
  const edges = new Map<string, string[]>();
  for (const [from, targets] of graph.edges) {
    if (only !== undefined) edges.set(from, only.includes(from) ? targets.filter((t) => only.includes(t)) : []);
    else
      edges.set(
        from,
        targets.filter((t) => !inside(from, t)),
      );
  }
  return { ...graph, edges };
}

function show(cycle: readonly string[]): string {
  return cycle.join(' → ');
}

/** Every import that breaks a boundary rule, as `from → to: why`. */
function boundaryViolations(graph: ImportGraph): string[] {
  const out: string[] = [];
  for (const [from, targets] of graph.edges) {
    const [top, plugin] = from.split('/');
    // The directory of the plugin `from` belongs to (plugins/<name>/…), or null.
    const own = top === 'plugins' && from.split('/').length > 2 ? plugin : null;
    for (const to of targets) {
      const [toTop, toPlugin, ...rest] = to.split('/');
      if (top === 'kernel' && toTop !== 'kernel') {
        out.push(`${from} → ${to}: the kernel imports nothing outside kernel/`);
      } else if (top !== 'kernel' && toTop === 'kernel' && !KERNEL_ENTRIES.has(to)) {
        out.push(`${from} → ${to}: outside kernel/, the kernel is imported only through ${[...KERNEL_ENTRIES].join(' or ')}`);
      } else if (toTop === 'plugins' && rest.length > 0 && toPlugin !== own && rest.join('/') !== 'index.ts') {
        out.push(`${from} → ${to}: outside a plugin, it is imported only through its index.ts`);
      }
    }
  }
  return out;
}

describe('the library import graph', () => {
  const graph = libraryGraph(root);

  it('reads every file and resolves every relative import', () => {
    expect(graph.files).toContain('index.ts');
    expect(graph.files).toContain('kernel/index.ts');
    expect(graph.files.some((f) => f.startsWith('plugins/'))).toBe(true);
    expect(graph.unresolved).toEqual([]);
  });

  it('has no import cycle (type-only imports included)', () => {
    expect(findCycles(allowedCut(graph)).map(show), 'import cycles').toEqual([]);
  });

  it('every allowed cycle still exists (delete an allowance once its cycle is gone)', () => {
    const stale = Object.entries(ALLOWED_CYCLES).filter(([, files]) => findCycles(allowedCut(graph, files)).length === 0);
    expect(
      stale.map(([name]) => name),
      'allowances no cycle needs',
    ).toEqual([]);
  });

  it('keeps the boundaries: kernel imports no plugin; plugins and the command import public entries only', () => {
    expect(boundaryViolations(graph)).toEqual([]);
  });
});

describe('the checks fail on a broken tree', () => {
  const scratch: string[] = [];
  afterAll(async () => {
    await Promise.all(scratch.map((d) => rm(d, { recursive: true, force: true })));
  });

  async function tree(files: Record<string, string>): Promise<ImportGraph> {
    const at = await mkdtemp(join(tmpdir(), 'switchyard-imports-'));
    scratch.push(at);
    for (const [path, text] of Object.entries(files)) {
      await mkdir(dirname(join(at, path)), { recursive: true });
      await writeFile(join(at, path), text);
    }
    return libraryGraph(at);
  }

  it('finds a cycle through a type-only import, and prints it', async () => {
    const g = await tree({
      'index.ts': "export * from './kernel/index.js';\n",
      'kernel/index.ts': "export * from './a.js';\n",
      'kernel/a.ts': "import { b } from './b.js';\nexport const a = b + 1;\n",
      'kernel/b.ts': "import type { A } from './c.js';\nexport const b = 1;\nexport type B = A;\n",
      'kernel/c.ts': "import { a } from './a.js';\nexport type A = typeof a;\n",
    });
    expect(findCycles(g).map(show)).toEqual(['kernel/a.ts → kernel/b.ts → kernel/c.ts → kernel/a.ts']);
  });

  it('finds a cycle through export-from and a dynamic import, and a file importing itself', async () => {
    const g = await tree({
      'index.ts': "export { x } from './kernel/x.js';\n",
      'kernel/x.ts': "export const x = 1;\nexport async function later() { return import('../index.js'); }\n",
      'kernel/self.ts': "import * as me from './self.js';\nexport const self = me;\n",
    });
    expect(findCycles(g).map(show).sort()).toEqual(['index.ts → kernel/x.ts → index.ts', 'kernel/self.ts → kernel/self.ts']);
  });

  it('the real sources with one deliberate cycle added: the test names it', async () => {
    // A copy of the real tree in which message/headers.ts imports the client: headers.ts →
    // client/client.ts → … → headers.ts.
    const files: Record<string, string> = {};
    for (const f of libraryGraph(root).files) files[f] = readFileSync(join(root, f), 'utf8');
    files['kernel/message/headers.ts'] = `import type { Client } from '../client/client.js';\nexport type Loop = Client;\n${files['kernel/message/headers.ts']!}`;
    const g = await tree(files);
    const cycles = findCycles(allowedCut(g));
    expect(cycles.length).toBe(1);
    expect(cycles[0]![0]).toBe(cycles[0]![cycles[0]!.length - 1]);
    expect(cycles[0]).toContain('kernel/message/headers.ts');
    expect(cycles[0]).toContain('kernel/client/client.ts');
  });

  it('names a plugin that reaches into the kernel or into another plugin, a command that reaches into a plugin, and a kernel file that imports a plugin', async () => {
    const g = await tree({
      'kernel/index.ts': "export * from './message/headers.js';\n",
      'kernel/protocol.ts': 'export const wire = 1;\n',
      'kernel/message/headers.ts': "import { p } from '../../plugins/a/index.js';\nexport const h = p;\n",
      'plugins/index.ts': "export * from './a/index.js';\nexport * from './b/index.js';\n",
      'plugins/a/index.ts': "import { h } from '../../kernel/message/headers.js';\nimport { w } from '../b/inner.js';\nexport const p = 1;\nexport const q = [h, w];\n",
      'plugins/a/own.ts': "import { p } from './index.js';\nimport { wire } from '../../kernel/protocol.js';\nimport { b } from '../b/index.js';\nexport const own = [p, wire, b];\n",
      'plugins/b/index.ts': "export { w as b } from './inner.js';\n",
      'plugins/b/inner.ts': 'export const w = 2;\n',
      'cli/main.ts': "import { w } from '../plugins/b/inner.js';\nimport { p } from '../plugins/a/index.js';\nexport const c = [w, p];\n",
    });
    expect(boundaryViolations(g).sort()).toEqual([
      'cli/main.ts → plugins/b/inner.ts: outside a plugin, it is imported only through its index.ts',
      'kernel/message/headers.ts → plugins/a/index.ts: the kernel imports nothing outside kernel/',
      'plugins/a/index.ts → kernel/message/headers.ts: outside kernel/, the kernel is imported only through kernel/index.ts or kernel/protocol.ts',
      'plugins/a/index.ts → plugins/b/inner.ts: outside a plugin, it is imported only through its index.ts',
    ]);
  });

  it('reads imports, not text that looks like them: comments, strings, templates and regular expressions are skipped', () => {
    const source = [
      "import a from './a.js';",
      "import type { B } from './b.js';",
      "import './side.js';",
      "export * from './star.js';",
      "export * as ns from './ns.js';",
      "export { type C, d } from './cd.js';",
      'import {',
      '  e,',
      '  type F,',
      "} from './ef.js';",
      "const lazy = () => import('./lazy.js');",
      "type T = typeof import('./typeof.js');",
      "// import x from './comment.js';",
      "/* export * from './block.js'; */",
      'const s = "import y from \'./string.js\'";',
      "const t = `import z from './template.js' ${'${'}`;",
      "const r = /import q from '.\\/regex.js'/;",
      "const n = 4 / 2; const m = n / 2; // import w from './division.js'",
      "obj.import('./method.js');",
    ].join('\n');
    expect(importSpecifiers(source)).toEqual(['./a.js', './b.js', './side.js', './star.js', './ns.js', './cd.js', './ef.js', './lazy.js', './typeof.js']);
  });
});
