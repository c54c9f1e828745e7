/**
 * Reading follows writing: a client that pipelines requests and never reads the responses makes
 * the server stop reading its connection (no more handlers run, no responses pile up), while
 * other clients are served; once it reads again, every request is answered in order.
 */
import { once } from 'node:events';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { Response } from '../../../kernel/index.js';
import { destroyAfter } from '../../helpers/cleanup.js';
import { expectServing, startServer, waitConnections, waitFor } from '../../helpers/server.js';

const REQ = Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n', 'latin1');

/** A connected socket that is not read (paused) until the test says so. */
async function silentClient(port: number): Promise<net.Socket> {
  const sock = destroyAfter(net.connect(port, '127.0.0.1'));
  sock.pause();
  await once(sock, 'connect');
  return sock;
}

/**
 * Writes `total` pipelined GETs, 500 per write, as fast as the socket takes them; stops early
 * when the socket has not drained within `ms`. Returns how many were written.
 */
async function pipelineGets(sock: net.Socket, total: number, ms: number): Promise<number> {
  const batch = Buffer.concat(Array<Buffer>(500).fill(REQ));
  const end = performance.now() + ms;
  let sent = 0;
  while (sent < total) {
    const ok = sock.write(batch);
    sent += 500;
    if (ok) continue;
    const left = end - performance.now();
    if (left <= 0) break;
    let t: NodeJS.Timeout | undefined;
    const drained = await Promise.race([once(sock, 'drain').then(() => true), new Promise<boolean>((r) => (t = setTimeout(() => r(false), left)))]);
    clearTimeout(t);
    if (!drained) break;
  }
  return sent;
}

describe('pipelining without reading', () => {
  it('stops reading while responses are backed up, serves others, and forgets the connection when it closes', async () => {
    const body = Buffer.alloc(16384, 'x');
    let calls = 0;
    const { server, port } = await startServer(() => {
      calls++;
      return new Response(200, body);
    });
    const sock = await silentClient(port);
    const sent = await pipelineGets(sock, 10_000, 1500);
    // Unbounded reading would run a handler for every request written (and hold its 16 KiB
    // response); bounded, only what the kernel's socket buffers absorb gets answered.
    await expect(waitFor(() => calls >= 5000, 1000, 'handler calls')).rejects.toThrow(/timed out/);
    expect(sent).toBeGreaterThan(5000);
    expect(calls).toBeLessThan(5000);
    // The server is not stuck on this connection.
    const res = await expectServing(port);
    expect(res.status).toBe(200);
    sock.destroy();
    await waitConnections(server, 0);
  });

  it('answers every pipelined request, in order, once the client reads', async () => {
    let calls = 0;
    const body = Buffer.alloc(16384, 'y');
    const { server, port } = await startServer((req) => {
      calls++;
      return new Response(200, body, { headers: { 'X-N': req.target.slice(1).padStart(6, '0') } });
    });
    const sock = await silentClient(port);
    const total = 3000;
    let raw = '';
    for (let i = 0; i < total; i++) raw += `GET /${i} HTTP/1.1\r\nHost: x\r\n\r\n`;
    sock.write(raw);
    // Let the server run into the backed-up socket, then read everything.
    await waitFor(() => calls > 0, 3000, 'first handler call');
    const seen: number[] = [];
    let tail = '';
    sock.setEncoding('latin1');
    sock.on('data', (s: string) => {
      const text = tail + s;
      const re = /X-N: (\d{6})\r\n/gi;
      let m: RegExpExecArray | null;
      let last = 0;
      while ((m = re.exec(text)) !== null) {
        seen.push(Number(m[1]));
        last = re.lastIndex;
      }
      tail = text.slice(Math.max(last, text.length - 16));
    });
    sock.resume();
    await waitFor(() => seen.length === total, 10_000, `all ${total} responses (have ${seen.length})`);
    expect(seen).toEqual(Array.from({ length: total }, (_, i) => i));
    expect(calls).toBe(total);
    sock.destroy();
    await waitConnections(server, 0);
  });
});
