/**
 * switchyard's messages and the web's (the Fetch standard's global `Request`, `Response`,
 * `Headers` and `ReadableStream`), both ways, and fetch-style handlers served by switchyard.
 */
export { toWebHeaders, fromWebHeaders } from './headers.js';
export { readableOf, readableOfBody } from './readable.js';
export { fromWebRequest } from './from-web-request.js';
export { toWebResponse } from './to-web-response.js';
export { toWebRequest } from './to-web-request.js';
export { fromWebResponse } from './from-web-response.js';
export { fetchHandler, serveFetch, type FetchHandler, type FetchHandlerOptions, type FetchEnv, type ServeFetchOptions } from './fetch-handler.js';
export { lightResponseClass, installLightResponse } from './light-response.js';
