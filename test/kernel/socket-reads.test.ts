/**
 * kernel/socket-reads.ts on real loopback sockets: reads bounded to what the caller
 * asks (the rest stays in the kernel's socket buffer), the switch back to ordinary reads
 * through the one shared buffer (bytes intact with several sockets reading at once), and the
 * refusal for a socket that already reads into a user buffer of its own.
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { boundReads, pauseReadable, unboundReads } from '../../kernel/socket-reads.js';
import { closeNetServerAfter, destroyAfter } from '../helpers/cleanup.js';
import { deferred, within } from '../helpers/server.js';

/** A loopback listener whose accepted sockets go to `onSocket`; it and they are closed after the test. */
async function listen(onSocket: (s: net.Socket) => void): Promise<number> {
  const server = closeNetServerAfter(
    net.createServer((s) => {
      destroyAfter(s);
      s.on('error', () => {});
      onSocket(s);
    }),
  );
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as net.AddressInfo).port;
}

async function connect(port: number, options: Partial<net.NetConnectOpts> = {}): Promise<net.Socket> {
  const c = destroyAfter(net.connect({ port, host: '127.0.0.1', ...options } as net.NetConnectOpts));
  await once(c, 'connect');
  return c;
}

describe('boundReads', () => {
  it('reads no more than asked; after a stop the rest is still unread, and unboundReads delivers it intact', async () => {
    const reads: string[] = [];
    const stopped = deferred<net.Socket>();
    const port = await listen((s) => {
      let total = 0;
      const ok = boundReads(s, 5, (bytes, full) => {
        expect(bytes.length).toBeLessThanOrEqual(5);
        if (bytes.length === 5) expect(full).toBe(true);
        reads.push(bytes.toString('latin1'));
        total += bytes.length;
        if (total < 12) return Math.min(5, 12 - total);
        stopped.resolve(s);
        return 0;
      });
      expect(ok).toBe(true);
    });
    const c = await connect(port);
    c.write('hello world, and the rest of the message.');
    const s = await within(stopped.promise, 3000, 'twelve bytes read');
    expect(reads.join('')).toBe('hello world,');
    expect(reads.every((r) => r.length <= 5)).toBe(true);
    // Nothing past what was asked has left the kernel.
    expect(s.bytesRead).toBe(12);
    expect(s.readableLength).toBe(0);
    unboundReads(s);
    let rest = '';
    s.on('data', (d: Buffer) => (rest += d.toString('latin1')));
    s.resume();
    c.end();
    await within(once(s, 'end'), 3000, 'the rest');
    expect(rest).toBe(' and the rest of the message.');
  });

  it('after unboundReads, sockets reading at once through the shared buffer each get their own bytes', async () => {
    const digests = new Map<number, string>();
    const allDone = deferred();
    const N = 4;
    const port = await listen((s) => {
      expect(boundReads(s, 1, () => 0)).toBe(true);
      unboundReads(s);
      const hash = createHash('sha256');
      let id = -1;
      s.on('data', (d: Buffer) => {
        if (id < 0) id = d[0]!;
        hash.update(d);
      });
      s.on('end', () => {
        digests.set(id, hash.digest('hex'));
        if (digests.size === N) allDone.resolve();
      });
      s.resume();
    });
    const expected = new Map<number, string>();
    const clients = await Promise.all(Array.from({ length: N }, () => connect(port)));
    clients.forEach((c, i) => {
      // 1 MiB each, different bytes per client (the first byte names it), written at once.
      const payload = Buffer.alloc(1024 * 1024, i + 1);
      for (let j = 1; j < payload.length; j += 4096) payload[j] = (j * (i + 7)) & 0xff;
      expected.set(i + 1, createHash('sha256').update(payload).digest('hex'));
      c.end(payload);
    });
    await within(allDone.promise, 10000, 'every payload');
    expect(digests).toEqual(expected);
  });

  it('pauseReadable stops the readable side only: the handle keeps reading into the socket buffer', async () => {
    const got = deferred<net.Socket>();
    const port = await listen((s) => {
      boundReads(s, 3, () => {
        unboundReads(s);
        pauseReadable(s);
        got.resolve(s);
        return 1;
      });
    });
    const c = await connect(port);
    c.write('abcdefgh');
    const s = await within(got.promise, 3000, 'the first read');
    expect(s.isPaused()).toBe(true);
    // The rest of the burst goes on into the socket's buffer while it is paused.
    if (s.readableLength === 0) await within(once(s, 'readable'), 3000, 'the rest buffered');
    expect(s.readableLength).toBe(5);
    expect(s.read()?.toString('latin1')).toBe('defgh');
  });

  it('refuses a socket that already reads into a user buffer of its own, and leaves it working', async () => {
    const port = await listen((s) => {
      s.end('reply');
    });
    const received: string[] = [];
    const buf = Buffer.alloc(64);
    const c = await connect(port, {
      onread: {
        buffer: buf,
        callback: (n: number, b: Uint8Array) => {
          received.push(Buffer.from(b.subarray(0, n)).toString('latin1'));
          return true;
        },
      },
    });
    expect(boundReads(c, 4, () => 0)).toBe(false);
    await within(once(c, 'end'), 3000, 'the reply');
    expect(received.join('')).toBe('reply');
  });
});
