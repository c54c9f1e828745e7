/**
 * The HTTP/1.1 wire codec: incremental head parser, chunked decoder, body framing, incoming
 * bodies, `readRequest`/`readResponse`, the serializer and the framing rules of outgoing
 * messages, `writeRequest`/`writeResponse`, and the one exchange of heads an upgrade or a
 * CONNECT makes.
 */
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
} from './head-parser.js';
export { ChunkedDecoder, type ChunkedDecoderOptions } from './chunked.js';
export { FORBIDDEN_TRAILERS, isForbiddenTrailer } from './tables.js';
export { isValidHost, requestTargetError, absoluteTargetAuthority } from './target.js';
export {
  type BodyKind,
  requestBodyKind,
  responseBodyKind,
  statusHasNoBody,
  type FramingPlan,
  framingPlan,
  requestFraming,
} from './framing.js';
export { exchangeHead, MAX_INTERIM_RESPONSES, type ExchangedHead, type HeadExchangeOptions } from './head-exchange.js';
export { ByteReader, type ByteSourceInit } from './byte-reader.js';
export { IncomingBody, type IncomingBodyKind, type IncomingBodyOptions } from './incoming-body.js';
export { readRequest, readResponse, type ReadRequestOptions, type ReadResponseOptions } from './read.js';
export { type ByteSink, writeRequest, writeResponse } from './write.js';
export {
  type OutgoingFraming,
  serializeRequestHead,
  serializeResponseHead,
  serializeLastChunk,
  serializeFields,
  serializeStatusLine,
  encodeChunk,
  encodeMessage,
  checkFieldName,
  checkFieldValue,
  checkTrailerName,
  checkTrailers,
} from './serialize.js';
export { STATUS_TEXT, statusText, isToken } from './tables.js';
