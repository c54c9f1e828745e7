/**
 * Named stages: the order of taps on one hook.
 *
 * A tap's `stage` (tapable's option) decides where it runs: lower runs earlier, equal
 * stages run in registration order. Plugins take their stage from this table instead of
 * relying on the order they happen to be registered in (webpack's
 * `PROCESS_ASSETS_STAGE_*` idea). The numbers leave gaps so a third-party plugin can slot
 * in between (`Stage.DECOMPRESS + 1`).
 */

/** Stage constants used as tapable's `stage` tap option. */
export const Stage = Object.freeze({
  /** Observers that must see everything first: access-log start, tracing. */
  FIRST: -1000,
  /** `client.connect`: proxies and SOCKS decide first whether they supply the socket. */
  PROXY: -100,
  /** Cookies: attach `Cookie` before auth and default headers; store `Set-Cookie` of every response, redirects included, before anything acts on it. */
  COOKIES: -20,
  /** Decompression wraps the response body before anything reads it (SSE, user code). */
  DECOMPRESS: -10,
  /** Anything without a reason to be elsewhere: default headers, auth, h2, h2c, websockets. */
  DEFAULT: 0,
  /** SSE parsing reads the (already decompressed) body. */
  SSE: 5,
  /** Redirects act on a response head only after cookies and decompression saw it. */
  REDIRECT: 10,
  /** Retry policy: decides after redirects were handled. */
  RETRY: 20,
  /** `server.onRequest`: route dispatch runs after auth-like taps that may answer first. */
  ROUTER: 100,
  /** `server.onResponseHead`: response compression, after the taps that set headers, before the observers at `LAST`. */
  COMPRESS: 900,
  /** Observers that must see the final state: access-log line, metrics. */
  LAST: 1000,
} as const);

/** The name of a stage constant, such as `'COOKIES'`. */
export type StageName = keyof typeof Stage;
