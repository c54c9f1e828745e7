/** The message model: headers, requests, responses, bodies, contexts and URIs. */
export * from './headers.js';
export * from './body.js';
export { RequestContext, setDeadline, cancel, canceled, expired, type RequestContextOptions, type CancelListener } from './context.js';
export { Request, getRequestContext, peekRequestContext, type RequestOptions } from './request.js';
export { Response, protocolResponse, type ResponseOptions, type ResponseJSONInit } from './response.js';
export * from './uri.js';
