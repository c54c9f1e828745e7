/**
 * Importing switchyard does not load Node's fetch implementation (undici, some 30 ms): the web
 * converters and fetch handlers touch the platform's Request and Response only when used.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

function loadsUndici(entry: string): Promise<string> {
  const script = `await import(${JSON.stringify(entry)}); console.log(process.moduleLoadList.some((m) => m.includes('undici')) ? 'loaded' : 'not loaded');`;
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, timeout: 20_000 }, (err, stdout) => (err ? reject(err) : resolve(stdout.trim())));
  });
}

describe('the platform fetch stays unloaded', () => {
  it('import of the top level and of the kernel entry', async () => {
    expect(await loadsUndici(`${ROOT}index.ts`)).toBe('not loaded');
    expect(await loadsUndici(`${ROOT}kernel/index.ts`)).toBe('not loaded');
  });
});
