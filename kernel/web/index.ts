/**
 * switchyard's messages and the web's (the Fetch standard's global `Request`, `Response`,
 * `Headers` and `ReadableStream`), both ways.
 */
export { toWebHeaders, fromWebHeaders } from './headers.js';
export { readableOf, readableOfBody } from './readable.js';
export { fromWebRequest } from './from-web-request.js';
export { toWebResponse } from './to-web-response.js';
