/**
 * `@opentelemetry/api` is an optional peer dependency: only `switchyard/opentelemetry` imports
 * it. No file the other entries reach names it (not even for types: their declarations must
 * compile without it), and a program that imports `switchyard`, serves a request and makes a
 * call has not loaded it; importing the plugin's entry then does. The second check runs in a
 * fresh process, since this one loaded the API for the other tests.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { importGraph, importSpecifiers, sourceFiles } from '../../project/import-graph.js';
import { runNode } from '../../helpers/run-node.js';

const root = resolve(import.meta.dirname, '../../..');
const url = (file: string): string => pathToFileURL(resolve(root, file)).href;

/** The package entries of package.json "exports" (and the command), by source file. */
const ENTRIES = ['index.ts', 'kernel/index.ts', 'kernel/protocol.ts', 'plugins/index.ts', 'cli/main.ts'];
const PLUGIN_ENTRY = 'plugins/opentelemetry/index.ts';

/** The OpenTelemetry packages the files reachable from `entry` import, as `file → specifier`. */
function otelImports(entry: string): string[] {
  const files = [...sourceFiles(root, 'index.ts'), ...sourceFiles(root, 'kernel'), ...sourceFiles(root, 'plugins'), ...sourceFiles(root, 'cli'), ...sourceFiles(root, 'tls')];
  const graph = importGraph(root, files);
  const seen = new Set<string>([entry]);
  const todo = [entry];
  while (todo.length > 0) for (const next of graph.edges.get(todo.pop()!) ?? []) if (!seen.has(next) && seen.add(next)) todo.push(next);
  const out: string[] = [];
  for (const file of seen) for (const spec of importSpecifiers(readFileSync(resolve(root, file), 'utf8'))) if (spec.startsWith('@opentelemetry/')) out.push(`${file} → ${spec}`);
  return out;
}

const PROGRAM = `
import { createRequire } from 'node:module';
const cache = createRequire(import.meta.url).cache;
const loaded = () => Object.keys(cache).some((f) => f.includes('/node_modules/@opentelemetry/'));
const HTTP = await import(${JSON.stringify(url('index.ts'))});
await import(${JSON.stringify(url('plugins/index.ts'))});
const server = await HTTP.serve(() => new HTTP.Response(200, 'hello'), { port: 0 });
const hello = await HTTP.get('http://127.0.0.1:' + server.port + '/');
const out = { hello: hello.status, atStart: loaded() };
await server.close();
HTTP.close(HTTP.getDefaultClient());
const { openTelemetry } = await import(${JSON.stringify(url(PLUGIN_ENTRY))});
out.plugin = typeof openTelemetry;
out.afterPlugin = loaded();
console.log(JSON.stringify(out));
`;

describe('@opentelemetry/api stays optional', () => {
  it('no file the other entries reach imports an OpenTelemetry package; the plugin’s entry does', () => {
    for (const entry of ENTRIES) expect(otelImports(entry), entry).toEqual([]);
    expect(otelImports(PLUGIN_ENTRY).length).toBeGreaterThan(0);
  });

  it('importing switchyard, serving and calling loads no OpenTelemetry package; importing the plugin does', async () => {
    const run = await runNode(['--import', 'tsx', '--input-type=module', '-e', PROGRAM], root, 30_000);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const out = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
    expect(out).toEqual({ hello: 200, atStart: false, plugin: 'function', afterPlugin: true });
  });
});
