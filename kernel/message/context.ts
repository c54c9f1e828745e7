/**
 * RequestContext: cancellation, deadline and application data for one request.
 * Deadlines are absolute `performance.now()` milliseconds; 0 means none.
 */
import { performance } from 'node:perf_hooks';
import { ArgumentError, CanceledError, TimeoutError } from '../errors.js';

/** Options of {@link RequestContext}. */
export interface RequestContextOptions {
  /** Absolute `performance.now()` milliseconds; 0 (default) for no deadline. */
  deadline?: number;
  /** A parent context: canceling it cancels this one, and its deadline bounds this one's. */
  parent?: RequestContext;
}

/** An object told when a context is canceled (see {@link RequestContext.addCancelListener}). */
export interface CancelListener {
  /** Runs once when the context is canceled, with the CanceledError the request fails with. */
  onContextCanceled(err: Error): void;
}

/** Cancellation, deadline and application data for one request. */
export class RequestContext {
  /** Absolute `performance.now()` deadline in milliseconds; 0 means none. */
  deadline: number;
  // Made on first use: most server requests never touch application data.
  private dataMap: Map<string | symbol, unknown> | null = null;
  private cancelMessage: string | null = null;
  private controller: AbortController | null = null;
  private timer: NodeJS.Timeout | null = null;
  private listeners: (((err: Error) => void) | CancelListener)[] | null = null;
  /**
   * A {@link CancelListener} added while no other listener was: the usual one exchange per
   * call, held without a list. Told before {@link RequestContext.listeners}, all of which came later.
   */
  private sole: CancelListener | null = null;
  private readonly parent: RequestContext | null;
  private unlinkParent: (() => void) | null = null;
  // The client's per-call options, kept beside the data map: every client call sets them, and a
  // Map of its own per call was a visible share of a request's garbage.
  private callOptions: unknown = undefined;

  /** `new RequestContext({ deadline })`; a child takes `parent`. */
  constructor(options: RequestContextOptions = {}) {
    if (typeof options !== 'object' || options === null) throw new ArgumentError('RequestContext options must be an object');
    const deadline = options.deadline ?? 0;
    if (typeof deadline !== 'number' || !(deadline >= 0)) {
      throw new ArgumentError(`deadline must be a non-negative number of milliseconds (performance.now() based), got ${String(deadline)}`);
    }
    this.parent = options.parent ?? null;
    this.deadline = deadline;
    if (this.parent) {
      const pd = this.parent.deadline;
      if (pd > 0 && (this.deadline === 0 || pd < this.deadline)) this.deadline = pd;
      if (this.parent.canceled) this.cancelMessage = this.parent.cancelMessage;
      else this.unlinkParent = this.parent.onCancel(() => this.cancel(this.parent!.cancelMessage ?? undefined));
    }
  }

  /**
   * Stops following the parent's cancellation: call it when a child context's work is over,
   * so a long-lived parent does not keep a listener per finished child.
   */
  detach(): void {
    const u = this.unlinkParent;
    this.unlinkParent = null;
    u?.();
  }

  /** A child context whose deadline is the earlier of `deadline` and this one's; canceled with this one. */
  child(deadline = 0): RequestContext {
    return new RequestContext({ deadline, parent: this });
  }

  /** Application data: `ctx.data.set(key, value)`; the router stores its match here. */
  get data(): Map<string | symbol, unknown> {
    return (this.dataMap ??= new Map());
  }

  /** Reads an application value, or `defaultValue` when the key is absent. */
  get<T = unknown>(key: string | symbol, defaultValue?: T): T | undefined {
    if (key === kCallOptions) return this.callOptions !== undefined ? (this.callOptions as T) : defaultValue;
    const m = this.dataMap;
    return m !== null && m.has(key) ? (m.get(key) as T) : defaultValue;
  }

  /** Stores an application value. */
  set(key: string | symbol, value: unknown): this {
    if (key === kCallOptions) {
      this.callOptions = value;
      return this;
    }
    this.data.set(key, value);
    return this;
  }

  /** True once {@link RequestContext.cancel} ran. */
  get canceled(): boolean {
    return this.cancelMessage !== null;
  }

  /** The message given to `cancel`, or null when not canceled. */
  get reason(): string | null {
    return this.cancelMessage;
  }

  /** True when a deadline is set and `now` (default `performance.now()`) has reached it. */
  expired(now?: number): boolean {
    // The clock is read only when there is a deadline (most contexts have none).
    return this.deadline > 0 && (now ?? performance.now()) >= this.deadline;
  }

  /** Milliseconds left before the deadline; Infinity without one, 0 when passed. */
  remaining(now: number = performance.now()): number {
    if (this.deadline === 0) return Infinity;
    return Math.max(0, this.deadline - now);
  }

  /** Replaces the deadline; 0 removes it. */
  setDeadline(deadline: number): void {
    if (typeof deadline !== 'number' || !(deadline >= 0)) {
      throw new ArgumentError(`deadline must be a non-negative number of milliseconds, got ${String(deadline)}`);
    }
    this.deadline = deadline;
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    // Re-arm whenever a signal is out, also when there was no deadline (and so no timer) before.
    this.armTimer();
  }

