/**
 * One unref'd timer that a connection keeps armed for the soonest deadline of its exchanges
 * (their response heads), instead of a Timeout armed and cleared per request.
 */
import { performance } from 'node:perf_hooks';

/** @internal A timer for a deadline, moved only when a sooner one comes. */
export class DueTimer {
  private timer: NodeJS.Timeout | null = null;
  /** The deadline it is armed for (`performance.now()` time), while {@link DueTimer.armed}. */
  due = 0;
  private readonly fire: (now: number) => void;

  /**
   * `fire(now)` runs when the deadline is reached. `now` is the deadline itself: the timers'
   * own time, as a Timeout per exchange would have it, not the clock read again (so fake timers
   * govern it); a deadline within a millisecond of it is due.
   */
  constructor(fire: (now: number) => void) {
    this.fire = fire;
  }

  /** True while a deadline is set. */
  get armed(): boolean {
    return this.timer !== null;
  }

  /** Sets the deadline to `due`, `due - now` ms from `now` (the clock when not given). */
  arm(due: number, now = performance.now()): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.due = due;
    this.timer = setTimeout(this.onTimer, Math.max(1, due - now));
    this.timer.unref();
  }

  /** No deadline any more. */
  clear(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private readonly onTimer = (): void => {
    this.timer = null;
    this.fire(this.due);
  };
}
