/**
 * Benchmark server: bare `node:net`, the ceiling. It parses nothing: per read it counts the
 * complete request heads (`\r\n\r\n`, tracked across read boundaries; the load has no request
 * bodies) and answers them all with one write of a precomputed response repeated that many
 * times. See ./common.ts.
 */
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { announce, BODY, BODY_LENGTH, exitOnSignal, HOST, PORT } from './common.js';

const ONE = Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ${BODY_LENGTH}\r\n\r\n`, 'latin1'), typeof BODY === 'string' ? Buffer.from(BODY) : BODY]);
const CACHE_MAX = 64;
const cache: Buffer[] = [Buffer.alloc(0), ONE];

function responses(n: number): Buffer {
  let buf = cache[n];
  if (buf === undefined) {
    buf = Buffer.concat(Array<Buffer>(n).fill(ONE));
    if (n <= CACHE_MAX) cache[n] = buf;
  }
  return buf;
}

const CRLFCRLF = Buffer.from('\r\n\r\n', 'latin1');

function onConnection(socket: Socket): void {
  socket.setNoDelay(true);
  // How many bytes of "\r\n\r\n" the previous read ended with (0..3).
  let partial = 0;
  socket.on('data', (chunk: Buffer) => {
    let count = 0;
    let from = 0;
    if (partial > 0) {
      // Does this read complete a separator the previous one started?
      const need = 4 - partial;
      const n = Math.min(need, chunk.length);
      if (chunk.compare(CRLFCRLF, partial, partial + n, 0, n) !== 0) {
        partial = 0;
      } else if (n < need) {
        partial += n; // still incomplete: a tiny read
        return;
      } else {
        count++;
        from = need;
        partial = 0;
      }
    }
    for (;;) {
      const at = chunk.indexOf(CRLFCRLF, from);
      if (at < 0) break;
      count++;
      from = at + 4;
    }
    // Trailing prefix of the separator, for the next read.
    const end = chunk.length;
    for (let k = 3; k > 0; k--) {
      if (end - k >= from && chunk.compare(CRLFCRLF, 0, k, end - k, end) === 0) {
        partial = k;
        break;
      }
    }
    if (count > 0) socket.write(responses(count));
  });
  socket.on('error', () => socket.destroy());
}

const server = createServer(onConnection);
server.listen(PORT, HOST, () => announce((server.address() as AddressInfo).port));
exitOnSignal();
