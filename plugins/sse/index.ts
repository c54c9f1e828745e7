/**
 * The sse plugin: server-sent events both ways.
 *
 * Server (no plugin needed): `sseStream(…)` makes a Response whose body is an `SSEStream`;
 * the producer writes `SSEEvent`s, each reaching the client as written.
 *
 * Client (this plugin):
 * - `client.onRequest` (`Stage.DEFAULT`): for a call with `sseCallback`, checks the options
 *   (ArgumentError before anything is sent) and adds `Accept: text/event-stream` unless the
 *   request has an `Accept`.
 * - `client.onResponseHead` (`Stage.SSE`, after decompression, before redirects): for a 2xx
 *   `text/event-stream` response (not HEAD, not 204) of a call with `sseCallback`, replaces
 *   the body with an {@link SSECallbackBody}: buffering the response (what `request` does)
 *   parses the stream incrementally and calls back with each event as it arrives. The call
 *   resolves when the stream ends, with an empty `response.body` (the reference sets
 *   `nobody`). Other responses are left alone (a JSON error keeps its body, `StatusError`
 *   as usual).
 *
 * `sseConnect(url, callback, options)` reconnects as EventSource does; it parses the stream
 * itself and needs no plugin.
 */
import { AbstractBody, BytesBody, Stage, checkOptionKeys, definePlugin, getCallOptions, type OptionCheck } from '../../kernel/index.js';
import { SSECallbackBody, checkSSEOptions, type SSECallback, type SSEOptions } from './callback.js';
import { DEFAULT_SSE_MAX_LEN, checkMaxLen } from './event.js';
import { SSEParser } from './parser.js';
import { isEventStream } from './response.js';

export { SSEEvent, DEFAULT_SSE_MAX_LEN, type SSEEventOptions } from './event.js';
export { SSEStream, type SSEStreamOptions } from './stream.js';
export { sseStream, isEventStream, type SSEProducer, type SSEResponse, type SSEResponseOptions } from './response.js';
export { SSEParser, type SSEParserOptions } from './parser.js';
export { SSECallbackBody, type SSECallback, type SSEOptions } from './callback.js';
export { sseConnect, DEFAULT_SSE_RETRY_DELAY, type SSEConnectOptions } from './connect.js';
export { SSEEventTooLargeError, type SSESide } from './errors.js';

const NAME = 'sse';

/** Options of the sse plugin. */
export interface SSEPluginOptions {
  /** Default `sseMaxLen` of calls on this kernel. Default 16 MiB. */
  maxLen?: number;
}

const PLUGIN_OPTIONS: ReadonlySet<string> = new Set(['maxLen']);

/** The `sse` plugin: `sseCallback` on client calls. */
export const sse = definePlugin({
  name: NAME,
  callOptions: {
    sseCallback: (v) => (typeof v === 'function' ? null : 'a function (event, response) => void'),
    sseMaxLen: (v) => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 1 ? null : 'a whole number of bytes >= 1'),
  } satisfies Record<keyof SSEOptions, OptionCheck>,
  register(kernel, options: SSEPluginOptions) {
    checkOptionKeys(options, PLUGIN_OPTIONS, 'register(sse, …)');
    const base = options.maxLen === undefined ? DEFAULT_SSE_MAX_LEN : checkMaxLen(options.maxLen, 'register(sse, …): maxLen');

    kernel.hooks.client.onRequest.tap({ name: NAME, stage: Stage.DEFAULT }, (req, ctx) => {
      const o = getCallOptions(ctx);
      if (o.sseCallback === undefined) return;
      checkSSEOptions(o, `${req.method} ${req.url || req.target}`);
      if (!req.headers.has('Accept')) req.headers.set('Accept', 'text/event-stream');
    });

    kernel.hooks.client.onResponseHead.tap({ name: NAME, stage: Stage.SSE }, (res, ctx) => {
      const o = getCallOptions(ctx);
      const cb = o.sseCallback as SSECallback | undefined;
      if (cb === undefined) return;
      const status = res.status;
      if (status < 200 || status >= 300 || status === 204) return;
      if (res.request !== null && res.request.method === 'HEAD') return;
      const ct = res.headers.get('Content-Type');
      if (ct === undefined || !isEventStream(ct)) return;
      const body = res.body;
      if (body === null) return;
      // A response from an onRequest tap may carry bytes: parse them the same way.
      const source = body instanceof AbstractBody ? body : new BytesBody(body);
      const maxLen = (o.sseMaxLen as number | undefined) ?? base;
      res.body = new SSECallbackBody(source, cb, res, new SSEParser({ maxLen }));
      res.contentLength = -1;
    });
  },
});
