/**
 * The message model: headers, requests, responses, bodies, contexts and URIs. What only a
 * protocol plugin's codec needs (building messages from a parsed head) is in the protocol entry
 * (kernel/protocol.ts).
 */
export {
  Headers,
  eqIgnoreCase,
  mkHeaders,
  header,
  headers,
  hasHeader,
  headerContains,
  setHeader,
  defaultHeader,
  appendHeader,
  removeHeader,
  canonicalHeaderKey,
  type HeaderPair,
  type HeadersInit,
  type HasHeaders,
  type HeaderSetter,
} from './headers.js';
export * from './body.js';
export { RequestContext, setDeadline, cancel, canceled, expired, type RequestContextOptions, type CancelListener } from './context.js';
export { Request, getRequestContext, type RequestOptions } from './request.js';
export { Response, type ResponseOptions, type ResponseJSONInit } from './response.js';
export * from './uri.js';
