/**
 * `switchyard/protocol`: the entry for protocol plugins, the ones that speak a wire (HTTP/2 by
 * ALPN or h2c, a proxy tunnel, an upgraded connection). It holds the codec's internals the
 * kernel's own HTTP/1 uses and such a plugin shares: the head parser and framing rules, head
 * serializers, the server's exchange pipeline as a protocol plugin drives it (`ProtocolHost`,
 * `ExchangeWire`, `protocolRequest`), the client's session and body types (`ClientSession`,
 * `FlowBody`, `kBufferBody`), and the argument types of the `server.protocol` and
 * `client.session` hooks. Everything else a plugin needs is in `switchyard/kernel`.
 */

// The HTTP/1 codec.
export {
  HeadParser,
  type HeadKind,
  type HeadLimits,
  DEFAULT_MAX_LINE_BYTES,
  DEFAULT_MAX_HEADER_BYTES,
  CONN_CLOSE,
  CONN_KEEP_ALIVE,
  CONN_UPGRADE,
  H2_PREFACE,
  matchH2Preface,
  isH2Preface,
  parseContentLength,
  connectionFlags,
} from './http1/head-parser.js';
export { FORBIDDEN_TRAILERS, isForbiddenTrailer } from './http1/tables.js';
export { isValidHost, requestTargetError, absoluteTargetAuthority } from './http1/target.js';
export {
  type BodyKind,
  requestBodyKind,
  responseBodyKind,
  statusHasNoBody,
  responseHasNoBody,
  type FramingPlan,
  framingPlan,
  requestFraming,
  responseFraming,
  buildResponseHead,
} from './http1/framing.js';
export { exchangeHead, MAX_INTERIM_RESPONSES, type ExchangedHead, type HeadExchangeOptions } from './http1/head-exchange.js';
export {
  type OutgoingFraming,
  serializeRequestHead,
  serializeResponseHead,
  serializeLastChunk,
  serializeFields,
  serializeStatusLine,
  encodeChunk,
  encodeMessage,
  checkTrailerName,
  checkTrailers,
} from './http1/serialize.js';

// Messages built from a parsed head.
export { headersFromArrays, headersFromFields } from './message/headers.js';
export { peekRequestContext } from './message/request.js';
export { protocolResponse } from './message/response.js';

// The server side: the pipeline a protocol plugin's connections run their exchanges through.
export { protocolRequest } from './server/exchange.js';
export type { ProtocolHost, ProtocolConnection, ExchangeWire, ResponseWire, ServerLimits } from './server/protocol-host.js';
export { HOLD_BYTES } from './server/h1-wire.js';
export { MAX_PREFACE_BYTES, type ProtocolInfo, type ProtocolTapOptions } from './hooks.js';

// The client side: sessions, their bodies, and how a connection is dialled.
export type { ClientSession, SessionInfo, SessionPool, ExchangeOptions } from './hooks.js';
export { kUnprocessed, kBufferBody, kHeadGate } from './client/client.js';
export { DueTimer } from './client/due-timer.js';
export { stopUpload } from './client/request-body.js';
export { FlowBody, FLOW_HIGH_WATER, type FlowSource } from './client/flow-body.js';
export { dialTcp } from './client/connect.js';
