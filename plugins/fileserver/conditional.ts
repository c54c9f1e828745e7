/**
 * Conditional requests (RFC 9110 §13.2.2): preconditions evaluated in the standard's order,
 * and `If-Range` (§13.1.5).
 */
import type { Headers } from '../../kernel/index.js';
import { isWeak, listMatches, parseEtagList, strongMatch } from './etag.js';
import { parseHttpDate } from './http-date.js';

/** What a response's validators are: its entity tag and its modification time (whole seconds, ms). */
export interface Validators {
  /** The normalized entity tag, or null when none is sent. */
  readonly etag: string | null;
  /** `Last-Modified` in milliseconds, truncated to the second, or null when none is sent. */
  readonly lastModified: number | null;
}

/** Outcome of the preconditions: go on (0), answer 304 Not Modified, or 412 Precondition Failed. */
export type PreconditionResult = 0 | 304 | 412;

/**
 * Evaluates `If-Match`, `If-Unmodified-Since`, `If-None-Match` and `If-Modified-Since` in
 * RFC 9110 §13.2.2 order:
 * 1. `If-Match` present: no strong match → 412;
 * 2. else `If-Unmodified-Since` (a valid date, validator known): modified after it → 412;
 * 3. `If-None-Match` present: a weak match → 304 for GET/HEAD, 412 otherwise;
 * 4. else for GET/HEAD, `If-Modified-Since` (a valid date): not modified since → 304.
 */
export function evaluatePreconditions(method: string, headers: Headers, v: Validators): PreconditionResult {
  const getOrHead = method === 'GET' || method === 'HEAD';
  const ifMatch = headers.get('If-Match');
  if (ifMatch !== undefined) {
    if (!listMatches(ifMatch, v.etag, true)) return 412;
  } else {
    const ius = headers.get('If-Unmodified-Since');
    if (ius !== undefined && v.lastModified !== null) {
      const t = parseHttpDate(ius);
      if (t !== null && v.lastModified > t) return 412;
    }
  }
  const ifNoneMatch = headers.get('If-None-Match');
  if (ifNoneMatch !== undefined) {
    if (listMatches(ifNoneMatch, v.etag, false)) return getOrHead ? 304 : 412;
  } else if (getOrHead) {
    const ims = headers.get('If-Modified-Since');
    if (ims !== undefined && v.lastModified !== null) {
      const t = parseHttpDate(ims);
      if (t !== null && v.lastModified <= t) return 304;
    }
  }
  return 0;
}

/**
 * True when a `Range` may be honoured given `If-Range`: no `If-Range`; an entity tag that
 * strongly matches the current (strong) tag; or a date equal to `Last-Modified`. Otherwise
 * the whole representation is sent.
 */
export function ifRangeAllows(headers: Headers, v: Validators): boolean {
  const ir = headers.get('If-Range');
  if (ir === undefined) return true;
  const value = ir.trim();
  if (value.startsWith('"') || value.startsWith('W/"')) {
    if (v.etag === null || isWeak(v.etag)) return false;
    const list = parseEtagList(value);
    return list !== '*' && list.length === 1 && strongMatch(list[0]!, v.etag);
  }
  const t = parseHttpDate(value);
  return t !== null && v.lastModified !== null && t === v.lastModified;
}
