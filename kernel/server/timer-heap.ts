/**
 * One timer for many connections: each connection's next deadline sits in a binary min-heap,
 * and a single Node timer is set for the earliest. A waiting keep-alive connection then keeps
 * two numbers instead of a `Timeout` (with its clock reading and callback arguments), and
 * moving a deadline costs a sift of a few levels, no allocation.
 */
import { performance } from 'node:perf_hooks';

/** Something with a deadline in a {@link TimerHeap}; the fields are the heap's to write. */
export interface Timed {
  /** Position in the heap, -1 when not in it. */
  timerIndex: number;
  /** When it fires (`performance.now()` clock). */
  timerDue: number;
  /** Called once its deadline is reached, after it left the heap (it may schedule itself again). */
  onTimer(): void;
}

/** @internal Deadlines of one server's connections, fired by one unref'd Node timer. */
export class TimerHeap {
  private readonly heap: Timed[] = [];
  private timer: NodeJS.Timeout | null = null;
  /** When the Node timer fires (Infinity: none set). */
  private timerAt = Infinity;
  private firing = false;

  /** Number of deadlines waiting. */
  get size(): number {
    return this.heap.length;
  }

  /** Sets (or moves) `item`'s deadline to `due`. */
  schedule(item: Timed, due: number): void {
    const old = item.timerIndex;
    item.timerDue = due;
    if (old < 0) {
      item.timerIndex = this.heap.length;
      this.heap.push(item);
      this.up(item.timerIndex);
    } else if (!this.up(old)) {
      this.down(old);
    }
    if (!this.firing && due < this.timerAt) this.setTimer();
  }

  /** Removes `item`'s deadline, if it has one. */
  cancel(item: Timed): void {
    const i = item.timerIndex;
    if (i < 0) return;
    item.timerIndex = -1;
    const h = this.heap;
    const last = h.pop()!;
    if (last !== item) {
      h[i] = last;
      last.timerIndex = i;
      if (!this.up(i)) this.down(i);
    }
    // The Node timer stays for a later first deadline (it finds less to do); it goes with the last.
    if (h.length === 0 && this.timer !== null) this.clearTimer();
  }

  private readonly fire = (): void => {
    this.timer = null;
    this.timerAt = Infinity;
    this.firing = true;
    const h = this.heap;
    try {
      // A Node timer may fire up to a millisecond before the clock reads its deadline; what is
      // due within 1 ms goes now, and each item checks its own clock (see `onTimer`).
      const now = performance.now() + 1;
      while (h.length > 0 && h[0]!.timerDue <= now) {
        const item = h[0]!;
        this.cancel(item);
        item.onTimer();
      }
    } finally {
      this.firing = false;
      if (h.length > 0) this.setTimer();
    }
  };

  /** Sets the Node timer for the earliest deadline. */
  private setTimer(): void {
    const h = this.heap;
    if (h.length === 0) return;
    const due = h[0]!.timerDue;
    if (this.timer !== null) {
      if (this.timerAt <= due) return;
      clearTimeout(this.timer);
    }
    this.timerAt = due;
    this.timer = setTimeout(this.fire, Math.max(1, Math.ceil(due - performance.now())));
    this.timer.unref();
  }

  private clearTimer(): void {
    clearTimeout(this.timer!);
    this.timer = null;
    this.timerAt = Infinity;
  }

  /** Moves the item at `i` toward the root while it is due earlier than its parent; true when it moved. */
  private up(i: number): boolean {
    const h = this.heap;
    const item = h[i]!;
    const due = item.timerDue;
    const from = i;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const parent = h[p]!;
      if (parent.timerDue <= due) break;
      h[i] = parent;
      parent.timerIndex = i;
      i = p;
    }
    h[i] = item;
    item.timerIndex = i;
    return i !== from;
  }

  /** Moves the item at `i` toward the leaves while a child is due earlier. */
  private down(i: number): void {
    const h = this.heap;
    const n = h.length;
    const item = h[i]!;
    const due = item.timerDue;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && h[r]!.timerDue < h[l]!.timerDue ? r : l;
      const child = h[c]!;
      if (child.timerDue >= due) break;
      h[i] = child;
      child.timerIndex = i;
      i = c;
    }
    h[i] = item;
    item.timerIndex = i;
  }
}
