/**
 * Plugins `h2` and `h2c`: HTTP/2 for servers and clients. Over TLS it is negotiated by ALPN
 * (h2 first, HTTP/1.1 for clients that do not offer it); on a plain port h2c (prior knowledge
 * or `Upgrade: h2c`) shares the port with HTTP/1.1. The client multiplexes concurrent requests
 * over one connection per origin. A kernel with just these two plugins, for a small stack.
 * Starts a TLS server and a plain one on 127.0.0.1, calls both, prints what was spoken, exits.
 *
 *   node --import tsx examples/h2.ts
 */
import * as HTTP from '../index.js';
import { h2, h2c } from '../plugins/index.js';

const kernel = await HTTP.createKernel().register([h2, h2c]).ready();
const handler = (req: HTTP.Request): HTTP.Response => new HTTP.Response(200, `HTTP/${req.protoMajor} ${req.method} ${req.target}`);

// A self-signed certificate made in memory; the client trusts it through tlsConfig.ca.
const cert = HTTP.selfSignedCertificate({ hosts: ['localhost', '127.0.0.1'] });
const secure = await kernel.serve(handler, { host: '127.0.0.1', port: 0, tls: { key: cert.key, cert: cert.cert } });
const plain = await kernel.serve(handler, { host: '127.0.0.1', port: 0 });
const client = kernel.client({ tlsConfig: { ca: cert.cert } });

const tls = `https://127.0.0.1:${secure.port}`;
const res = await client.get(`${tls}/hello`);
console.log(`https, ALPN: ${res.text()} (response HTTP/${res.protoMajor})`);

// Ten requests at once share that one HTTP/2 connection.
const many = await Promise.all(Array.from({ length: 10 }, (_, i) => client.get(`${tls}/item/${i}`)));
console.log(`10 concurrent requests: ${many.every((r) => r.protoMajor === 2) ? 'all HTTP/2' : 'mixed'}, server connections: ${secure.connectionCount}`);
console.log(`https, httpVersion 'h1': ${(await client.get(`${tls}/hello`, { httpVersion: 'h1' })).text()}`);

const h = `http://127.0.0.1:${plain.port}`;
console.log(`plain port, prior knowledge: ${(await client.get(`${h}/h2c`, { http2PriorKnowledge: true })).text()}`);
console.log(`plain port, default client: ${(await client.get(`${h}/h1`)).text()}`);

await kernel.close(); // closes the client and both servers
