/**
 * Plugin `websockets`: `WebSockets.listen` runs a handler per WebSocket connection,
 * `WebSockets.open` connects (`ws://`, `wss://`, through proxies too), both with
 * permessage-deflate on `compress: true` and subprotocol negotiation. A normal server can also
 * upgrade a request itself: `WebSockets.isUpgrade(stream.message)`, `WebSockets.upgrade(stream, handler)`.
 * Starts an echo server on 127.0.0.1, talks to it, prints what happened and exits.
 *
 *   node --import tsx examples/websockets.ts
 */
import * as HTTP from '../index.js';

const server = await HTTP.WebSockets.listen(
  async (ws) => {
    console.log(`server: connection from ${String(ws.peerAddr())}, subprotocol ${ws.subprotocol}, extensions "${ws.extensions}"`);
    for await (const message of ws) {
      // Text comes as a string, binary as a Uint8Array; echo both back, text upper-cased.
      await ws.send(typeof message === 'string' ? message.toUpperCase() : message);
    }
    console.log(`server: closed with ${ws.closeCode}`);
  },
  { host: '127.0.0.1', port: 0, compress: true, subprotocols: ['echo.v1'] },
);

const url = `ws://127.0.0.1:${server.port}/`;
const summary = await HTTP.WebSockets.open(
  url,
  async (ws) => {
    console.log(`client: connected, compressed=${ws.compressed}, subprotocol ${ws.subprotocol}`);
    await ws.send('hello over a websocket');
    console.log(`client: got "${String(await ws.receive())}"`);
    await ws.send(new Uint8Array([1, 2, 3]));
    const bytes = (await ws.receive()) as Uint8Array;
    console.log(`client: got ${bytes.length} binary bytes [${[...bytes].join(', ')}]`);
    await ws.ping('are you there');
    return 'ping answered';
  },
  { compress: true, subprotocols: ['echo.v1'] },
); // the handler's return closes with 1000

console.log(`client: done, ${summary}`);
await server.close();
