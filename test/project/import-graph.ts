/**
 * The import graph of the library's TypeScript sources, read with a small scanner of its own
 * (no compiler API, no dependency): static `import … from`, side-effect `import '…'`,
 * `export … from`, and `import('…')` with a literal specifier, `import type` and
 * `export type` included (a type-only edge is still an edge: it ties the two files' designs
 * together, and a cycle through it is as hard to untangle as any other). Comments and the
 * contents of strings, template literals and regular expressions are skipped, so an example in
 * a comment is not an edge.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, posix, relative, sep } from 'node:path';

/** Files of the graph (paths relative to the root, with `/`) and, for each, the files it imports. */
export interface ImportGraph {
  readonly files: readonly string[];
  readonly edges: ReadonlyMap<string, readonly string[]>;
  /** Specifiers that start with `.` but name no file of the graph, as `file → specifier`. */
  readonly unresolved: readonly string[];
}

/** Every `.ts` file (not `.d.ts`) under `dir`, relative to `root`. */
export function sourceFiles(root: string, dir: string): string[] {
  const abs = join(root, dir);
  const st = statSync(abs, { throwIfNoEntry: false });
  if (st === undefined) return [];
  if (st.isFile()) return abs.endsWith('.ts') ? [toPosix(relative(root, abs))] : [];
  const out: string[] = [];
  for (const name of readdirSync(abs).sort()) {
    const child = join(dir, name);
    if (statSync(join(root, child)).isDirectory()) out.push(...sourceFiles(root, child));
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(toPosix(child));
  }
  return out;
}

function toPosix(p: string): string {
  return p.split(sep).join('/');
}

/**
 * The string literals of `source` in order, and the code with comments blanked and every
 * string, template literal and regular expression replaced by `"#n"` (n its index in the list;
 * a template literal with substitutions becomes `"#-1"`, since its value is not known).
 */
export function scan(source: string): { code: string; strings: string[] } {
  const strings: string[] = [];
  let code = '';
  let i = 0;
  const n = source.length;
  // Template literals nest through `${ … }`: each open substitution remembers its brace depth.
  const templates: number[] = [];
  let depth = 0;
  /** Last significant character of code, to tell a regular expression from a division. */
  let last = '';
  let lastWord = '';

  const readTemplate = (): void => {
    // At the character after "`" or after the "}" that closes a substitution.
    let text = '';
    while (i < n) {
      const c = source[i]!;
      if (c === '\\') {
        text += source.slice(i, i + 2);
        i += 2;
      } else if (c === '`') {
        i++;
        strings.push(text);
        code += `"#${strings.length - 1}"`;
        return;
      } else if (c === '$' && source[i + 1] === '{') {
        i += 2;
        templates.push(depth);
        depth++;
        code += '"#-1"(';
        return;
      } else {
        text += c;
        i++;
      }
    }
  };

  while (i < n) {
    const c = source[i]!;
    const next = source[i + 1];
    if (c === '/' && next === '/') {
      while (i < n && source[i] !== '\n') i++;
      continue;
    }
    if (c === '/' && next === '*') {
      const end = source.indexOf('*/', i + 2);
      i = end < 0 ? n : end + 2;
      code += ' ';
      continue;
    }
    if (c === '"' || c === "'") {
      let text = '';
      i++;
      while (i < n && source[i] !== c && source[i] !== '\n') {
        if (source[i] === '\\') {
          text += source[i + 1] ?? '';
          i += 2;
        } else text += source[i++];
      }
      i++;
      strings.push(text);
      code += `"#${strings.length - 1}"`;
      last = '"';
      lastWord = '';
      continue;
    }
    if (c === '`') {
      i++;
      readTemplate();
      last = '"';
      lastWord = '';
      continue;
    }
    if (c === '}' && templates.length > 0 && templates[templates.length - 1] === depth - 1) {
      // The end of a template substitution: the template's text goes on.
      templates.pop();
      depth--;
      i++;
      code += ')';
      readTemplate();
      last = '"';
      lastWord = '';
      continue;
    }
    if (c === '/' && regexMayStart(last, lastWord)) {
      // A regular expression literal: skip it (a quote inside it is not a string).
      i++;
      let inClass = false;
      while (i < n && source[i] !== '\n') {
        const r = source[i]!;
        if (r === '\\') i += 2;
        else {
          i++;
          if (r === '[') inClass = true;
          else if (r === ']') inClass = false;
          else if (r === '/' && !inClass) break;
        }
      }
      while (i < n && /[a-z]/i.test(source[i]!)) i++;
      code += '/re/';
      last = '"';
      lastWord = '';
      continue;
    }
    if (c === '{') depth++;
    else if (c === '}') depth--;
    code += c;
    i++;
    if (/\s/.test(c)) continue;
    if (/[\w$]/.test(c)) {
      lastWord = /[\w$]/.test(last) ? lastWord + c : c;
    } else lastWord = '';
    last = c;
  }
  return { code, strings };
}

