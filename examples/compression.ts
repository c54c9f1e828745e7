/**
 * Plugin `compression`: a server whose kernel has it answers with gzip, br (or zstd, on a
 * Node that has it) as the client's `Accept-Encoding` asks, adds `Vary: Accept-Encoding`,
 * streams server-sent events compressed one by one, and leaves small bodies and ranges alone.
 * Starts its own server on 127.0.0.1, talks to it, prints what happened and exits.
 *
 *   node --import tsx examples/compression.ts
 */
import * as HTTP from '../index.js';
import { SSEEvent, compression, decodedContentEncoding, presets, sseStream } from '../plugins/index.js';

const kernel = await HTTP.createKernel().register(presets.defaults).register(compression, { threshold: 1024 }).ready();
const data = JSON.stringify(Array.from({ length: 2000 }, (_, i) => ({ id: i, name: `item ${i}` })));

const server = await kernel.serve(
  (req) => {
    if (req.target === '/events') {
      return sseStream(
        async (s) => {
          for (const n of [1, 2, 3]) await s.write(new SSEEvent(`tick ${n}`));
        },
        { request: req },
      );
    }
    if (req.target === '/small') return HTTP.Response.json({ ok: true });
    return new HTTP.Response(200, data, { headers: { 'Content-Type': 'application/json', ETag: '"v1"' } });
  },
  { host: '127.0.0.1', port: 0 },
);
const url = `http://127.0.0.1:${server.port}`;
const client = kernel.client();

for (const ae of ['br', 'gzip', 'identity']) {
  // decompress: false shows the bytes as sent.
  const res = await client.get(`${url}/data`, { decompress: false, headers: { 'Accept-Encoding': ae } });
  console.log(`Accept-Encoding ${ae}: ${res.headers.get('Content-Encoding') ?? 'none'}, ${res.body!.length} of ${data.length} bytes, ETag ${res.headers.get('ETag')}, Vary ${res.headers.get('Vary')}`);
}

// The client's decompression plugin decodes it.
const decoded = await client.get(`${url}/data`);
console.log(`decoded by the client: ${decoded.body!.length} bytes, was ${decodedContentEncoding(decoded)}`);

const small = await client.get(`${url}/small`, { decompress: false });
console.log(`small JSON (below the threshold): ${small.headers.get('Content-Encoding') ?? 'not compressed'}`);

const ranged = await client.get(`${url}/data`, { decompress: false, headers: { Range: 'bytes=0-9' } });
console.log(`with Range: ${ranged.headers.get('Content-Encoding') ?? 'not compressed'}`);

const events: string[] = [];
await client.get(`${url}/events`, { sseCallback: (ev, res) => events.push(`${ev.data} (${decodedContentEncoding(res)})`) });
console.log(`events: ${events.join(', ')}`);

client.close();
await server.close();
await kernel.close();
