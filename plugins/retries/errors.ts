/**
 * The error of the retries plugin: the failure a `retryIf` callback is given.
 */
import { HTTPError } from '../../kernel/index.js';

/** Wraps a request-path failure when it is passed to `retryIf`; the original is `err`. */
export class RequestRetryError extends HTTPError {
  /** Always `SWY_ERR_REQUEST_RETRY`. */
  readonly code = 'SWY_ERR_REQUEST_RETRY';
  /** The underlying failure. */
  readonly err: unknown;
  constructor(err: unknown) {
    super(`request failed: ${describe(err)}`, { cause: err });
    this.err = err;
  }
}

/** The message of a failure, for error messages. */
export function describe(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
