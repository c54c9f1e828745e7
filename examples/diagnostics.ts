/**
 * diagnostics_channel: a subscriber that logs what the server and the client do, by channel
 * name, with no plugin loaded: one line per finished server response (an access log with its
 * duration) and one per client call with its connection and timings. Retries show up too.
 * Starts its own server on 127.0.0.1, calls it, prints what the channels said and exits.
 *
 *   node --import tsx examples/diagnostics.ts
 */
import diagnosticsChannel from 'node:diagnostics_channel';
import * as HTTP from '../index.js';

const lines: string[] = [];

// The server: an access log from response:finish.
const onFinish = (m: unknown): void => {
  const { request, response, bytes } = m as HTTP.ServerResponseFinishMessage;
  lines.push(`server: ${request.method} ${request.target} -> ${response.status}, ${bytes} bytes`);
};
diagnosticsChannel.subscribe('switchyard:server:response:finish', onFinish);

// The client: where each request went, and when its body was in.
const onHeaders = (m: unknown): void => {
  const { request, connection } = m as HTTP.ClientRequestHeadersMessage;
  lines.push(`client: ${request.method} ${request.target} on ${connection.protocol} from ${connection.localAddress}, reused ${connection.reused}`);
};
const onEnd = (m: unknown): void => {
  const { response, bytes, elapsedMs } = m as HTTP.ClientResponseEndMessage;
  lines.push(`client: ${response.status}, ${bytes} bytes${Number.isFinite(elapsedMs) ? '' : ' (untimed)'}`);
};
const onRetry = (m: unknown): void => {
  const { attempt, reason } = m as HTTP.ClientRetryMessage;
  lines.push(`client: retry after attempt ${attempt} (${reason})`);
};
diagnosticsChannel.subscribe('switchyard:client:request:headers', onHeaders);
diagnosticsChannel.subscribe('switchyard:client:response:end', onEnd);
diagnosticsChannel.subscribe('switchyard:client:retry', onRetry);

// The TracingChannel around each client call (typed through HTTP.channels): how long the
// whole call took, retries included. Its context object is the same at every event.
const started = new WeakMap<HTTP.ClientRequestContext, number>();
const noop = (): void => undefined;
const trace = {
  start: (ctx: HTTP.ClientRequestContext) => void started.set(ctx, performance.now()),
  end: noop,
  asyncStart: noop,
  asyncEnd: (ctx: HTTP.ClientRequestContext) => {
    const ms = performance.now() - (started.get(ctx) ?? NaN);
    lines.push(`call: ${ctx.request.method} ${new URL(ctx.url).pathname} -> ${ctx.result?.status ?? 'failed'} in ${ms.toFixed(1)} ms`);
  },
  error: noop,
};
const calls = HTTP.channels.clientRequest;
calls.subscribe(trace);

let hits = 0;
const server = await HTTP.serve((req) => (req.target === '/flaky' && hits++ === 0 ? new HTTP.Response(503, 'busy', { headers: { 'Retry-After': '0' } }) : new HTTP.Response(200, 'hello')), {
  host: '127.0.0.1',
  port: 0,
});

await HTTP.get(`http://127.0.0.1:${server.port}/`);
await HTTP.get(`http://127.0.0.1:${server.port}/flaky`);

diagnosticsChannel.unsubscribe('switchyard:server:response:finish', onFinish);
diagnosticsChannel.unsubscribe('switchyard:client:request:headers', onHeaders);
diagnosticsChannel.unsubscribe('switchyard:client:response:end', onEnd);
diagnosticsChannel.unsubscribe('switchyard:client:retry', onRetry);
calls.unsubscribe(trace);
await server.close();
HTTP.close(HTTP.getDefaultClient());

// The server's line for a response can come before or after the client's: sorted per side.
for (const side of ['client', 'server', 'call']) for (const l of lines) if (l.startsWith(`${side}:`)) console.log(l);
