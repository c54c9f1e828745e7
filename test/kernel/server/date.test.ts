/**
 * The Date field's cache: one format per second, no clock read per response, dropped by a timer
 * at the next second boundary (fake timers: the module is fresh in this file).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { dateField, httpDate } from '../../../kernel/server/date.js';

describe('httpDate / dateField', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('formats the current second once and moves to the next at its boundary', () => {
    vi.useFakeTimers({ now: new Date('2026-01-01T00:00:00.600Z') });
    expect(httpDate()).toBe('Thu, 01 Jan 2026 00:00:00 GMT');
    expect(dateField()).toBe('Date: Thu, 01 Jan 2026 00:00:00 GMT\r\n');
    vi.advanceTimersByTime(399);
    expect(httpDate()).toBe('Thu, 01 Jan 2026 00:00:00 GMT');
    vi.advanceTimersByTime(1);
    expect(httpDate()).toBe('Thu, 01 Jan 2026 00:00:01 GMT');
    expect(dateField()).toBe('Date: Thu, 01 Jan 2026 00:00:01 GMT\r\n');
    // Idle for a while (no timer kept running), then asked again: the current second.
    vi.advanceTimersByTime(5000);
    expect(vi.getTimerCount()).toBe(0);
    expect(dateField()).toBe('Date: Thu, 01 Jan 2026 00:00:06 GMT\r\n');
  });
});
