/**
 * Plugin `sse`: server-sent events. The server answers with `sseStream(producer)` and writes
 * `SSEEvent`s; a client call with `sseCallback` gets each event as it arrives, and
 * `sseConnect` reconnects as a browser's EventSource does (resuming with `Last-Event-ID`,
 * stopping on 204). Starts its own server on 127.0.0.1, listens to it, prints and exits.
 *
 *   node --import tsx examples/sse.ts
 */
import * as HTTP from '../index.js';

const news = ['switches thrown', 'signal cleared', 'train departed'];

const server = await HTTP.serve(
  (req) => {
    const path = new HTTP.URI(req.target).path;
    if (path === '/ticks') {
      return HTTP.sseStream(
        async (stream) => {
          for (let i = 1; i <= 3; i++) await stream.write(new HTTP.SSEEvent(JSON.stringify({ tick: i }), { event: 'tick', id: String(i) }));
        },
        { request: req },
      );
    }
    // /news: two events per connection, then the stream ends; the client comes back for more.
    const from = Number(req.headers.get('Last-Event-ID') ?? 0);
    console.log(`server: /news connection, Last-Event-ID ${req.headers.get('Last-Event-ID') ?? '(none)'}`);
    if (from >= news.length) return new HTTP.Response(204); // "stop reconnecting"
    return HTTP.sseStream(
      async (stream) => {
        for (const i of [from, from + 1].filter((n) => n < news.length)) {
          await stream.write(new HTTP.SSEEvent(news[i]!, { id: String(i + 1), retry: 20 }));
        }
      },
      { request: req },
    );
  },
  { host: '127.0.0.1', port: 0 },
);
const base = `http://127.0.0.1:${server.port}`;

// One call: resolves when the stream ends; each event arrived through the callback first.
await HTTP.get(`${base}/ticks`, {
  sseCallback: (ev) => console.log(`sseCallback: ${ev.event} #${ev.id} ${ev.data}`),
});

// EventSource-style: three connections (2 events, 1 event, then 204).
await HTTP.sseConnect(`${base}/news`, (ev) => console.log(`sseConnect: #${ev.id} ${ev.data}`));

HTTP.close(HTTP.getDefaultClient());
await server.close();
