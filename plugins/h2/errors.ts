/**
 * The error of the h2 plugin's client: a stream the server reset (RST_STREAM), with the
 * HTTP/2 error code it gave.
 */
import { ProtocolError } from '../../kernel/index.js';

const REFUSED_STREAM = 7;

/** Names of the HTTP/2 error codes (RFC 9113 §7), by code. */
const ERROR_NAMES: readonly string[] = [
  'NO_ERROR',
  'PROTOCOL_ERROR',
  'INTERNAL_ERROR',
  'FLOW_CONTROL_ERROR',
  'SETTINGS_TIMEOUT',
  'STREAM_CLOSED',
  'FRAME_SIZE_ERROR',
  'REFUSED_STREAM',
  'CANCEL',
  'COMPRESSION_ERROR',
  'CONNECT_ERROR',
  'ENHANCE_YOUR_CALM',
  'INADEQUATE_SECURITY',
  'HTTP_1_1_REQUIRED',
];

/** The name of an HTTP/2 error code (`CANCEL` for 8), or `0x…` for one RFC 9113 does not define. */
export function h2ErrorName(code: number): string {
  return ERROR_NAMES[code] ?? `0x${code.toString(16)}`;
}

/**
 * The server reset the request's HTTP/2 stream (RST_STREAM) before the response was complete.
 * A {@link ProtocolError} (`code` `SWY_ERR_PROTOCOL`) that also carries the HTTP/2 error code.
 * `REFUSED_STREAM` means the server did not process the request: the client first sends it
 * again (up to 3 times, whatever the method) when its body can be sent again, and this error
 * reaches the caller only when that is not possible or the server keeps refusing.
 */
export class H2StreamResetError extends ProtocolError {
  /** The HTTP/2 error code of the RST_STREAM frame (RFC 9113 §7), such as 8 for CANCEL. */
  readonly errorCode: number;
  /** Its name, such as `CANCEL` or `REFUSED_STREAM` (`0x…` for a code RFC 9113 does not define). */
  readonly errorName: string;
  /** True when the response head had arrived (the reset cut its body short). */
  readonly afterHead: boolean;
  constructor(errorCode: number, afterHead: boolean) {
    const name = h2ErrorName(errorCode);
    const what =
      errorCode === REFUSED_STREAM && !afterHead
        ? 'refused the HTTP/2 stream; it did not process the request'
        : `reset the HTTP/2 stream ${afterHead ? 'before the response body ended' : 'before the response head'}`;
    super(`the server ${what} (${name}, code ${errorCode})`);
    this.errorCode = errorCode;
    this.errorName = name;
    this.afterHead = afterHead;
  }
}
