/**
 * Helpers of the hostile-peer tests: a seeded PRNG (a failing fuzz case names its seed and can
 * be replayed), memory readings, and a probe that measures a well-behaved client's latency
 * while a hostile peer is at work.
 */

/** A deterministic PRNG (mulberry32): the same seed gives the same sequence on every run. */
export interface Rng {
  readonly seed: number;
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [0, n). */
  int(n: number): number;
  /** One element of `xs`. */
  pick<T>(xs: readonly T[]): T;
  /** `n` random bytes. */
  bytes(n: number): Buffer;
}

/** A {@link Rng} for `seed`. */
export function rng(seed: number): Rng {
  let a = seed >>> 0;
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number): number => Math.floor(next() * n);
  return {
    seed,
    next,
    int,
    pick: (xs) => xs[int(xs.length)]!,
    bytes(n) {
      const b = Buffer.alloc(n);
      for (let i = 0; i < n; i++) b[i] = int(256);
      return b;
    },
  };
}

/** Heap and RSS now, in bytes (after a collection when the process runs with --expose-gc). */
export function memory(): { heap: number; rss: number } {
  (globalThis as { gc?: () => void }).gc?.();
  const m = process.memoryUsage();
  return { heap: m.heapUsed, rss: m.rss };
}

/** Growth since `before` (bytes; negative growth counts as 0). */
export function growth(before: { heap: number; rss: number }): { heap: number; rss: number } {
  const now = memory();
  return { heap: Math.max(0, now.heap - before.heap), rss: Math.max(0, now.rss - before.rss) };
}

/** One MiB. */
export const MiB = 1024 * 1024;

/**
 * Runs `call` one after another until `until()` holds (at least `min` times) and resolves with
 * the slowest call's time in ms: a normal client's latency while a hostile peer is at work.
 */
export async function latencyDuring(call: () => Promise<unknown>, until: () => boolean, min = 3): Promise<{ max: number; calls: number }> {
  let max = 0;
  let calls = 0;
  while (calls < min || !until()) {
    const t0 = performance.now();
    await call();
    max = Math.max(max, performance.now() - t0);
    calls++;
    if (calls > 10_000) break;
  }
  return { max, calls };
}
