/**
 * `switchyard`: the top-level API (`import * as HTTP from 'switchyard'`), the user's API only:
 * messages and their HTTP/1 I/O, clients and servers, errors, and the kernel as far as a user
 * builds a stack with it. Plugin authors' helpers are in `switchyard/kernel`, codec internals
 * for protocol plugins in `switchyard/protocol`.
 *
 * The entry points that take a `kernel` option (`serve`, `listen`) run on a default kernel
 * booted lazily with `presets.defaults` when the caller passes none; the request helpers
 * (`request`, `get`, …, `dispatch`) use a default `Client` on that kernel unless given
 * `client`. Plugin namespaces (`Handlers`, `Cookies`, `WebSockets`) are re-exported from their
 * plugins.
 */
import {
  ArgumentError,
  Client,
  isHeadersValue,
  createKernel,
  setDefaultClientKernel,
  type CallOptions,
  type ClientStream,
  type Verb,
  type Request,
  type Response,
  listen as kernelListen,
  serveFetch as kernelServeFetch,
  type FetchHandler,
  type ServeFetchOptions,
  serve as kernelServe,
  type Kernel,
  type RequestHandler,
  type ServeOptions,
  type Server,
  type StreamHandler,
  type WorkerCount,
  type WorkerPool,
  type FetchInit,
  type FetchInput,
} from './kernel/index.js';
import { presets, setDefaultWebSocketKernel } from './plugins/index.js';

// Messages: headers, bodies, requests, responses, contexts, URIs.
export {
  Headers,
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
  AbstractBody,
  CallbackBody,
  BytesBody,
  nobody,
  bodyRead,
  bodyClose,
  bodyClosed,
  trailers,
  type Body,
  RequestContext,
  setDeadline,
  cancel,
  canceled,
  expired,
  type RequestContextOptions,
  type CancelListener,
  Request,
  getRequestContext,
  type RequestOptions,
  Response,
  type ResponseOptions,
  type ResponseJSONInit,
  URI,
  queryParams,
  queryParamPairs,
} from './kernel/index.js';

// HTTP/1 message I/O on any byte stream.
export {
  readRequest,
  readResponse,
  writeRequest,
  writeResponse,
  ByteReader,
  IncomingBody,
  ChunkedDecoder,
  type ReadRequestOptions,
  type ReadResponseOptions,
  type ByteSink,
  type ByteSourceInit,
  type IncomingBodyKind,
  type IncomingBodyOptions,
  type ChunkedDecoderOptions,
} from './kernel/index.js';

// Errors.
export {
  HTTPError,
  ParseError,
  ProtocolError,
  CanceledError,
  TimeoutError,
  HTTPTimeoutError,
  StatusError,
  ResponseTooLargeError,
  ConnectError,
  DNSError,
  TLSHandshakeError,
  TLSTransportError,
  AddressInUseError,
  WorkerStartError,
  ArgumentError,
  PluginError,
  NeedsSocketError,
  type LimitName,
  type TimeoutOperation,
} from './kernel/index.js';

// Web standards: fetch-style handlers and the converters.
export { fetchHandler, toWebRequest, fromWebResponse, type FetchHandler, type FetchHandlerOptions, type FetchEnv, type ServeFetchOptions } from './kernel/index.js';

// Servers.
export { Server, Stream, PeerAddr, streamHandler, port, type ServerInit, type ServerOptions, type ServeOptions, type RequestHandler, type StreamHandler } from './kernel/index.js';
export { WorkerPool, type WorkerCount } from './kernel/index.js';

export type { InjectRequest, InjectTarget, InjectBody, InjectQueryValue } from './kernel/index.js';

// Clients.
export {
  Client,
  Transport,
  ClientStream,
  ClientEvent,
  RequestEvent,
  ResponseHeadEvent,
  RetryEvent,
  RetrySkippedEvent,
  RedirectEvent,
  DoneEvent,
  type AnyClientEvent,
  type ClientOptions,
  type ClientCallDefaults,
  type TransportOptions,
  type Origin,
  type CallOptions,
  type RequestBody,
  type QueryInit,
  type ResponseSink,
  type TimeoutOptions,
  type VerbHeaders,
  type Verb,
  type FetchInit,
  type FetchInput,
  type FetchOptions,
} from './kernel/index.js';

// The web's messages (the Fetch standard's Request and Response), both ways.
export { fromWebRequest, toWebResponse } from './kernel/index.js';

// The kernel, as a user builds a stack with it.
export {
  createKernel,
  Kernel,
  definePlugin,
  Stage,
  tapErrorInfo,
  type KernelOptions,
  type KernelState,
  type HookHost,
  type Plugin,
  type AnyPlugin,
  type PluginList,
  type PluginDefinition,
  type StageName,
  type TapErrorInfo,
} from './kernel/index.js';
export { presets } from './plugins/index.js';

