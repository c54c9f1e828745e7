/**
 * `npm start`: the switchyard demo. One stack (the default preset) serves, on one plain port,
 * HTTP/1.1 and h2c, and on a second port HTTPS with HTTP/2 (a self-signed certificate made at
 * start; nothing is read from disk or fetched). The page in ./public shows each feature live:
 *
 *   GET  /api/items/{id}    router, JSON
 *   GET  /api/whoami        the protocol the request came over (HTTP/1.1 or HTTP/2)
 *   GET  /events            server-sent events (the browser's EventSource)
 *   GET  /chat              WebSocket chat with permessage-deflate (the browser's WebSocket)
 *   POST /upload            multipart form upload, answered with the parsed parts
 *   GET  /files/sample.bin  a download with Range support (fileServer)
 *   GET  /…                 the page itself (fileServer)
 *
 * PORT (default 8080; 0 picks free ports) and HOST (default 127.0.0.1) choose where; the
 * HTTPS port is PORT + 1 (also free when PORT is 0). Every request, the WebSocket upgrade
 * included (as `GET /chat 101`), is logged by loggingMiddleware; Ctrl-C (SIGINT) or SIGTERM
 * closes gracefully.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as HTTP from '../../index.js';
import type { WebSocket } from '../../index.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const host = process.env.HOST ?? '127.0.0.1';
const port = Number(process.env.PORT ?? 8080);

// ---- state shown on the page -------------------------------------------------------------

let requests = 0;
const chatters = new Set<WebSocket>();
const feeds = new Set<HTTP.SSEStream>();

const items = new Map<string, { id: number; name: string; tags: string[] }>([
  ['1', { id: 1, name: 'switch', tags: ['track', 'points'] }],
  ['2', { id: 2, name: 'signal', tags: ['semaphore'] }],
  ['3', { id: 3, name: 'buffer stop', tags: ['end'] }],
]);

// A download for the Range demo, made at start in a temporary folder.
const filesDir = await mkdtemp(path.join(tmpdir(), 'switchyard-demo-'));
const sample = Buffer.alloc(1024 * 1024);
for (let i = 0; i < sample.length; i++) sample[i] = (i * 31 + 7) & 0xff;
await writeFile(path.join(filesDir, 'sample.bin'), sample);

// ---- routes ------------------------------------------------------------------------------

const json = (status: number, value: unknown): HTTP.Response => new HTTP.Response(status, JSON.stringify(value), { headers: { 'Content-Type': 'application/json' } });

const router = new HTTP.Router();

router.get('/api/items/{id}', (req) => {
  const item = items.get(HTTP.getParam(req, 'id') ?? '');
  return item === undefined ? json(404, { error: 'no such item', id: HTTP.getParam(req, 'id') }) : json(200, item);
});

// HTTP/2 requests carry protoMajor 2 (h2 over TLS by ALPN, h2c on the plain port).
router.get('/api/whoami', (req) => json(200, { protocol: req.protoMajor === 2 ? 'HTTP/2' : `HTTP/${req.protoMajor}.${req.protoMinor}` }));

router.get('/events', (req) =>
  HTTP.sseStream(
    async (stream) => {
      feeds.add(stream);
      try {
        for (let id = 1; !stream.closed; id++) {
          const data = JSON.stringify({ time: new Date().toISOString(), requests, chatClients: chatters.size });
          await stream.write(new HTTP.SSEEvent(data, { event: 'tick', id: String(id) }));
          await new Promise((resolve) => setTimeout(resolve, 1000).unref());
        }
      } finally {
        feeds.delete(stream);
      }
    },
    200,
    { request: req },
  ),
);

router.post('/upload', (req) => {
  const parts = HTTP.parseMultipartForm(req);
  if (parts === undefined) return json(400, { error: 'send multipart/form-data' });
  return json(
    200,
    parts.map((p) => ({
      name: p.name,
      filename: p.filename,
      contentType: p.contentType,
      size: p.data.length,
      preview: p.filename === null ? Buffer.from(p.data).toString('utf8').slice(0, 200) : undefined,
    })),
  );
});

router.get('/files/**', HTTP.fileServer(filesDir, { prefix: '/files', etag: 'weak_stat' }));
router.get('/**', HTTP.fileServer(path.join(here, 'public'), { etag: 'weak_stat', cacheControl: 'no-cache' }));

/** The chat: every message goes to everyone connected. */
async function chat(ws: WebSocket): Promise<void> {
  chatters.add(ws);
  try {
    await ws.send(`welcome, ${chatters.size} connected`);
    for await (const message of ws) {
      const text = typeof message === 'string' ? message : `(${message.length} bytes)`;
      await Promise.all([...chatters].map((peer) => peer.send(text).catch(() => undefined)));
    }
  } finally {
    chatters.delete(ws);
  }
}

// ---- one stream handler for both listeners -----------------------------------------------

const logger = HTTP.Handlers.createLogger({ format: 'pretty' });

// Routes are request handlers, logged when their response is ready (so /events shows up
// as it starts, not when the browser leaves).
const requestHandler = HTTP.streamHandler(
  HTTP.Handlers.loggingMiddleware(
    (req) => {
      requests++;
      return router(req);
    },
    { logger },
  ),
);

// The chat needs the stream itself to upgrade; the same access log records its 101.
const chatHandler = HTTP.Handlers.loggingMiddleware(
  (stream: HTTP.Stream) => {
    requests++;
    return HTTP.WebSockets.upgrade(stream, chat, { compress: true });
  },
  { logger },
);

async function handle(stream: HTTP.Stream): Promise<void> {
  if (HTTP.WebSockets.isUpgrade(stream.message) && new HTTP.URI(stream.message.target).path === '/chat') await chatHandler(stream);
  else await requestHandler(stream);
}

const plain = await HTTP.listen(handle, { host, port });
const cert = HTTP.selfSignedCertificate({ hosts: ['localhost', '127.0.0.1', '::1', ...(host === '127.0.0.1' ? [] : [host])] });
const secure = await HTTP.listen(handle, {
  host,
  port: port === 0 ? 0 : port + 1,
  tls: { key: cert.key, cert: cert.cert, ALPNProtocols: ['h2', 'http/1.1'] },
});

const shown = host.includes(':') ? `[${host}]` : host;
console.log(`switchyard demo
  http://${shown}:${plain.port}/    HTTP/1.1 and h2c (curl --http2-prior-knowledge)
  https://${shown}:${secure.port}/   HTTPS with HTTP/2 (self-signed certificate: curl -k)
Ctrl-C to stop.`);

// ---- graceful close ------------------------------------------------------------------------

let closing = false;
async function shutdown(): Promise<void> {
  if (closing) return;
  closing = true;
  console.log('\nclosing gracefully');
  // Long-lived exchanges end first, so close() has only short requests left to wait for.
  for (const feed of feeds) feed.close();
  await Promise.all([...chatters].map((ws) => ws.close(1001, 'server shutting down').catch(() => undefined)));
  const graceful = Promise.all([plain.close(), secure.close()]);
  const timer = setTimeout(() => void Promise.all([plain.forceClose(), secure.forceClose()]), 5000);
  await graceful;
  clearTimeout(timer);
  await rm(filesDir, { recursive: true, force: true });
  process.exit(0);
}
process.once('SIGINT', () => void shutdown());
process.once('SIGTERM', () => void shutdown());