/** Keywords after which a `/` starts a regular expression rather than a division. */
const REGEX_AFTER_WORD = new Set(['return', 'typeof', 'case', 'do', 'else', 'in', 'of', 'new', 'delete', 'void', 'throw', 'instanceof', 'yield', 'await']);

function regexMayStart(last: string, lastWord: string): boolean {
  if (last === '') return true;
  if (/[\w$]/.test(last)) return REGEX_AFTER_WORD.has(lastWord);
  return !/[)\]"}]/.test(last);
}

// `import`/`export` not preceded by `.` or a name character (so `x.import(` is not one).
const STATIC_FROM = /(?<![.\w$])(?:import|export)\s+(?:type\s+)?(?:[\w$*{][^;"]*?)?\bfrom\s*"#(\d+)"/g;
const SIDE_EFFECT = /(?<![.\w$])import\s*"#(\d+)"/g;
const DYNAMIC = /(?<![.\w$])import\s*\(\s*"#(\d+)"\s*[,)]/g;

/** The module specifiers `source` imports or re-exports, in order of appearance. */
export function importSpecifiers(source: string): string[] {
  const { code, strings } = scan(source);
  const found: { at: number; spec: string }[] = [];
  for (const re of [STATIC_FROM, SIDE_EFFECT, DYNAMIC]) {
    for (const m of code.matchAll(re)) found.push({ at: m.index, spec: strings[Number(m[1])]! });
  }
  return found.sort((a, b) => a.at - b.at).map((f) => f.spec);
}

/**
 * The graph of `files` (relative to `root`): relative specifiers resolved as TypeScript's
 * NodeNext does (`./x.js` is `./x.ts`); packages and `node:` modules are not part of it.
 */
export function importGraph(root: string, files: readonly string[]): ImportGraph {
  const known = new Set(files);
  const edges = new Map<string, string[]>();
  const unresolved: string[] = [];
  for (const file of files) {
    const targets: string[] = [];
    for (const spec of importSpecifiers(readFileSync(join(root, file), 'utf8'))) {
      if (!spec.startsWith('.')) continue;
      const target = resolveSpecifier(file, spec, known);
      if (target === null) unresolved.push(`${file} → ${spec}`);
      else if (!targets.includes(target)) targets.push(target);
    }
    edges.set(file, targets);
  }
  return { files, edges, unresolved };
}

function resolveSpecifier(from: string, spec: string, known: ReadonlySet<string>): string | null {
  const base = posix.normalize(posix.join(posix.dirname(from), spec));
  for (const candidate of [base.replace(/\.js$/, '.ts'), `${base}.ts`, `${base}/index.ts`, base]) {
    if (known.has(candidate)) return candidate;
  }
  return null;
}

/**
 * Every cycle of the graph, one per strongly connected component of more than one file (or a
 * file that imports itself), each as the files along it with the first repeated at the end.
 */
export function findCycles(graph: ImportGraph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let counter = 0;
  const out = (f: string): readonly string[] => graph.edges.get(f) ?? [];

  const connect = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter);
    counter++;
    stack.push(v);
    onStack.add(v);
    for (const w of out(v)) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || out(v).includes(v)) components.push(component);
    }
  };
  for (const f of graph.files) if (!index.has(f)) connect(f);

  return components.map((component) => {
    const members = new Set(component);
    const start = [...component].sort()[0]!;
    return shortestCycle(start, members, out);
  });
}

/** A shortest path from `start` back to itself within `members` (breadth first). */
function shortestCycle(start: string, members: ReadonlySet<string>, out: (f: string) => readonly string[]): string[] {
  const prev = new Map<string, string>();
  const queue = [start];
  for (let k = 0; k < queue.length; k++) {
    const v = queue[k]!;
    for (const w of out(v)) {
      if (!members.has(w)) continue;
      if (w === start) {
        const path = [start];
        for (let x = v; x !== start; x = prev.get(x)!) path.splice(1, 0, x);
        return [...path, start];
      }
      if (!prev.has(w)) {
        prev.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start, start];
}
