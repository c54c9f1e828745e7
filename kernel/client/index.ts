/**
 * The HTTP/1.1 client: `Client`, `Transport`, trace events, and the helpers plugins use to
 * read a call's options.
 */
export { Client, setDefaultClientKernel, isHeadersValue, type ClientOptions, type ClientCallDefaults } from './client.js';
export { getCallOptions, getAttempt } from './call.js';
export { Transport, type TransportOptions, type Origin } from './transport.js';
export type { CallOptions, RequestBody, QueryInit, ResponseSink, TimeoutOptions, ExchangeTimeoutOptions, VerbHeaders, Verb } from './options.js';
export { checkCallOptionNames, EXCHANGE_TIMEOUT_OPTIONS, pickExchangeTimeouts } from './options.js';
export { IterableBody, isIdempotent, isReplayable } from './request-body.js';
export { ResponseBody } from './h1-session.js';
export { ClientEvent, RequestEvent, ResponseHeadEvent, RetryEvent, RetrySkippedEvent, RedirectEvent, DoneEvent, verbosePrinter, type AnyClientEvent } from './trace.js';
export { ClientStream, PushBody } from './open.js';
export { upgradeRequest, type UpgradeOptions, type UpgradeResult } from './upgrade.js';
export type { FetchInit, FetchInput, FetchOptions } from './fetch.js';
