import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { ArgumentError, CanceledError, TimeoutError } from '../../../kernel/errors.js';
import { RequestContext, cancel, canceled, expired, setDeadline } from '../../../kernel/message/index.js';

/** Resolves when `signal` aborts, with its reason. */
async function aborted(signal: AbortSignal): Promise<unknown> {
  if (!signal.aborted) await once(signal, 'abort');
  return signal.reason;
}

describe('RequestContext: deadline', () => {
  it('has no deadline by default', () => {
    const ctx = new RequestContext();
    expect(ctx.deadline).toBe(0);
    expect(expired(ctx)).toBe(false);
    expect(expired(ctx, Number.MAX_SAFE_INTEGER)).toBe(false);
    expect(ctx.remaining()).toBe(Infinity);
  });

  it('takes a deadline option', () => {
    expect(new RequestContext({ deadline: 1234.5 }).deadline).toBe(1234.5);
  });

  it.each([
    [99, false],
    [99.999, false],
    [100, true],
    [101, true],
  ])('with deadline 100, expired(ctx, %d) is %s', (now, expected) => {
    const ctx = new RequestContext({ deadline: 100 });
    expect(expired(ctx, now)).toBe(expected);
    expect(ctx.expired(now)).toBe(expected);
  });

  it('expired(ctx) uses performance.now() by default', () => {
    expect(expired(new RequestContext({ deadline: performance.now() - 1 }))).toBe(true);
    expect(expired(new RequestContext({ deadline: performance.now() + 60_000 }))).toBe(false);
  });

  it('remaining() counts down to 0', () => {
    const ctx = new RequestContext({ deadline: 100 });
    expect(ctx.remaining(40)).toBe(60);
    expect(ctx.remaining(100)).toBe(0);
    expect(ctx.remaining(150)).toBe(0);
  });

  it('setDeadline replaces the deadline and 0 removes it', () => {
    const ctx = new RequestContext({ deadline: 100 });
    setDeadline(ctx, 200);
    expect(ctx.deadline).toBe(200);
    expect(expired(ctx, 150)).toBe(false);
    expect(expired(ctx, 200)).toBe(true);
    setDeadline(ctx, 0);
    expect(ctx.deadline).toBe(0);
    expect(expired(ctx, 1e12)).toBe(false);
    ctx.setDeadline(50);
    expect(expired(ctx, 60)).toBe(true);
  });

  it.each([-1, Number.NaN, '100', {}])('rejects the deadline %j with ArgumentError', (bad) => {
    expect(() => new RequestContext({ deadline: bad as never })).toThrow(ArgumentError);
    expect(() => new RequestContext({ deadline: bad as never })).toThrow(/deadline must be a non-negative number/);
    expect(() => setDeadline(new RequestContext(), bad as never)).toThrow(ArgumentError);
  });

  it('rejects options that are not an object', () => {
    expect(() => new RequestContext(5 as never)).toThrow(ArgumentError);
  });
});

