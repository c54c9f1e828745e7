#!/usr/bin/env node
// The `switchyard` command. It runs the build (dist/cli/main.js) when there is one that is not
// older than the sources, else the TypeScript sources through tsx (a dev dependency):
// - the published package ships dist/ only, so it always runs the build, without tsx;
// - in a checkout the command is never a stale build: after an edit it runs the sources
//   (about 0.4 s slower to start) until `npm run build` makes the build current again.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = new URL('../', import.meta.url);
const source = new URL('cli/main.ts', root);
const built = new URL('dist/cli/main.js', root);

/** Newest modification time (ms) of the .ts files the command is built from, or 0. */
function newestSource() {
  let newest = 0;
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = `${dir}/${e.name}`;
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.ts')) newest = Math.max(newest, statSync(p).mtimeMs);
    }
  };
  const base = fileURLToPath(root);
  for (const d of ['cli', 'kernel', 'plugins']) if (existsSync(`${base}${d}`)) walk(`${base}${d}`);
  if (existsSync(`${base}index.ts`)) newest = Math.max(newest, statSync(`${base}index.ts`).mtimeMs);
  return newest;
}

async function load() {
  const hasBuild = existsSync(built);
  if (hasBuild && (!existsSync(source) || statSync(built).mtimeMs >= newestSource())) return import(built.href);
  if (existsSync(source)) {
    let register = null;
    try {
      ({ register } = await import('tsx/esm/api'));
    } catch {
      // tsx is a dev dependency; without it, a build (even an older one) is all there is.
    }
    if (register !== null) {
      register();
      return import(source.href);
    }
  }
  if (hasBuild) return import(built.href);
  process.stderr.write('switchyard: found neither a build (dist/cli/main.js: run `npm run build`) nor tsx to run the sources (`npm install`)\n');
  process.exit(1);
}

const { run } = await load();
await run(process.argv.slice(2));
