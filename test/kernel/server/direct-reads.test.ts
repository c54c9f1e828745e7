/**
 * A plain HTTP/1.1 connection reads straight from its socket's handle into one buffer that
 * every such connection shares (kernel/socket-reads.ts `readDirect`): each read's bytes
 * are valid only until the next read of any connection. What the server keeps past a read (a
 * request body gathered over several reads, the pipelined rest of a read while a handler runs,
 * a stream handler's unread body) must be its own copy. Each test lets another connection's
 * large request land in the shared buffer between keeping and using, on real loopback sockets.
 */
import { once } from 'node:events';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { listen, Response, serve } from '../../../kernel/index.js';
import type { Server } from '../../../kernel/server/server.js';
import { destroyAfter, forceCloseAfter } from '../../helpers/cleanup.js';
import { deferred } from '../../helpers/client.js';

/** A connection to `port` that collects what it reads. */
async function client(port: number): Promise<{ socket: net.Socket; until(text: string, count?: number): Promise<string> }> {
  const socket = destroyAfter(net.connect({ port, host: '127.0.0.1' }));
  await once(socket, 'connect');
  let got = '';
  const waiters: (() => void)[] = [];
  socket.on('data', (chunk: Buffer) => {
    got += chunk.toString('latin1');
    for (const w of waiters.splice(0)) w();
  });
  const until = async (text: string, count = 1): Promise<string> => {
    while (got.split(text).length - 1 < count) {
      await new Promise<void>((resolve, reject) => {
        waiters.push(resolve);
        socket.once('close', () => reject(new Error(`connection closed; got ${JSON.stringify(got.slice(0, 300))}`)));
      });
    }
    return got;
  };
  return { socket, until };
}

/** A request whose bytes (about `size`) overwrite the start of the shared read buffer; answered "other". */
function otherRequest(size: number): string {
  const body = 'z'.repeat(size);
  return `POST /other HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
}

async function started(server: Promise<Server>): Promise<number> {
  return forceCloseAfter(await server).port;
}

describe('direct reads: bytes kept past a read are copies', () => {
  it('a request body gathered over two reads, with another connection read in between', async () => {
    const port = await started(
      serve((req) => {
        if (req.target === '/other') return new Response(200, 'other');
        return new Response(200, `echo:${Buffer.from(req.body as Uint8Array).toString('latin1')}`);
      }),
    );
    const a = await client(port);
    a.socket.write('POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nAAAAA');
    const b = await client(port);
    b.socket.write(otherRequest(4000));
    await b.until('other');
    a.socket.write('BBBBB');
    expect(await a.until('echo:')).toContain('echo:AAAAABBBBB');
  });

  it('the pipelined rest of a read, kept while the first request is handled', async () => {
    const gate = deferred();
    const port = await started(
      serve(async (req) => {
        if (req.target === '/wait') {
          await gate.promise;
          return new Response(200, 'waited');
        }
        if (req.target === '/other') {
          gate.resolve();
          return new Response(200, 'other');
        }
        return new Response(200, `second:${req.target}:${(req.body as Uint8Array).length}`);
      }),
    );
    const a = await client(port);
    // The rest after the first head is large enough not to be copied for its size alone.
    const big = 'y'.repeat(40_000);
    a.socket.write(`GET /wait HTTP/1.1\r\nHost: x\r\n\r\nPOST /second HTTP/1.1\r\nHost: x\r\nContent-Length: ${big.length}\r\n\r\n${big}`);
    const b = await client(port);
    b.socket.write(otherRequest(60_000));
    await b.until('other');
    const got = await a.until('second:');
    expect(got).toContain('waited');
    expect(got).toContain(`second:/second:${big.length}`);
  });

  it("a stream handler's body, read after another connection's read", async () => {
    const gate = deferred();
    const port = await started(
      listen(async (stream) => {
        const req = stream.request;
        if (req.target === '/other') {
          await stream.readAll();
          gate.resolve();
          await stream.closeWrite('other');
          return;
        }
        await gate.promise;
        const body = Buffer.from(await stream.readAll()).toString('latin1');
        await stream.closeWrite(`body:${body}`);
      }),
    );
    const a = await client(port);
    a.socket.write('POST /late HTTP/1.1\r\nHost: x\r\nContent-Length: 8\r\n\r\nCCCCDDDD');
    const b = await client(port);
    b.socket.write(otherRequest(4000));
    await b.until('other');
    expect(await a.until('body:')).toContain('body:CCCCDDDD');
  });
});
