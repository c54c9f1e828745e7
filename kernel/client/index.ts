/**
 * The HTTP/1.1 client: `Client`, `Transport`, trace events, and the helpers plugins use to
 * read a call's options.
 */
export { Client, setDefaultClientKernel, isHeadersValue, kUnprocessed, kBufferBody, type ClientOptions, type ClientCallDefaults } from './client.js';
export { getCallOptions, getAttempt } from './call.js';
export type { SessionPool } from '../hooks.js';
export { Transport, type TransportOptions, type Origin } from './transport.js';
export type { CallOptions, RequestBody, QueryInit, ResponseSink, TimeoutOptions, VerbHeaders, Verb } from './options.js';
export { checkCallOptionNames } from './options.js';
export { IterableBody, isIdempotent, isReplayable, stopUpload } from './request-body.js';
export { ResponseBody } from './h1-session.js';
export {
  ClientEvent,
  RequestEvent,
  ResponseHeadEvent,
  RetryEvent,
  RetrySkippedEvent,
  RedirectEvent,
  DoneEvent,
  verbosePrinter,
  type AnyClientEvent,
} from './trace.js';
export { ClientStream, PushBody } from './open.js';
export { FlowBody, FLOW_HIGH_WATER, type FlowSource } from './flow-body.js';
export { upgradeRequest, type UpgradeOptions, type UpgradeResult } from './upgrade.js';
export { dialTcp } from './connect.js';
