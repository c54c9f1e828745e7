/**
 * The error of the redirects plugin: the redirect limit was passed.
 */
import { HTTPError, type Response } from '../../kernel/index.js';

/** The redirect limit was reached and another redirect arrived. */
export class TooManyRedirectsError extends HTTPError {
  /** Always `SWY_ERR_TOO_MANY_REDIRECTS`. */
  readonly code = 'SWY_ERR_TOO_MANY_REDIRECTS';
  /** The redirect limit that was reached. */
  readonly limit: number;
  /** The last redirect response. */
  readonly response: Response;
  constructor(limit: number, response: Response) {
    super(`too many redirects (limit ${limit})`);
    this.limit = limit;
    this.response = response;
  }
}
