/**
 * A user's script, run as its own process by the failing-stream tests (`node --import tsx`):
 * POSTs to the URL in argv[3] a body whose stream fails, the way argv[2] names, and prints
 * `rejected <code> <path>` or `resolved <status>`. An unhandled 'error' event would instead
 * crash the process (exit code 1, the error on stderr).
 *
 * - `form-missing`: the README's `new HTTP.Form({ file: createReadStream('a.bin') })` for a file that does not exist;
 * - `form-removed`: a Form of an existing file, the file removed before the request is sent;
 * - `body-missing`: `body: createReadStream('a.bin')` for a file that does not exist.
 */
import { createReadStream, mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as HTTP from '../../../../index.js';

const [how, url] = process.argv.slice(2) as [string, string];
const dir = mkdtempSync(join(tmpdir(), 'swy-failing-stream-'));
const file = join(dir, 'a.bin');
let body: HTTP.RequestBody;
if (how === 'form-missing') body = new HTTP.Form({ file: createReadStream(file) });
else if (how === 'form-removed') {
  writeFileSync(file, 'some bytes');
  body = new HTTP.Form({ file: createReadStream(file) });
  // Before the stream's own open ran (it starts on the next tick): that open now fails too.
  unlinkSync(file);
} else if (how === 'body-missing') body = createReadStream(file);
else throw new Error(`unknown case ${how}`);
try {
  const res = await HTTP.post(url, { body });
  console.log(`resolved ${res.status}`);
} catch (err) {
  const e = err as NodeJS.ErrnoException;
  console.log(`rejected ${e.code} ${e.path === file ? 'a.bin' : e.path}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