describe('RequestContext: cancel', () => {
  it('marks the context canceled with the message', () => {
    const ctx = new RequestContext();
    expect(canceled(ctx)).toBe(false);
    expect(ctx.reason).toBeNull();
    cancel(ctx, { message: 'user pressed stop' });
    expect(canceled(ctx)).toBe(true);
    expect(ctx.canceled).toBe(true);
    expect(ctx.reason).toBe('user pressed stop');
  });

  it('uses "request canceled" when no message is given', () => {
    const ctx = new RequestContext();
    cancel(ctx);
    expect(ctx.reason).toBe('request canceled');
    const ctx2 = new RequestContext();
    cancel(ctx2, {});
    expect(ctx2.reason).toBe('request canceled');
  });

  it('accepts the message as a string', () => {
    const ctx = new RequestContext();
    cancel(ctx, 'bye');
    expect(ctx.reason).toBe('bye');
  });

  it('does nothing the second time and never throws', () => {
    const ctx = new RequestContext();
    let calls = 0;
    ctx.onCancel(() => calls++);
    expect(() => cancel(ctx, { message: 'first' })).not.toThrow();
    expect(() => cancel(ctx, { message: 'second' })).not.toThrow();
    expect(ctx.reason).toBe('first');
    expect(calls).toBe(1);
  });

  it('does not throw when a listener throws, and still runs the other listeners', () => {
    const ctx = new RequestContext();
    const seen: string[] = [];
    ctx.onCancel(() => {
      throw new Error('listener bug');
    });
    ctx.onCancel((err) => seen.push(err.message));
    expect(() => cancel(ctx, { message: 'm' })).not.toThrow();
    expect(seen).toEqual(['m']);
  });

  it('runs onCancel listeners with a CanceledError carrying the message', () => {
    const ctx = new RequestContext();
    const errs: Error[] = [];
    ctx.onCancel((e) => errs.push(e));
    ctx.onCancel((e) => errs.push(e));
    cancel(ctx, { message: 'stop now' });
    expect(errs).toHaveLength(2);
    for (const e of errs) {
      expect(e).toBeInstanceOf(CanceledError);
      expect(e.message).toBe('stop now');
    }
  });

  it('tells cancel listener objects, in order with functions, and forgets removed ones', () => {
    const ctx = new RequestContext();
    const seen: string[] = [];
    const a = { onContextCanceled: (e: Error) => seen.push(`a:${e.message}`) };
    const b = { onContextCanceled: (e: Error) => seen.push(`b:${e.message}`) };
    const gone = { onContextCanceled: () => seen.push('gone') };
    ctx.addCancelListener(a);
    ctx.onCancel((e) => seen.push(`fn:${e.message}`));
    ctx.addCancelListener(gone);
    ctx.addCancelListener(b);
    ctx.removeCancelListener(gone);
    ctx.removeCancelListener({ onContextCanceled: () => undefined });
    cancel(ctx, { message: 'x' });
    expect(seen).toEqual(['a:x', 'fn:x', 'b:x']);
    // Added after cancel: told at once, with a CanceledError.
    let late: Error | null = null;
    ctx.addCancelListener({ onContextCanceled: (e) => (late = e) });
    expect(late).toBeInstanceOf(CanceledError);
    const solo = new RequestContext();
    const only = { onContextCanceled: () => seen.push('only') };
    solo.addCancelListener(only);
    solo.removeCancelListener(only);
    cancel(solo, { message: 'y' });
    expect(seen).not.toContain('only');
    // A listener removed and added again, after others came, is told after them.
    const again = new RequestContext();
    const order: string[] = [];
    const first = { onContextCanceled: () => order.push('first') };
    again.addCancelListener(first);
    again.onCancel(() => order.push('fn'));
    again.removeCancelListener(first);
    again.addCancelListener(first);
    const second = { onContextCanceled: () => order.push('second') };
    again.addCancelListener(second);
    again.removeCancelListener(second);
    cancel(again, { message: 'z' });
    expect(order).toEqual(['fn', 'first']);
  });

  it('runs a listener added after cancel at once', () => {
    const ctx = new RequestContext();
    cancel(ctx, { message: 'late' });
    const errs: Error[] = [];
    ctx.onCancel((e) => errs.push(e));
    expect(errs).toHaveLength(1);
    expect(errs[0]).toBeInstanceOf(CanceledError);
    expect(errs[0]!.message).toBe('late');
  });

  it('a removed listener is not called', () => {
    const ctx = new RequestContext();
    let calls = 0;
    const off = ctx.onCancel(() => calls++);
    off();
    off();
    cancel(ctx);
    expect(calls).toBe(0);
  });

  it('aborts the signal with a CanceledError carrying the message', async () => {
    const ctx = new RequestContext();
    const signal = ctx.signal;
    expect(signal.aborted).toBe(false);
    const done = aborted(signal);
    cancel(ctx, { message: 'client went away' });
    const reason = await done;
    expect(reason).toBeInstanceOf(CanceledError);
    expect((reason as CanceledError).message).toBe('client went away');
  });

  it('a signal taken after cancel is already aborted', () => {
    const ctx = new RequestContext();
    cancel(ctx, { message: 'early' });
    expect(ctx.signal.aborted).toBe(true);
    expect(ctx.signal.reason).toBeInstanceOf(CanceledError);
    expect((ctx.signal.reason as Error).message).toBe('early');
  });

  it('returns the same signal each time', () => {
    const ctx = new RequestContext();
    expect(ctx.signal).toBe(ctx.signal);
  });

  it('error() reports cancel, then nothing else', () => {
    const ctx = new RequestContext({ deadline: 100 });
    expect(ctx.error(50)).toBeNull();
    expect(ctx.error(100)).toBeInstanceOf(TimeoutError);
    cancel(ctx, { message: 'x' });
    const err = ctx.error(50);
    expect(err).toBeInstanceOf(CanceledError);
    expect(err!.message).toBe('x');
  });
});

