/**
 * Type-level checks of the plugins' option typing (declaration merging into `CallOptions` and
 * `ClientOptions`). Not a test file: `tsc --noEmit` (and test/project/build.test.ts) checks it,
 * and every `@ts-expect-error` must be needed. Nothing here runs.
 */
import { Client } from '../../../kernel/index.js';
import type {} from '../../../plugins/index.js';

export function typed(c: Client): void {
  void new Client({ redirectLimit: 3, redirect: true, forwardHeaders: false, decompress: true, maxDecompressedBytes: 1 << 20 });
  void c.request('GET', 'http://x', { redirectLimit: 2, redirectMethod: 'same', maxDecompressedBytes: 5, checkRedirect: (next, res, n) => next.url !== '' && res.status > 0 && n < 3 });
  // @ts-expect-error redirect is a boolean
  void c.request('GET', 'http://x', { redirect: 'yes' });
  // @ts-expect-error redirectLimit is a number
  void new Client({ redirectLimit: 'x' });
  // @ts-expect-error maxDecompressedBytes is a number
  void c.request('GET', 'http://x', { maxDecompressedBytes: 'x' });
  // @ts-expect-error decompress is a boolean
  void new Client({ decompress: 1 });
  // @ts-expect-error checkRedirect returns boolean | void
  void c.request('GET', 'http://x', { checkRedirect: () => 'no' });
}
