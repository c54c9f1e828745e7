/** The status a server answers a request it cannot read with. */
import { ProtocolError, TimeoutError } from '../errors.js';

/** @internal Status for a head or body error: 431/414 for limits, 413 past `maxBodyBytes`, 501 for a transfer coding not implemented, 400 otherwise. */
export function statusFor(err: unknown): number {
  if (err instanceof ProtocolError) {
    if (err.notImplemented) return 501;
    if (err.limit === 'maxHeaderBytes') return 431;
    if (err.limit === 'maxLineBytes') return err.line === 'request line' ? 414 : 431;
    if (err.limit === 'maxBodyBytes') return 413;
    return 400;
  }
  return 400;
}

/** @internal Status for a request body that failed: 408 when it was too slow, else {@link statusFor}. */
export function bodyStatus(err: unknown): number {
  return err instanceof TimeoutError ? 408 : statusFor(err);
}