describe('RequestContext: signal at the deadline', () => {
  it('aborts with a TimeoutError (operation "request") at the deadline', async () => {
    const ctx = new RequestContext({ deadline: performance.now() + 5 });
    const reason = await aborted(ctx.signal);
    expect(reason).toBeInstanceOf(TimeoutError);
    expect((reason as TimeoutError).operation).toBe('request');
    expect((reason as TimeoutError).message).toMatch(/deadline/);
    // when the signal fires, the deadline has really been reached
    expect(expired(ctx)).toBe(true);
    expect(canceled(ctx)).toBe(false);
  });

  it('does not abort early, even when created right after the event loop was blocked', async () => {
    // A blocked loop leaves the timer clock behind real time, so a plain setTimeout can fire
    // before performance.now() reaches the deadline.
    for (let round = 0; round < 5; round++) {
      const t = performance.now();
      while (performance.now() - t < 15) {
        // busy wait on purpose: block the loop
      }
      const ctx = new RequestContext({ deadline: performance.now() + 3 });
      await aborted(ctx.signal);
      expect(ctx.remaining()).toBe(0);
      expect(expired(ctx)).toBe(true);
    }
  });

  it('aborts at once when the deadline has already passed', () => {
    const ctx = new RequestContext({ deadline: performance.now() - 10 });
    expect(ctx.signal.aborted).toBe(true);
    expect(ctx.signal.reason).toBeInstanceOf(TimeoutError);
  });

  it('aborts at a deadline set after the signal was taken', async () => {
    const ctx = new RequestContext();
    const signal = ctx.signal;
    setDeadline(ctx, performance.now() + 5);
    const reason = await aborted(signal);
    expect(reason).toBeInstanceOf(TimeoutError);
  });

  it('follows setDeadline to an earlier deadline', async () => {
    const ctx = new RequestContext({ deadline: performance.now() + 600_000 });
    const signal = ctx.signal;
    setDeadline(ctx, performance.now() + 5);
    expect(await aborted(signal)).toBeInstanceOf(TimeoutError);
  });

  it('does not abort after setDeadline(ctx, 0) removed the deadline', async () => {
    const ctx = new RequestContext({ deadline: performance.now() + 5 });
    const signal = ctx.signal;
    setDeadline(ctx, 0);
    const later = new RequestContext({ deadline: performance.now() + 20 });
    await aborted(later.signal);
    expect(signal.aborted).toBe(false);
  });

  it('does not abort early for a deadline beyond the 32-bit timer range', async () => {
    const days40 = 40 * 24 * 3600 * 1000;
    const far = new RequestContext({ deadline: performance.now() + days40 });
    const signal = far.signal;
    const near = new RequestContext({ deadline: performance.now() + 20 });
    await aborted(near.signal);
    expect(signal.aborted).toBe(false);
  });

  it('cancel before the deadline aborts with CanceledError, not TimeoutError', async () => {
    const ctx = new RequestContext({ deadline: performance.now() + 10 });
    const signal = ctx.signal;
    cancel(ctx, { message: 'first' });
    expect(await aborted(signal)).toBeInstanceOf(CanceledError);
  });
});