// diagnostics_channel: the channels the client and server publish to, and their messages.
export {
  channels,
  channelNames,
  type DiagnosticChannel,
  type ClientRequestContext,
  type ClientRequestCreateMessage,
  type ClientConnectionInfo,
  type ClientRequestHeadersMessage,
  type ClientResponseHeadersMessage,
  type ClientResponseEndMessage,
  type ClientRequestErrorMessage,
  type ClientRetryMessage,
  type ClientRedirectMessage,
  type ClientConnectionOpenMessage,
  type ClientConnectionReuseMessage,
  type ServerConnectionMessage,
  type ServerRequestContext,
  type ServerRequestStartMessage,
  type ServerResponseHeadersMessage,
  type ServerResponseFinishMessage,
  type ServerErrorMessage,
  type ServerUpgradeMessage,
} from './kernel/index.js';

let defaultKernel: Kernel | null = null;

/** The kernel the top-level helpers use when given none: `presets.defaults`, made on first use. */
export function getDefaultKernel(): Kernel {
  return (defaultKernel ??= createKernel().register(presets.defaults));
}
// WebSockets calls and clients given no kernel use this one too (neither can import the top level).
setDefaultWebSocketKernel(getDefaultKernel);
setDefaultClientKernel(getDefaultKernel);

/**
 * Starts a server for a request handler on the default kernel (or `options.kernel`) and
 * resolves once it listens. See the kernel's `serve` for the options.
 */
export function serve(handler: RequestHandler, options: ServeOptions & { workers: WorkerCount }): Promise<Server | WorkerPool>;
export function serve(handler: RequestHandler, options?: ServeOptions): Promise<Server>;
export function serve(handler: RequestHandler, options: ServeOptions = {}): Promise<Server | WorkerPool> {
  return kernelServe(handler, { ...options, kernel: options?.kernel ?? getDefaultKernel() });
}

/** Starts a server for a stream handler on the default kernel (or `options.kernel`); `workers` as for {@link serve}. */
export function listen(handler: StreamHandler, options: ServeOptions & { workers: WorkerCount }): Promise<Server | WorkerPool>;
export function listen(handler: StreamHandler, options?: ServeOptions): Promise<Server>;
export function listen(handler: StreamHandler, options: ServeOptions = {}): Promise<Server | WorkerPool> {
  return kernelListen(handler, { ...options, kernel: options?.kernel ?? getDefaultKernel() });
}

/**
 * Starts a server for a fetch-style handler (`(request: Request) => Response`, such as Hono's
 * `app.fetch`) on the default kernel (or `options.kernel`); see `fetchHandler`.
 */
export function serveFetch(handler: FetchHandler, options: ServeFetchOptions & { workers: WorkerCount }): Promise<Server | WorkerPool>;
export function serveFetch(handler: FetchHandler, options?: ServeFetchOptions): Promise<Server>;
export function serveFetch(handler: FetchHandler, options: ServeFetchOptions = {}): Promise<Server | WorkerPool> {
  return kernelServeFetch(handler, { ...options, kernel: options?.kernel ?? getDefaultKernel() });
}

let defaultClient: Client | null = null;

/** The client the request helpers use when given none (on the default kernel), made on first use. */
export function getDefaultClient(): Client {
  if (defaultClient === null || !defaultClient.isOpen) defaultClient = new Client({ kernel: getDefaultKernel() });
  return defaultClient;
}

function pick(options: CallOptions | undefined): Client {
  const c = options?.client;
  if (c === undefined || c === null) return getDefaultClient();
  if (!(c instanceof Client)) throw new ArgumentError('the client option must be a Client');
  return c;
}

/**
 * Runs `fn` so that an argument error becomes a rejected Promise, as every other failure is.
 * Not async: an async wrapper adopts `fn`'s promise through two more microtask turns per call.
 */
function call<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return fn();
  } catch (err) {
    return Promise.reject(err);
  }
}

/** Sends `method url`; resolves to the response with its body buffered. See `CallOptions`. */
export function request(method: string, url: string | URL, options?: CallOptions): Promise<Response> {
  return call(() => pick(options).request(method, url, options));
}

/** A streamed exchange (see `Client.open`): resolves to the final response once `handler` returns. */
export function open(method: string, url: string | URL, handler: (stream: ClientStream) => unknown, options?: CallOptions): Promise<Response> {
  return call(() => pick(options).open(method, url, handler, options));
}

/** The reference's `do!`: sends a prepared Request (with `url` set); the body of the result is streamed. */
export function dispatch(req: Request, options?: CallOptions): Promise<Response> {
  return call(() => pick(options).dispatch(req, options));
}

