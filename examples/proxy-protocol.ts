/**
 * Who the client is behind a load balancer. A server with `proxyProtocol: true` sits behind a
 * small TCP relay that does what HAProxy's `send-proxy` does (a PROXY v1 line, then the
 * client's bytes): `peerAddr()` is the client, not the relay. A second server with
 * `trustProxy` reads `X-Forwarded-For`/`-Proto` from its trusted proxy only, as fastify's
 * `trustProxy` does: `clientOf(request)`. Prints what each saw, closes everything, exits.
 *
 *   node --import tsx examples/proxy-protocol.ts
 */
import net from 'node:net';
import * as HTTP from '../index.js';
import { clientOf, presets, proxyProtocol } from '../plugins/index.js';

const kernel = await HTTP.createKernel()
  .register([...presets.defaults, proxyProtocol])
  .ready();

// 1. The PROXY protocol: the header comes first on every connection (TLS included, before the handshake).
const server = await kernel.listen(
  async (stream) => {
    await stream.closeWrite(`you are ${String(stream.peerAddr())}`);
  },
  { port: 0, proxyProtocol: ['127.0.0.1'] }, // believe the header from the relay's address only
);

// What HAProxy's `send-proxy` does, in a few lines: connect to the backend, say who the client is, relay.
const relayPorts: number[] = [];
const relay = net.createServer((client) => {
  const backend = net.connect({ host: '127.0.0.1', port: server.port }, () => {
    relayPorts.push(backend.localPort!);
    backend.write(`PROXY TCP4 ${client.remoteAddress} 127.0.0.1 ${client.remotePort} ${server.port}\r\n`);
    client.pipe(backend).pipe(client);
  });
  backend.on('error', () => client.destroy());
  client.on('error', () => backend.destroy());
});
await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
const relayPort = (relay.address() as net.AddressInfo).port;

const client = new HTTP.Client({ kernel });
const res = await client.get(`http://127.0.0.1:${relayPort}/`, { headers: { Connection: 'close' } });
console.log(`through the relay: ${res.text()}`);
const seenPort = Number(/:(\d+)$/.exec(res.text())![1]);
console.log(`peerAddr() is the client, not the relay: ${!relayPorts.includes(seenPort)}`);

// 2. trustProxy: forwarding headers count only from the trusted proxy (here 127.0.0.1, the test's own address).
const app = await kernel.serve(
  (req) => {
    const c = clientOf(req)!;
    return new HTTP.Response(200, `${c.address} over ${c.scheme} to ${c.host}`);
  },
  { port: 0, trustProxy: ['127.0.0.1'] },
);
const forwarded = await client.get(`http://127.0.0.1:${app.port}/`, {
  headers: { 'X-Forwarded-For': '203.0.113.9', 'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'shop.example' },
});
console.log(`trustProxy: ${forwarded.text()}`);

await client.close();
await new Promise<void>((resolve) => relay.close(() => resolve()));
await kernel.close();
