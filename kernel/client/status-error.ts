/**
 * The error a request helper throws for a status it does not take as success. It carries the
 * response, so it sits with the client rather than with the kernel's other errors, which the
 * message model itself uses.
 */
import { HTTPError } from '../errors.js';
import type { Response } from '../message/response.js';

/** A request helper received a status of 300 or above that is not a followed redirect. */
export class StatusError extends HTTPError {
  /** Always `SWY_ERR_STATUS`. */
  readonly code = 'SWY_ERR_STATUS';
  /** The response status. */
  readonly status: number;
  /** The whole response, body included. */
  readonly response: Response;
  constructor(status: number, response: Response) {
    const req = response.request;
    super(`${req ? `${req.method} ${response.url || req.target} ` : ''}returned status ${status}`);
    this.status = status;
    this.response = response;
  }
}
