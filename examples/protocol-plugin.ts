/**
 * Writing a protocol plugin: a `server.protocol` tap takes a connection before HTTP/1.1 reads
 * it, as plugins h2 (by ALPN) and h2c (by the HTTP/2 preface) do. This one speaks a line
 * protocol, `PING <text>` answered `PONG <text>`, on the same port as HTTP/1.1, and registers
 * each connection it takes with the server, so `close()` and `forceClose()` reach it.
 * Starts a server on 127.0.0.1, speaks both protocols to it, prints what it got and exits.
 *
 *   node --import tsx examples/protocol-plugin.ts
 *
 * Outside this repository, import from 'switchyard', 'switchyard/kernel' and
 * 'switchyard/protocol' (the entry for protocol plugins: `ProtocolConnection`, …).
 */
import { Buffer } from 'node:buffer';
import net from 'node:net';
import * as HTTP from '../index.js';
import { definePlugin } from '../kernel/index.js';
import type { ProtocolConnection } from '../kernel/protocol.js';

/** What a connection of the protocol opens with: declared as the tap's preface, so the kernel reads that far before asking. */
const MAGIC = Buffer.from('PING ');

/** True when `head` starts with `PING ` (the kernel read up to it, or until the bytes differed). */
function isPing(head: Uint8Array): boolean {
  return head.length >= MAGIC.length && Buffer.from(head.buffer, head.byteOffset, MAGIC.length).equals(MAGIC);
}

const pingPong = definePlugin({
  name: 'ping-pong',
  register(kernel) {
    kernel.hooks.server.protocol.tap({ name: 'ping-pong', preface: MAGIC }, (socket, info) => {
      // A TLS connection comes with its ALPN result and an empty head; a plain one with its first bytes.
      const host = info.host;
      if (info.alpnProtocol !== null || host === undefined || !isPing(info.head)) return undefined; // HTTP/1.1 reads it

      // Ours from here: the socket is paused, without the kernel's listeners; `head` was read from it.
      const conn: ProtocolConnection = {
        shutdown: () => socket.end(), // close(): no more lines; the peer's end then closes the socket
        destroy: () => socket.destroy(), // forceClose(), or close() past its grace period
      };
      if (!host.addConnection(conn)) {
        socket.destroy(); // the server is already closing
        return true;
      }
      socket.once('close', () => host.removeConnection(conn));
      socket.on('error', () => socket.destroy()); // a reset peer: 'close' follows

      let pending = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => {
        pending += chunk;
        for (let i = pending.indexOf('\n'); i >= 0; i = pending.indexOf('\n')) {
          const line = pending.slice(0, i);
          pending = pending.slice(i + 1);
          if (line.startsWith('PING ')) socket.write(`PONG ${line.slice(MAGIC.length)}\n`);
          else socket.end('ERR expected PING <text>\n');
        }
      });
      socket.unshift(Buffer.from(info.head)); // the bytes the kernel read come first
      socket.resume();
      return true; // taken: the kernel does not serve HTTP/1.1 on it
    });
  },
});

const kernel = await HTTP.createKernel().register(pingPong).ready();
const server = await kernel.serve(() => new HTTP.Response(200, 'plain HTTP/1.1'), { host: '127.0.0.1', port: 0 });

console.log(`HTTP/1.1 on the port: ${(await kernel.client().get(`http://127.0.0.1:${server.port}/`)).text()}`);

// The line protocol on the same port; the connection stays open until the server closes.
const lines: string[] = [];
const socket = net.connect(server.port, '127.0.0.1', () => socket.write('PING one\nPING two\n'));
socket.setEncoding('utf8');
const ended = new Promise<void>((resolve, reject) => {
  socket.on('end', resolve);
  socket.on('error', reject);
});
await new Promise<void>((resolve) => {
  let buffered = '';
  socket.on('data', (d: string) => {
    buffered += d;
    const done = buffered.split('\n').filter((l) => l !== '');
    if (done.length === 2) {
      lines.push(...done);
      resolve();
    }
  });
});
console.log(`ping-pong: ${lines.join(', ')}`);
console.log(`server connections: ${server.connectionCount} (the HTTP/1.1 one, kept alive, and the ping-pong one)`);

// close() asks the plugin's connection to shut down (conn.shutdown), and waits until it is gone.
await kernel.close();
await ended;
console.log('server closed; the ping-pong connection was ended by the plugin');
