/**
 * The error of the sse plugin: one event over `maxLen`, on either side.
 */
import { HTTPError } from '../../kernel/index.js';

/** Which side refused the event: a server `SSEStream.write`, or a client parsing a stream. */
export type SSESide = 'write' | 'parse';

/**
 * An event is larger than `maxLen` bytes (its field lines with their line ends, not the blank
 * line that ends it). On `write` nothing of the event was queued; while parsing, the stream
 * is abandoned (the connection is closed) before the event is kept in memory whole.
 */
export class SSEEventTooLargeError extends HTTPError {
  /** Always `SWY_ERR_SSE_EVENT_TOO_LARGE`. */
  readonly code = 'SWY_ERR_SSE_EVENT_TOO_LARGE';
  /** The bound, in bytes. */
  readonly maxLen: number;
  /** Bytes of the event when refused (while parsing: as far as it was read). */
  readonly size: number;
  /** `write` (server) or `parse` (client). */
  readonly side: SSESide;
  constructor(maxLen: number, size: number, side: SSESide) {
    super(
      side === 'write'
        ? `SSE event of ${size} bytes exceeds maxLen (${maxLen}); nothing of it was written`
        : `SSE event exceeds maxLen (${maxLen} bytes; ${size} read so far); the stream was abandoned`,
    );
    this.maxLen = maxLen;
    this.size = size;
    this.side = side;
  }
}
