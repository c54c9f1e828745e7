/**
 * The HTTP/1.1 message I/O of the reference: `readRequest`/`readResponse` over a byte source,
 * `writeRequest`/`writeResponse` to a sink, the chunked decoder and incoming bodies behind them,
 * and the field validators. The codec's own parts (head parser, framing, serializers) are in the
 * protocol entry (kernel/protocol.ts).
 */
export { ChunkedDecoder, type ChunkedDecoderOptions } from './chunked.js';
export { ByteReader, type ByteSourceInit } from './byte-reader.js';
export { IncomingBody, type IncomingBodyKind, type IncomingBodyOptions } from './incoming-body.js';
export { readRequest, readResponse, type ReadRequestOptions, type ReadResponseOptions } from './read.js';
export { type ByteSink, writeRequest, writeResponse, checkFieldName, checkFieldValue } from './serialize.js';
export { STATUS_TEXT, statusText, isToken } from './tables.js';
