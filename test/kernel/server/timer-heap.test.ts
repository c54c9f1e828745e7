/**
 * The server's timer heap: deadlines fire in order, not before they are due, each once; a
 * cancelled one never fires; a moved one fires by its new deadline; and however many deadlines
 * wait, one Node timer serves them.
 */
import { performance } from 'node:perf_hooks';
import { queryObjects } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { TimerHeap, type Timed } from '../../../kernel/server/timer-heap.js';

interface Item extends Timed {
  id: number;
  firedAt: number;
}

function items(n: number, fired: Item[], onFire: () => void): Item[] {
  return Array.from({ length: n }, (_, id) => {
    const item: Item = {
      id,
      timerIndex: -1,
      timerDue: 0,
      firedAt: -1,
      onTimer() {
        item.firedAt = performance.now();
        fired.push(item);
        onFire();
      },
    };
    return item;
  });
}

describe('TimerHeap', () => {
  it('fires every deadline once, in order, none early; cancelled ones never; moved ones by their new deadline', async () => {
    const heap = new TimerHeap();
    const fired: Item[] = [];
    let expected = 0;
    let done!: () => void;
    const all = new Promise<void>((resolve) => (done = resolve));
    const list = items(200, fired, () => {
      if (fired.length === expected) done();
    });
    const start = performance.now();
    // Deadlines 5-80 ms out, in a scrambled order.
    for (const item of list) heap.schedule(item, start + 5 + ((item.id * 37) % 76));
    // Cancel every fifth; move every seventh (of the rest) to 2-3 ms out or later.
    for (const item of list) if (item.id % 5 === 0) heap.cancel(item);
    for (const item of list) if (item.id % 5 !== 0 && item.id % 7 === 0) heap.schedule(item, item.id % 2 === 0 ? start + 2 + (item.id % 2) : item.timerDue + 20);
    const live = list.filter((i) => i.id % 5 !== 0);
    expected = live.length;
    expect(heap.size).toBe(expected);
    await all;
    expect(fired.map((i) => i.id).sort((a, b) => a - b)).toEqual(live.map((i) => i.id));
    for (let k = 1; k < fired.length; k++) expect(fired[k]!.timerDue).toBeGreaterThanOrEqual(fired[k - 1]!.timerDue);
    // A Node timer may run up to a millisecond before the clock reads its deadline.
    for (const item of fired) expect(item.firedAt).toBeGreaterThanOrEqual(item.timerDue - 1);
    expect(heap.size).toBe(0);
  });

  it('keeps one Node timer however many deadlines wait, and none once they are cancelled', () => {
    const heap = new TimerHeap();
    const Timeout = setTimeout(() => {}, 0).constructor as new () => unknown;
    const timers = (): number => queryObjects(Timeout, { format: 'count' }) as number;
    const before = timers();
    const list = items(100, [], () => {});
    const now = performance.now();
    for (const item of list) heap.schedule(item, now + 60_000 - item.id);
    expect(timers() - before).toBe(1);
    for (const item of list) heap.cancel(item);
    expect(timers() - before).toBe(0);
  });
});
