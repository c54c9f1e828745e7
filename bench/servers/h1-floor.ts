/**
 * The floor of an HTTP/1.1 server written in JavaScript on switchyard's own codec: every
 * request head parsed and checked by the kernel's `HeadParser`, every response head serialized
 * by its serializer (status line, the handler's fields checked, Content-Length, Date), the
 * responses of one read sent in one write, reads taken straight from the socket's handle as the
 * server takes them (`readDirect`); and nothing else: no exchange, no request or response
 * objects, no hooks, no limits or timers. A server cannot do less HTTP work per
 * request, so switchyard's distance to this row is what its pipeline costs.
 */
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { HeadParser } from '../../kernel/http1/head-parser.js';
import { buildResponseHead } from '../../kernel/http1/framing.js';
import { encodeMessageInto, messageLength } from '../../kernel/http1/serialize.js';
import { Headers } from '../../kernel/message/headers.js';
import { readDirect } from '../../kernel/socket-reads.js';
import { dateField } from '../../kernel/server/date.js';
import { announce, BODY, exitOnSignal, HOST, PORT } from './common.js';

const HEADERS = { 'Content-Type': 'text/plain' };
const body = typeof BODY === 'string' ? Buffer.from(BODY) : BODY;

function onConnection(socket: Socket): void {
  socket.setNoDelay(true);
  const parser = new HeadParser('request');
  const onBytes = (chunk: Buffer, end: number): void => {
    let at = 0;
    const heads: string[] = [];
    let bytes = 0;
    while (at < end) {
      at += parser.execute(chunk, at, end);
      if (!parser.complete) break;
      const head = buildResponseHead(200, '', new Headers(HEADERS), 'length', body.length, dateField(), parser.method);
      heads.push(head);
      bytes += messageLength(head, body);
      parser.reset();
    }
    if (heads.length === 0) return;
    const out = Buffer.allocUnsafe(bytes);
    let p = 0;
    for (const head of heads) {
      encodeMessageInto(out, p, head, body);
      p += messageLength(head, body);
    }
    socket.write(out);
  };
  socket.on('data', (chunk: Buffer) => onBytes(chunk, chunk.length));
  readDirect(socket, (nread, buf) => {
    onBytes(buf, nread);
    return true;
  });
  socket.on('error', () => socket.destroy());
}

const server = createServer(onConnection);
server.listen(PORT, HOST, () => announce((server.address() as AddressInfo).port));
exitOnSignal();