/**
 * The Fetch standard's `fetch` on the default client (every plugin of `presets.defaults`):
 * resolves to a global `Response` whose body streams as it arrives. switchyard's call options
 * go in `init.switchyard`; a given `Client`'s is `client.fetch`. See `docs/fetch.md`.
 */
export function fetch(input: FetchInput, init?: FetchInit): Promise<globalThis.Response> {
  return getDefaultClient().fetch(input, init);
}

/** Client methods of the verbs, by name. */
type VerbName = 'get' | 'head' | 'query' | 'post' | 'put' | 'patch' | 'delete' | 'options';

function verb(name: VerbName): Verb {
  return (url: string | URL, ...rest: unknown[]): Promise<Response> => {
    // As `call` does, without a closure per request.
    try {
      // The options are the second argument of (url, options), the fourth of (url, headers, body, options).
      const o = (rest.length <= 1 && !isHeadersValue(rest[0]) ? rest[0] : rest[2]) as CallOptions | undefined;
      const client = pick(typeof o === 'object' && o !== null ? o : undefined);
      return (client[name] as (url: string | URL, ...rest: unknown[]) => Promise<Response>)(url, ...rest);
    } catch (err) {
      return Promise.reject(err);
    }
  };
}

/** GET `url`. */
export const get: Verb = verb('get');
/** HEAD `url`. */
export const head: Verb = verb('head');
/** QUERY `url` (RFC 10008). */
export const query: Verb = verb('query');
/** POST `url`. */
export const post: Verb = verb('post');
/** PUT `url`. */
export const put: Verb = verb('put');
/** PATCH `url`. */
export const patch: Verb = verb('patch');
/** DELETE `url` (exported as `delete`). */
export const del: Verb = verb('delete');
/** OPTIONS `url`. */
export const options: Verb = verb('options');
export { del as delete };

/** Closes a client: later calls through it throw `ArgumentError`. */
export function close(client: Client): void {
  if (!(client instanceof Client)) throw new ArgumentError('close(client) takes a Client');
  client.close();
}

/** True until `close(client)`. */
export function isOpen(client: Client): boolean {
  if (!(client instanceof Client)) throw new ArgumentError('isOpen(client) takes a Client');
  return client.isOpen;
}

// Plugin namespaces and helpers the reference puts at the top level.
export { Cookies, getRequestCookies as getCookies } from './plugins/cookies/index.js';
export { RetryBucket, isRecoverable, RequestRetryError } from './plugins/retries/index.js';
export { TooManyRedirectsError } from './plugins/redirects/index.js';
export { DecompressionLimitError, type DecompressionBound } from './plugins/decompression/index.js';
export { Form, Multipart, Batch, contentType, parseMultipart, parseMultipartForm, parseMultipartMixed } from './plugins/multipart/index.js';
export { HTTP2Settings } from './plugins/h2/index.js';
export { fileServer, serveFile, serveContent, type FileServerOptions, type DotfilesPolicy, type ServeFileOptions, type ServeContentOptions } from './plugins/fileserver/index.js';
export { ProxyConfig, NoProxy, ProxyEndpoint, proxyURL, proxyFromEnvironment, ProxyError, ProxyStatusError, Socks5Error, connectThroughProxy } from './plugins/proxy/index.js';
export { Router, register, getRoute, getParams, getParam } from './plugins/router/index.js';
export { Handlers } from './plugins/middleware/index.js';
export { WebSockets, WebSocket, WebSocketError, WebSocketHandshakeError } from './plugins/index.js';
export { SSEEvent, SSEStream, SSEParser, SSEEventTooLargeError, sseStream } from './plugins/sse/index.js';
export {
  mock,
  MockAgent,
  MockInterceptor,
  MockScope,
  MockNotMatchedError,
  MockPendingError,
  type MockOptions,
  type MockInterceptOptions,
  type MockRequest,
  type MockReplyData,
  type MockErrorCode,
  type Recording,
  type RecordedExchange,
  type RecordedBody,
} from './plugins/mock/index.js';
export { selfSignedCertificate, type SelfSignedOptions, type SelfSignedCertificate } from './tls/self-signed.js';
import { sseConnect as connectSSE, type SSECallback, type SSEConnectOptions } from './plugins/sse/index.js';
/** Reconnecting event-stream client (the sse plugin's `sseConnect`), on the default client unless given `client`. */
export function sseConnect(url: string | URL, callback: SSECallback, options: SSEConnectOptions = {}): Promise<void> {
  return call(() => connectSSE(url, callback, { ...options, client: options.client ?? getDefaultClient() }));
}
