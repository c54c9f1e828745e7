/**
 * The mock plugin's errors: a request no interceptor answers, and interceptors a test declared
 * but did not use up.
 */
import { HTTPError } from '../../kernel/index.js';

/**
 * A request reached the mock plugin and no interceptor (nor recorded exchange) matched it, and
 * the network is not allowed for its origin. The message names the closest interceptor and
 * what about it differs.
 */
export class MockNotMatchedError extends HTTPError {
  /** Always `SWY_ERR_MOCK_NOT_MATCHED`. */
  readonly code = 'SWY_ERR_MOCK_NOT_MATCHED';
  /** The request's method. */
  readonly method: string;
  /** The request's absolute URL. */
  readonly url: string;
  /** The closest interceptor, described (`GET https://api.example.com/users`), or null when none is declared. */
  readonly closest: string | null;
  constructor(method: string, url: string, closest: string | null, why: string) {
    const near = closest === null ? 'no interceptor is declared' : `the closest interceptor is ${closest} (${why})`;
    super(`no mock interceptor matches ${method} ${url}: ${near}; declare one with mocks.intercept({ origin, method, path }), or let the origin use the network with allowNetwork`);
    this.method = method;
    this.url = url;
    this.closest = closest;
  }
}

/** `assertNoPending()` found interceptors a test declared and did not use up. */
export class MockPendingError extends HTTPError {
  /** Always `SWY_ERR_MOCK_PENDING`. */
  readonly code = 'SWY_ERR_MOCK_PENDING';
  /** The pending interceptors, described as in the message. */
  readonly pending: readonly string[];
  constructor(pending: readonly string[]) {
    super(`${pending.length} mock interceptor${pending.length === 1 ? ' was' : 's were'} not used up:\n${pending.map((p) => `  - ${p}`).join('\n')}`);
    this.pending = pending;
  }
}