describe('RequestContext: child contexts', () => {
  it.each([
    ['parent earlier', 100, 200, 100],
    ['child earlier', 200, 100, 100],
    ['only the parent has one', 100, 0, 100],
    ['only the child has one', 0, 100, 100],
    ['neither', 0, 0, 0],
  ])('the earlier deadline wins: %s', (_name, parentDeadline, childDeadline, expected) => {
    const parent = new RequestContext({ deadline: parentDeadline });
    expect(parent.child(childDeadline).deadline).toBe(expected);
    expect(new RequestContext({ deadline: childDeadline, parent }).deadline).toBe(expected);
  });

  it('is canceled with its parent, with the parent’s message', async () => {
    const parent = new RequestContext();
    const child = parent.child();
    const grandchild = child.child();
    const signal = grandchild.signal;
    cancel(parent, { message: 'shutdown' });
    expect(canceled(child)).toBe(true);
    expect(child.reason).toBe('shutdown');
    expect(canceled(grandchild)).toBe(true);
    const reason = await aborted(signal);
    expect(reason).toBeInstanceOf(CanceledError);
    expect((reason as Error).message).toBe('shutdown');
  });

  it('is canceled at once when made from a canceled parent', () => {
    const parent = new RequestContext();
    cancel(parent, { message: 'gone' });
    const child = parent.child();
    expect(canceled(child)).toBe(true);
    expect(child.reason).toBe('gone');
  });

  it('canceling a child leaves the parent alone', () => {
    const parent = new RequestContext();
    const child = parent.child();
    cancel(child);
    expect(canceled(child)).toBe(true);
    expect(canceled(parent)).toBe(false);
  });

  it('has its own application data', () => {
    const parent = new RequestContext();
    parent.set('k', 1);
    const child = parent.child();
    expect(child.get('k')).toBeUndefined();
  });
});

describe('RequestContext: application data', () => {
  it('get/set with string and symbol keys', () => {
    const ctx = new RequestContext();
    const sym = Symbol('route');
    expect(ctx.set('user', { id: 1 })).toBe(ctx);
    ctx.set(sym, '/users/:id');
    expect(ctx.get('user')).toEqual({ id: 1 });
    expect(ctx.get(sym)).toBe('/users/:id');
    expect(ctx.data.get('user')).toEqual({ id: 1 });
  });

  it('get returns the default for an absent key, undefined without one', () => {
    const ctx = new RequestContext();
    expect(ctx.get('missing')).toBeUndefined();
    expect(ctx.get('missing', 42)).toBe(42);
  });

  it('a stored falsy value wins over the default', () => {
    const ctx = new RequestContext();
    ctx.set('zero', 0).set('empty', '').set('undef', undefined).set('nil', null);
    expect(ctx.get('zero', 5)).toBe(0);
    expect(ctx.get('empty', 'x')).toBe('');
    expect(ctx.get('undef', 'x')).toBeUndefined();
    expect(ctx.get('nil', 'x')).toBeNull();
  });

  it('set replaces a value', () => {
    const ctx = new RequestContext();
    ctx.set('a', 1);
    ctx.set('a', 2);
    expect(ctx.get('a')).toBe(2);
    expect(ctx.data.size).toBe(1);
  });
});

describe('detach', () => {
  it('a detached child no longer follows its parent', () => {
    const parent = new RequestContext();
    const child = parent.child(0);
    child.detach();
    parent.cancel('stop');
    expect(parent.canceled).toBe(true);
    expect(child.canceled).toBe(false);
    const other = parent.child(0);
    expect(other.canceled).toBe(true);
  });
});
