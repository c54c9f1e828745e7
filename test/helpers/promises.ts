/**
 * Counting promises: what a call costs, counted in a way that does not depend on timing.
 */
import { createHook } from 'node:async_hooks';

/**
 * Promises made while `fn()` runs to its end, after one warm-up call: the fewest of three
 * calls, so a one-off in the process (a connection the pool had to replace, a module loaded
 * late) does not count as the call's cost, while a cost every call pays still shows.
 */
export async function promisesPerCall(fn: () => Promise<unknown>): Promise<number> {
  await fn();
  let fewest = Infinity;
  for (let i = 0; i < 3; i++) {
    let n = 0;
    const hook = createHook({
      init(_id, type) {
        if (type === 'PROMISE') n++;
      },
    });
    hook.enable();
    try {
      await fn();
    } finally {
      hook.disable();
    }
    fewest = Math.min(fewest, n);
  }
  return fewest;
}