  /**
   * Cancels: the current read or write stops and the request fails with a
   * {@link CanceledError} carrying `message`. Never throws; a second call does nothing.
   */
  cancel(message = 'request canceled'): void {
    if (this.cancelMessage !== null) return;
    this.cancelMessage = String(message);
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const err = new CanceledError(this.cancelMessage);
    const sole = this.sole;
    this.sole = null;
    if (sole !== null) {
      try {
        sole.onContextCanceled(err);
      } catch {
        // cancel never throws; a listener's failure is its own.
      }
    }
    const ls = this.listeners;
    this.listeners = null;
    if (ls)
      for (const fn of ls) {
        try {
          if (typeof fn === 'function') fn(err);
          else fn.onContextCanceled(err);
        } catch {
          // cancel never throws; a listener's failure is its own.
        }
      }
    if (this.controller) this.controller.abort(err);
  }

  /**
   * Runs `fn` when the context is canceled (at once if it already is). Returns a function
   * that removes it. Transports use this to stop the current read or write.
   */
  onCancel(fn: (err: Error) => void): () => void {
    if (this.cancelMessage !== null) {
      fn(new CanceledError(this.cancelMessage));
      return noop;
    }
    // A new list holds just this one (a push onto an empty array reserves 17 slots).
    if (this.listeners === null) this.listeners = [fn];
    else this.listeners.push(fn);
    return () => {
      const ls = this.listeners;
      if (!ls) return;
      const i = ls.indexOf(fn);
      if (i >= 0) ls.splice(i, 1);
    };
  }

  /**
   * Like {@link RequestContext.onCancel} for an object: `listener.onContextCanceled(err)` runs
   * on cancel (at once if already canceled). No closure is made, so protocol drivers register
   * one per exchange at no garbage cost; remove it with {@link RequestContext.removeCancelListener}.
   */
  addCancelListener(listener: CancelListener): void {
    if (this.cancelMessage !== null) {
      listener.onContextCanceled(new CanceledError(this.cancelMessage));
      return;
    }
    if (this.listeners === null) {
      if (this.sole === null) this.sole = listener;
      else this.listeners = [listener];
    } else this.listeners.push(listener);
  }

  /** Removes a listener added with {@link RequestContext.addCancelListener} (nothing when absent). */
  removeCancelListener(listener: CancelListener): void {
    if (this.sole === listener) {
      this.sole = null;
      return;
    }
    const ls = this.listeners;
    if (ls === null) return;
    if (ls.length === 1) {
      if (ls[0] === listener) this.listeners = null;
      return;
    }
    const i = ls.indexOf(listener);
    if (i >= 0) ls.splice(i, 1);
  }

  /** The error a request fails with now: CanceledError when canceled, TimeoutError when expired, else null. */
  error(now?: number): Error | null {
    if (this.cancelMessage !== null) return new CanceledError(this.cancelMessage);
    if (this.expired(now)) return new TimeoutError('request', 0, 0, 'request deadline expired');
    return null;
  }

  /**
   * An AbortSignal that aborts on cancel (reason: CanceledError) or at the deadline
   * (reason: TimeoutError). Created on first use, so contexts that never need it pay nothing.
   */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.cancelMessage !== null) this.controller.abort(new CanceledError(this.cancelMessage));
      else this.armTimer();
    }
    return this.controller.signal;
  }

  private armTimer(): void {
    if (!this.controller || this.deadline === 0 || this.controller.signal.aborted) return;
    const ms = this.deadline - performance.now();
    if (ms <= 0) {
      this.controller.abort(new TimeoutError('request', 0, 0, 'request deadline expired'));
      return;
    }
    // Timers run on a coarser, possibly lagging clock and overflow past 2^31-1 ms (Node then
    // fires after 1 ms), so wait at most that long and check the deadline again on wake-up.
    this.timer = setTimeout(
      () => {
        this.timer = null;
        this.armTimer();
      },
      Math.min(Math.ceil(ms), MAX_TIMER_MS),
    );
    this.timer.unref();
  }
}

function noop(): void {}

/** @internal The key the client stores a call's merged options under (see `getCallOptions`); the context keeps them in a field of its own. */
export const kCallOptions: unique symbol = Symbol.for('switchyard.callOptions') as never;

/** Longest delay `setTimeout` takes without overflowing. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Replaces the deadline of `ctx` (absolute `performance.now()` ms); 0 removes it. */
export function setDeadline(ctx: RequestContext, deadline: number): void {
  ctx.setDeadline(deadline);
}

/** Cancels `ctx` with `message` (default `request canceled`); never throws. */
export function cancel(ctx: RequestContext, options: { message?: string } | string | null = {}): void {
  ctx.cancel(typeof options === 'string' ? options : (options?.message ?? undefined));
}

/** True when `ctx` was canceled. */
export function canceled(ctx: RequestContext): boolean {
  return ctx.canceled;
}

/** True when `ctx` has a deadline and `now` has reached it. */
export function expired(ctx: RequestContext, now?: number): boolean {
  return ctx.expired(now);
}
