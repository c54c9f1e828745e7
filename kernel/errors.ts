/**
 * The kernel's error classes. Every error is a class exported by name, carries the fields the
 * reference gives it, and a stable `code` string for programs that switch on it. This module
 * imports nothing, so every part of the kernel can use it; `StatusError`, which carries a
 * `Response`, is the client's (client/status-error.ts), and a plugin's own errors live in that
 * plugin (`TooManyRedirectsError`, `DecompressionLimitError`, `RequestRetryError`, …).
 */

/** Abstract supertype of the HTTP-specific errors. */
export abstract class HTTPError extends Error {
  /** Stable machine-readable code, such as `SWY_ERR_PARSE`. */
  abstract readonly code: string;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Bytes that cannot be parsed: a malformed request or status line, header syntax, chunk size, or a truncated framed body. */
export class ParseError extends HTTPError {
  /** Always `SWY_ERR_PARSE`. */
  readonly code = 'SWY_ERR_PARSE';
}

/** Which configured limit a {@link ProtocolError} reports. */
export type LimitName = 'maxLineBytes' | 'maxHeaderBytes' | 'maxBodyBytes';

/** Bytes that parse but break a framing rule: conflicting Content-Length, Content-Length with Transfer-Encoding, a limit exceeded. */
export class ProtocolError extends HTTPError {
  /** Always `SWY_ERR_PROTOCOL`. */
  readonly code = 'SWY_ERR_PROTOCOL';
  /** The limit that was exceeded, or null when a framing rule was broken. Servers map it to 414/431/413. */
  readonly limit: LimitName | null;
  /** For a `maxLineBytes` error, the line that was too long (`request line`, `header line`, …), else empty. */
  readonly line: string;
  /**
   * True when the message is well-formed but uses something this side does not implement (a
   * transfer coding other than chunked). Servers answer 501 (Not Implemented) rather than 400.
   */
  readonly notImplemented: boolean;
  constructor(message: string, options?: { cause?: unknown; limit?: LimitName; line?: string; notImplemented?: boolean }) {
    super(message, options);
    this.limit = options?.limit ?? null;
    this.line = options?.line ?? '';
    this.notImplemented = options?.notImplemented ?? false;
  }
}

/** Processing was canceled through a `RequestContext`; `message` is the one given to `cancel`. */
export class CanceledError extends HTTPError {
  /** Always `SWY_ERR_CANCELED`. */
  readonly code = 'SWY_ERR_CANCELED';
  constructor(message = 'request canceled', options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** Which step a {@link TimeoutError} interrupted. */
export type TimeoutOperation = 'connect' | 'tls_handshake' | 'websocket handshake' | 'request';

/** A client timeout or deadline expired. */
export class TimeoutError extends HTTPError {
  /** Always `SWY_ERR_TIMEOUT`. */
  readonly code = 'SWY_ERR_TIMEOUT';
  /** `connect` or `tls_handshake` for `connectTimeout`, `websocket handshake`, or `request` for every other timeout and deadline. */
  readonly operation: TimeoutOperation;
  /** The timeout that expired, in milliseconds; 0 when unknown. */
  readonly timeoutMs: number;
  /** Time spent before it expired, in milliseconds; 0 when unknown. */
  readonly elapsedMs: number;
  constructor(operation: TimeoutOperation, timeoutMs = 0, elapsedMs = 0, message?: string) {
    super(message ?? `${operation} timed out${timeoutMs > 0 ? ` after ${timeoutMs} ms` : ''}`);
    this.operation = operation;
    this.timeoutMs = timeoutMs;
    this.elapsedMs = elapsedMs;
  }
}

/** Alias of {@link TimeoutError}, under the reference's other name. */
export const HTTPTimeoutError = TimeoutError;
/** Alias of {@link TimeoutError}, under the reference's other name. */
export type HTTPTimeoutError = TimeoutError;

/**
 * A buffered response body grew past `maxResponseBytes` (or declared a `Content-Length` past
 * it). The connection is closed. Stream a larger body with `responseStream` (a file, any
 * Writable) or `dispatch`, or raise `maxResponseBytes`.
 */
export class ResponseTooLargeError extends HTTPError {
  /** Always `SWY_ERR_RESPONSE_TOO_LARGE`. */
  readonly code = 'SWY_ERR_RESPONSE_TOO_LARGE';
  /** The bound that was passed (`maxResponseBytes`), in bytes. */
  readonly limit: number;
  /** Body bytes received when the call gave up (after decoding, when the body was compressed). */
  readonly received: number;
  /** The response's declared `Content-Length`, or -1 when it had none (or it was decoded). */
  readonly contentLength: number;
  constructor(limit: number, received: number, contentLength = -1, message?: string) {
    const what = contentLength > limit ? `declares ${contentLength} bytes (Content-Length)` : `passed ${limit} bytes`;
    super(
      message ?? `response body ${what}, more than maxResponseBytes (${limit}) allows in memory; pass responseStream to write it to a file or other Writable, or raise maxResponseBytes (0 = no bound)`,
    );
    this.limit = limit;
    this.received = received;
    this.contentLength = contentLength;
  }
}

/** The client could not connect to `address` (`host:port`). */
export class ConnectError extends HTTPError {
  /** Always `SWY_ERR_CONNECT`. */
  readonly code = 'SWY_ERR_CONNECT';
  /** `host:port` that could not be reached. */
  readonly address: string;
  constructor(address: string, cause: unknown) {
    super(`cannot connect to ${address}: ${describe(cause)}`, { cause });
    this.address = address;
  }
}

/** The client could not resolve `hostname`. */
export class DNSError extends HTTPError {
  /** Always `SWY_ERR_DNS`. */
  readonly code = 'SWY_ERR_DNS';
  /** The name that did not resolve. */
  readonly hostname: string;
  constructor(hostname: string, cause: unknown) {
    super(`cannot resolve ${hostname}: ${describe(cause)}`, { cause });
    this.hostname = hostname;
  }
}

/**
 * Node's codes for a peer certificate that did not verify (chain, trust, name or dates), as
 * opposed to a handshake that failed for another reason (protocol, cipher, a reset).
 */
const CERTIFICATE_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'CERT_SIGNATURE_FAILURE',
  'CERT_NOT_YET_VALID',
  'CERT_HAS_EXPIRED',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_REVOKED',
  'INVALID_CA',
  'PATH_LENGTH_EXCEEDED',
  'INVALID_PURPOSE',
  'HOSTNAME_MISMATCH',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** A TLS handshake failed, other than by timeout. */
export class TLSHandshakeError extends HTTPError {
  /** Always `SWY_ERR_TLS_HANDSHAKE`. */
  readonly code = 'SWY_ERR_TLS_HANDSHAKE';
  /**
   * When the server's certificate did not verify, Node's code for why
   * (`DEPTH_ZERO_SELF_SIGNED_CERT`, `CERT_HAS_EXPIRED`, `ERR_TLS_CERT_ALTNAME_INVALID`, …);
   * null when the handshake failed for another reason. A program (or a command line) can
   * tell the user how to trust that certificate when it is set.
   */
  readonly certificateError: string | null;
  constructor(cause: unknown) {
    const c = (cause as { code?: unknown } | null)?.code;
    const cert = typeof c === 'string' && CERTIFICATE_CODES.has(c) ? c : null;
    const fix =
      cert === null
        ? ''
        : cert === 'ERR_TLS_CERT_ALTNAME_INVALID' || cert === 'HOSTNAME_MISMATCH'
          ? '; the certificate is for another name: connect by a name it lists, or set tlsConfig: { servername } (tls: { servername } for WebSockets.open) to the name it lists'
          : cert === 'CERT_HAS_EXPIRED' || cert === 'CERT_NOT_YET_VALID'
            ? "; the certificate is outside its validity dates (check the server certificate, and this machine's clock)"
            : "; the server's certificate is not signed by a CA this client trusts: pass that CA's certificate as tlsConfig: { ca } (tls: { ca } for WebSockets.open), or for a test only turn checking off with tlsConfig: { rejectUnauthorized: false }";
    super(`TLS handshake failed: ${describe(cause)}${fix}`, { cause });
    this.certificateError = cert;
  }
}

/** TLS-level I/O failed on an established connection during a request. */
export class TLSTransportError extends HTTPError {
  /** Always `SWY_ERR_TLS_TRANSPORT`. */
  readonly code = 'SWY_ERR_TLS_TRANSPORT';
  constructor(cause: unknown) {
    super(`TLS connection failed: ${describe(cause)}`, { cause });
  }
}

/** A server could not bind `address` (`host:port`) because it is in use. */
export class AddressInUseError extends HTTPError {
  /** Always `SWY_ERR_ADDRESS_IN_USE`. */
  readonly code = 'SWY_ERR_ADDRESS_IN_USE';
  /** `host:port` that is taken. */
  readonly address: string;
  constructor(address: string, cause?: unknown) {
    super(`address already in use: ${address}`, { cause });
    this.address = address;
  }
}

/**
 * Server workers (the `workers` option) could not be started: they ended before they listened
 * (the program threw at start, the port is taken), or a reload's new worker did. The message
 * says how the last one ended; the workers' own errors are on their stderr.
 */
export class WorkerStartError extends Error {
  /** Always `SWY_ERR_WORKER_START`. */
  readonly code = 'SWY_ERR_WORKER_START';
  /** Workers in a row that ended before they listened. */
  readonly attempts: number;
  constructor(message: string, attempts: number) {
    super(message);
    this.name = 'WorkerStartError';
    this.attempts = attempts;
  }
}

/** A caller passed a value the API cannot take, or called something in a state that forbids it. */
export class ArgumentError extends Error {
  /** Always `SWY_ERR_ARGUMENT`. */
  readonly code = 'SWY_ERR_ARGUMENT';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ArgumentError';
  }
}

/**
 * `inject()` was asked for what only a real connection has: a protocol change (`Upgrade`, such
 * as a WebSocket or `h2c`, offered to `server.onUpgrade` taps or taken by a handler's
 * `stream.upgrade()`). The message says what to use instead: a listening server and a real
 * client.
 */
export class NeedsSocketError extends Error {
  /** Always `SWY_ERR_NEEDS_SOCKET`. */
  readonly code = 'SWY_ERR_NEEDS_SOCKET';
  /** What needed the socket: `upgrade` (an `onUpgrade` tap would be offered it) or `stream.upgrade()`. */
  readonly feature: string;
  constructor(feature: string, message: string) {
    super(message);
    this.name = 'NeedsSocketError';
    this.feature = feature;
  }
}

/** A plugin failed to load or boot: missing dependency, duplicate, or its `register` threw. */
export class PluginError extends Error {
  /** `SWY_ERR_PLUGIN_DEPENDENCY`, `SWY_ERR_PLUGIN_DUPLICATE`, `SWY_ERR_PLUGIN_BOOT`, `SWY_ERR_PLUGIN_TAP` (a tap threw a non-Error) or `SWY_ERR_KERNEL_STARTED`. */
  readonly code: string;
  /** Name of the plugin at fault. */
  readonly plugin: string;
  constructor(code: string, plugin: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PluginError';
    this.code = code;
    this.plugin = plugin;
  }
}

function describe(cause: unknown): string {
  if (cause instanceof Error) return cause.message;
  return String(cause);
}
