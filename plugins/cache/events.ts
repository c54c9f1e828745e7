/**
 * The cache plugin's trace events, delivered to a call's `trace` callback beside the kernel's.
 */
import { ClientEvent } from '../../kernel/index.js';

/** A stored response answered the call without the network (`status` says whether it was stale). */
export class CacheHitEvent extends ClientEvent {
  /** `CacheHitEvent`. */
  readonly type = 'CacheHitEvent';
  constructor(
    /** The request URL. */
    readonly url: string,
    /** The stored response's current age in seconds. */
    readonly age: number,
    /** `'hit'` (fresh, or allowed by the call), `'stale'` (stale-while-revalidate, stale-if-error). */
    readonly status: 'hit' | 'stale',
  ) {
    super();
  }
}

/** No stored response could answer: the request goes to the network (or fails with 504 for only-if-cached). */
export class CacheMissEvent extends ClientEvent {
  /** `CacheMissEvent`. */
  readonly type = 'CacheMissEvent';
  constructor(
    /** The request URL. */
    readonly url: string,
    /** Why: `'absent'` (nothing stored), `'stale'` (revalidating), `'reload'`, `'no-cache'`. */
    readonly reason: 'absent' | 'stale' | 'reload' | 'no-cache',
  ) {
    super();
  }
}

/** The origin answered a revalidation with 304: the stored response was updated and served. */
export class CacheRevalidatedEvent extends ClientEvent {
  /** `CacheRevalidatedEvent`. */
  readonly type = 'CacheRevalidatedEvent';
  constructor(
    /** The request URL. */
    readonly url: string,
  ) {
    super();
  }
}
