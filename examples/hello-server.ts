/**
 * `npm start` (until the demo lands): a keep-alive HTTP/1.1 server made from the kernel's
 * codec alone — `readRequest` reads each request head off the socket, the body streams,
 * `writeResponse` answers. The full server (`HTTP.serve`) replaces this loop in the server issue.
 */
import net from 'node:net';
import { ParseError, ProtocolError, Response, readAll, readRequest, writeResponse, AbstractBody } from '../kernel/index.js';

const port = Number(process.env.PORT ?? 8080);
const host = process.env.HOST ?? '127.0.0.1';

const server = net.createServer(async (socket) => {
  socket.on('error', () => socket.destroy());
  try {
    for (;;) {
      const req = await readRequest(socket); // the same socket: leftover bytes carry over
      const body = req.body instanceof AbstractBody ? await readAll(req.body, 1 << 20) : new Uint8Array(0);
      const text = `hello from switchyard\n${req.method} ${req.target}\n` +
        `user-agent: ${req.headers.get('user-agent') ?? '-'}\nbody bytes: ${body.length}\n`;
      const close = req.close || (req.headers.get('connection') ?? '').toLowerCase() === 'close' || req.protoMinor === 0;
      await writeResponse(socket, new Response(200, text, {
        headers: { 'Content-Type': 'text/plain; charset=utf-8', ...(close ? { Connection: 'close' } : {}) },
      }), req);
      if (close) break;
    }
  } catch (err) {
    if (err instanceof ParseError || err instanceof ProtocolError) {
      // Stream end between requests is the normal end of a keep-alive connection.
      if (!/ended before/.test(err.message)) socket.write('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
    }
  }
  socket.end();
});

server.listen(port, host, () => {
  console.log(`switchyard example server on http://${host}:${port}/  (Ctrl-C to stop)`);
});
process.once('SIGINT', () => {
  console.log('\nclosing');
  server.close(() => process.exit(0));
  setTimeout(() => process.exit(0), 1000).unref();
});
