/**
 * The HTTP/1.1 client reads a plain connection straight from its socket's handle into one
 * buffer shared by every such connection (kernel/socket-reads.ts `readDirect`): a read's bytes
 * are valid only until the next read of any connection. A response body that arrives over
 * several reads must be kept as copies: here another connection's response lands in the shared
 * buffer between the two halves of a body, on real loopback sockets.
 */
import { describe, expect, it } from 'vitest';
import { deferred, newClient, okResponse, rawServer, readRequests, text } from '../../helpers/client.js';

describe('direct reads: a response body kept past a read is a copy', () => {
  it('a body in two reads, with another connection read in between', async () => {
    const release = deferred();
    const firstHalf = deferred();
    const other = 'z'.repeat(4000);
    const srv = await rawServer((socket) => {
      readRequests(socket, (r) => {
        if (r.target !== '/slow') {
          socket.write(okResponse(other));
          return;
        }
        socket.write('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nAAAAA', () => firstHalf.resolve());
        void release.promise.then(() => socket.write('BBBBB'));
      });
    });
    const client = newClient();
    const slow = client.get(`${srv.origin}/slow`);
    await firstHalf.promise;
    // A second connection (the first is busy): its response is read into the shared buffer.
    expect(text(await client.get(`${srv.origin}/other`))).toBe(other);
    release.resolve();
    expect(text(await slow)).toBe('AAAAABBBBB');
  });
});
