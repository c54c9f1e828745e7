/**
 * The package as a user gets it: `npm pack`, the tarball installed into a scratch project
 * outside the checkout, and there an ES module script, a CommonJS script, the TypeScript
 * declarations under each module resolution a project may use, and the command.
 */
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = resolve(import.meta.dirname, '../..');
const npm = (args: string[], cwd: string) => run('npm', ['--no-audit', '--no-fund', '--loglevel=error', ...args], { cwd, maxBuffer: 16 << 20 });

// A server with a router and a client call against it, the same program three ways.
const ESM = `
import * as HTTP from 'switchyard';
const router = new HTTP.Router();
router.get('/hello/{name}', (req) => new HTTP.Response(200, 'hello ' + HTTP.getParam(req, 'name')));
const server = await HTTP.serve(router, { port: 0, host: '127.0.0.1' });
const res = await HTTP.get('http://127.0.0.1:' + server.port + '/hello/esm');
console.log(res.status, res.text());
await server.close();
`;

const CJS = `
const HTTP = require('switchyard');
const { createKernel } = require('switchyard/kernel');
const { presets } = require('switchyard/plugins');
(async () => {
  const router = new HTTP.Router();
  router.get('/hello/{name}', (req) => new HTTP.Response(200, 'hello ' + HTTP.getParam(req, 'name')));
  const server = await HTTP.serve(router, { port: 0, host: '127.0.0.1' });
  const res = await HTTP.get('http://127.0.0.1:' + server.port + '/hello/cjs');
  console.log(res.status, res.text(), typeof createKernel, Array.isArray(presets.defaults));
  await server.close();
})();
`;

const TS = `
import * as HTTP from 'switchyard';
import { createKernel } from 'switchyard/kernel';
import { presets } from 'switchyard/plugins';
import { HeadParser, type ProtocolHost } from 'switchyard/protocol';

// The protocol plugins' entry resolves too, values and types.
export const parser: HeadParser = new HeadParser('request');
export type Host = ProtocolHost;

export async function main(): Promise<number> {
  const router = new HTTP.Router();
  router.get('/items/{id}', (req: HTTP.Request) => new HTTP.Response(200, HTTP.getParam(req, 'id') ?? ''));
  const server: HTTP.Server = await HTTP.serve(router, { port: 0 });
  const kernel = createKernel();
  for (const plugin of presets.defaults) kernel.register(plugin);
  const client = new HTTP.Client({ kernel: await kernel.ready() });
  const res: HTTP.Response = await client.get('http://127.0.0.1:' + server.port + '/items/1', { requestTimeout: 1_000 });
  // @ts-expect-error a misspelt option is a type error for the user too
  new HTTP.Client({ redirectLimt: 2 });
  // @ts-expect-error and so is one in a call's options
  await HTTP.get('http://127.0.0.1/', { requestTimeot: 1_000 });
  await server.close();
  return res.status;
}
`;

describe('the packed package', () => {
  let scratch = '';

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'switchyard-package-'));
    // What prepack does, into a staging copy: the checkout's own dist/ is left alone, since the
    // command's tests run it when it is current.
    const stage = join(scratch, 'stage');
    await run(join(root, 'node_modules/.bin/tsup'), ['--out-dir', join(stage, 'dist')], { cwd: root });
    for (const f of ['package.json', 'README.md', 'LICENSE', 'plugin-api.md', 'bin', 'docs']) await cp(join(root, f), join(stage, f), { recursive: true });
    await npm(['pack', '--ignore-scripts', '--pack-destination', scratch], stage);
    const tarball = (await readdir(scratch)).find((f) => f.endsWith('.tgz'));
    if (tarball === undefined) throw new Error(`npm pack left no tarball in ${scratch}`);
    await writeFile(join(scratch, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }));
    // The compiler and node's types come in as a user's dev dependencies would, in the
    // versions this project is checked with.
    const dev = (JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies;
    await npm(['install', '--prefer-offline', join(scratch, tarball), `typescript@${dev['typescript']}`, `@types/node@${dev['@types/node']}`], scratch);
  }, 240_000);

  afterAll(async () => {
    if (scratch !== '') await rm(scratch, { recursive: true, force: true });
  });

  it('holds the files a user needs and no source maps', async () => {
    const files = await readdir(join(scratch, 'node_modules/switchyard'), { recursive: true });
    for (const f of ['LICENSE', 'README.md', 'plugin-api.md', 'docs/kernel.md', 'package.json', 'bin/switchyard.js', 'dist/index.js', 'dist/index.d.ts']) {
      expect(files, f).toContain(f);
    }
    expect(files.filter((f) => f.endsWith('.map'))).toEqual([]);
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
  });

  it('runs as an ES module', async () => {
    await writeFile(join(scratch, 'esm.mjs'), ESM);
    const r = await run(process.execPath, ['esm.mjs'], { cwd: scratch });
    expect(r.stdout).toBe('200 hello esm\n');
  });

  it('runs from CommonJS through require()', async () => {
    await writeFile(join(scratch, 'cjs.cjs'), CJS);
    const r = await run(process.execPath, ['cjs.cjs'], { cwd: scratch });
    expect(r.stdout).toBe('200 hello cjs function true\n');
  });

  it.each([
    ['nodenext', 'nodenext'],
    ['node16', 'node16'],
    ['bundler', 'esnext'],
  ])(
    'type-checks under moduleResolution %s',
    async (resolution, module) => {
      const dir = await mkdtemp(join(scratch, `ts-${resolution}-`));
      await writeFile(join(dir, 'main.ts'), TS);
      await writeFile(
        join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: { strict: true, module, moduleResolution: resolution, target: 'ES2022', noEmit: true, skipLibCheck: false, types: ['node'] },
          files: ['main.ts'],
        }),
      );
      const tsc = await run(join(scratch, 'node_modules/.bin/tsc'), ['-p', dir], { cwd: scratch }).catch((e: { stdout: string }) => e);
      expect(tsc.stdout).toBe('');
    },
    60_000,
  );

  it('gives the command through npx', async () => {
    const r = await run('npx', ['--no-install', 'switchyard', '--help'], { cwd: scratch });
    expect(r.stdout).toMatch(/^Usage: switchyard/);
    expect(r.stdout).toContain('serve');
  });
});

describe('the lock file', () => {
  it('is what npm install writes for package.json, so a fresh clone stays clean', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'switchyard-lock-'));
    try {
      for (const f of ['package.json', 'package-lock.json']) await writeFile(join(dir, f), await readFile(join(root, f)));
      await npm(['install', '--package-lock-only', '--prefer-offline', '--ignore-scripts'], dir);
      expect(await readFile(join(dir, 'package-lock.json'), 'utf8')).toBe(await readFile(join(root, 'package-lock.json'), 'utf8'));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
