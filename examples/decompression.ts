/**
 * Plugin `decompression`: the client sends `Accept-Encoding: gzip, deflate, br` and decodes
 * compressed bodies as they stream in; `decompress: false` gets the bytes as sent, and
 * `maxDecompressedBytes` stops a "zip bomb" with `DecompressionLimitError`.
 * Starts its own server on 127.0.0.1, talks to it, prints what happened and exits.
 *
 *   node --import tsx examples/decompression.ts
 */
import { brotliCompressSync, gzipSync } from 'node:zlib';
import * as HTTP from '../index.js';
import { decodedContentEncoding } from '../plugins/index.js';

const text = 'switchyard '.repeat(10_000); // 110 000 bytes that compress well

const server = await HTTP.serve(
  (req) => {
    const accepts = req.headers.get('Accept-Encoding') ?? '';
    const [coding, body] = accepts.includes('br') ? ['br', brotliCompressSync(text)] : accepts.includes('gzip') ? ['gzip', gzipSync(text)] : ['identity', Buffer.from(text)];
    console.log(`server: Accept-Encoding "${accepts}" -> ${coding}, ${body.length} bytes on the wire`);
    return new HTTP.Response(200, body, { headers: { 'Content-Type': 'text/plain', 'Content-Encoding': coding } });
  },
  { host: '127.0.0.1', port: 0 },
);
const url = `http://127.0.0.1:${server.port}/`;

const res = await HTTP.get(url);
console.log(`decoded: ${res.body!.length} bytes, was ${decodedContentEncoding(res)}, Content-Encoding now ${res.headers.get('Content-Encoding') ?? '(removed)'}`);

const gz = await HTTP.get(url, { headers: { 'Accept-Encoding': 'gzip' } });
console.log(`own Accept-Encoding gzip: ${gz.body!.length} bytes decoded, was ${decodedContentEncoding(gz)}`);

const raw = await HTTP.get(url, { decompress: false, headers: { 'Accept-Encoding': 'br' } });
console.log(`decompress: false: ${raw.body!.length} bytes, Content-Encoding ${raw.headers.get('Content-Encoding')}`);

try {
  await HTTP.get(url, { maxDecompressedBytes: 50_000 });
} catch (err) {
  if (!(err instanceof HTTP.DecompressionLimitError)) throw err;
  console.log(`maxDecompressedBytes 50000: ${err.name}: ${err.message}`);
}

HTTP.close(HTTP.getDefaultClient());
await server.close();
