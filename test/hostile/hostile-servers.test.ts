/**
 * The client on the default preset against hostile servers, played by raw `node:net` servers on
 * loopback: a head that never ends, a body longer than declared, a flood of 1xx responses, a
 * head dripped one byte at a time, and a redirect loop. Each ends with the error that names
 * the bound, within a time bound, with memory bounded and the hostile connection closed.
 *
 * Covered elsewhere and not repeated here: an endless chunked or read-to-close body
 * (test/kernel/client/hostile.test.ts, ResponseTooLargeError at maxResponseBytes) and gzip,
 * deflate and br bombs (test/plugins/decompression/bombs.test.ts, DecompressionLimitError on
 * the ratio after about a MiB, one coding at a time, with a Content-Length); added here: a bomb
 * under two stacked codings, and a compressed body that never ends.
 */
import type net from 'node:net';
import zlib from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { Client, createKernel, HTTPError, ProtocolError, TimeoutError, type Kernel } from '../../kernel/index.js';
import { DecompressionLimitError, DEFAULT_REDIRECT_LIMIT, presets, TooManyRedirectsError } from '../../plugins/index.js';
import { closeAfter, track } from '../helpers/cleanup.js';
import { rawServer, readRequests, rejection, within } from '../helpers/client.js';
import { growth, memory, MiB } from './peers.js';

let kernel: Kernel | null = null;

/** A client on a kernel with `presets.defaults` (one kernel for the file), closed after the test. */
async function defaultClient(): Promise<Client> {
  kernel ??= await createKernel().register(presets.defaults).ready();
  return closeAfter(new Client({ kernel }));
}

afterAll(async () => {
  await kernel?.close();
});

/** Writes `piece()` to `s` as fast as it drains until `s` closes; returns a counter of bytes written. */
function pump(s: net.Socket, piece: () => Buffer | string): { sent: () => number } {
  let sent = 0;
  const go = (): void => {
    while (!s.destroyed && s.writable) {
      const p = piece();
      sent += p.length;
      if (!s.write(p)) {
        s.once('drain', go);
        return;
      }
    }
  };
  go();
  return { sent: () => sent };
}

describe('hostile servers against the client (default preset)', () => {
  it('a head that never ends (endless header fields) fails with ProtocolError at maxHeaderBytes, and the connection is closed', async () => {
    let flood: { sent: () => number } | null = null;
    const srv = await rawServer((s) =>
      s.once('data', () => {
        s.write('HTTP/1.1 200 OK\r\n');
        let i = 0;
        const line = Buffer.from(`X-Flood-0000: ${'a'.repeat(100)}\r\n`);
        flood = pump(s, () => (line.write(String(i++ % 10_000).padStart(4, '0'), 8, 'latin1'), Buffer.from(line)));
      }),
    );
    const client = await defaultClient();
    const before = memory();
    const t0 = performance.now();
    const err = await within(rejection(client.get(`${srv.origin}/`)), 10_000, 'the endless head to be refused');
    expect(err, String(err)).toBeInstanceOf(ProtocolError);
    expect(err).toBeInstanceOf(HTTPError);
    expect(err.message).toMatch(/head exceeds maxHeaderBytes \(\d+ bytes\)/);
    expect(performance.now() - t0).toBeLessThan(5000);
    await within(srv.closedAt(1), 5000, 'the client to close the connection');
    // The head is refused at the limit (kilobytes), not after megabytes held.
    expect(growth(before).heap).toBeLessThan(64 * MiB);
    expect(flood!.sent()).toBeLessThan(64 * MiB);
  });

  it('one header line that never ends fails with ProtocolError at maxLineBytes, and the connection is closed', async () => {
    const srv = await rawServer((s) =>
      s.once('data', () => {
        s.write('HTTP/1.1 200 OK\r\nX-Endless: ');
        const chunk = Buffer.alloc(16 * 1024, 0x61);
        pump(s, () => chunk);
      }),
    );
    const client = await defaultClient();
    const err = await within(rejection(client.get(`${srv.origin}/`)), 10_000, 'the endless line to be refused');
    expect(err, String(err)).toBeInstanceOf(ProtocolError);
    expect(err.message).toMatch(/header line exceeds maxLineBytes \(\d+ bytes\)/);
    await within(srv.closedAt(1), 5000, 'the client to close the connection');
  });

  it('a body longer than declared: the call gets the declared bytes, and the connection is not reused', async () => {
    let requests = 0;
    const srv = await rawServer((s) =>
      readRequests(s, () => {
        requests++;
        // Content-Length 5, then 10 bytes in the same write: 5 bytes are not part of any response.
        s.write('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloWORLD');
      }),
    );
    const client = await defaultClient();
    const first = await within(client.get(`${srv.origin}/a`), 5000, 'the first response');
    expect(first.status).toBe(200);
    expect(Buffer.from(first.body as Uint8Array).toString()).toBe('hello');
    const second = await within(client.get(`${srv.origin}/b`), 5000, 'the second response');
    expect(Buffer.from(second.body as Uint8Array).toString()).toBe('hello');
    expect(requests).toBe(2);
    // The extra bytes were never read as the next response: the second call had its own connection.
    expect(srv.connections).toBe(2);
    await within(srv.closedAt(1), 5000, 'the first connection to be closed');
  });

  it('a flood of 1xx responses fails the call with ProtocolError after 10 of them, and memory stays flat', async () => {
    let flood: { sent: () => number } | null = null;
    const interim = [Buffer.from('HTTP/1.1 100 Continue\r\n\r\n'), Buffer.from('HTTP/1.1 102 Processing\r\n\r\n')];
    let n = 0;
    const srv = await rawServer((s) => s.once('data', () => (flood = pump(s, () => interim[n++ & 1]!))));
    const client = await defaultClient();
    const before = memory();
    const err = await within(rejection(client.get(`${srv.origin}/`)), 5_000, 'the 1xx flood to end the call');
    expect(err, String(err)).toBeInstanceOf(ProtocolError);
    expect(err.message).toMatch(/more than 10 informational \(1xx\) responses/);
    await within(srv.closedAt(1), 5000, 'the client to close the connection');
    expect(flood).not.toBeNull();
    expect(growth(before).heap).toBeLessThan(64 * MiB);
  });

  it('ten interim responses and then the final one are a response', async () => {
    const interim = 'HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n'.repeat(5) + 'HTTP/1.1 102 Processing\r\n\r\n'.repeat(5);
    const srv = await rawServer((s) => s.once('data', () => s.write(`${interim}HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfinal`)));
    const client = await defaultClient();
    const res = await within(client.get(`${srv.origin}/`), 5000, 'the final response');
    expect(res.status).toBe(200);
    expect(Buffer.from(res.body as Uint8Array).toString()).toBe('final');
  });

  it('a head dripped one byte every 50 ms fails with TimeoutError at responseHeaderTimeout (a partial head does not extend it)', async () => {
    const head = Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Slow: dripping-along-very-slowly\r\n\r\nok');
    let dripped = 0;
    const srv = await rawServer((s) =>
      s.once('data', () => {
        const t = track(
          setInterval(() => {
            if (s.destroyed || dripped >= head.length) return clearInterval(t);
            s.write(head.subarray(dripped, dripped + 1));
            dripped++;
          }, 50),
        );
      }),
    );
    const client = await defaultClient();
    const t0 = performance.now();
    const err = await within(rejection(client.get(`${srv.origin}/`, { responseHeaderTimeout: 500 })), 10_000, 'the drip to time out');
    const took = performance.now() - t0;
    expect(err, String(err)).toBeInstanceOf(TimeoutError);
    expect((err as TimeoutError).operation).toBe('request');
    expect((err as TimeoutError).message).toContain('responseHeaderTimeout');
    expect(took).toBeGreaterThanOrEqual(450);
    expect(took).toBeLessThan(3000);
    expect(dripped).toBeLessThan(head.length);
    await within(srv.closedAt(1), 5000, 'the client to close the connection');
  });

  it('a redirect loop ends with TooManyRedirectsError at the default redirectLimit, and at a per-call one', async () => {
    let requests = 0;
    const srv = await rawServer((s) =>
      readRequests(s, () => {
        requests++;
        s.write('HTTP/1.1 302 Found\r\nLocation: /loop\r\nContent-Length: 0\r\n\r\n');
      }),
    );
    const client = await defaultClient();
    const err = await within(rejection(client.get(`${srv.origin}/loop`)), 10_000, 'the loop to be cut');
    expect(err, String(err)).toBeInstanceOf(TooManyRedirectsError);
    expect((err as TooManyRedirectsError).limit).toBe(DEFAULT_REDIRECT_LIMIT);
    expect(requests).toBe(DEFAULT_REDIRECT_LIMIT + 1);
    requests = 0;
    const three = await within(rejection(client.get(`${srv.origin}/loop`, { redirectLimit: 3 })), 10_000, 'the loop to be cut at 3');
    expect(three).toBeInstanceOf(TooManyRedirectsError);
    expect((three as TooManyRedirectsError).limit).toBe(3);
    expect(requests).toBe(4);
    // The loop went over one kept-alive connection, not one per hop.
    expect(srv.connections).toBe(1);
  });

  it('a bomb under two stacked codings (gzip over br, 64 MiB of zeros) stops with DecompressionLimitError after about a MiB', async () => {
    const inner = zlib.brotliCompressSync(Buffer.alloc(64 * MiB), { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 5 } });
    const body = zlib.gzipSync(inner);
    const srv = await rawServer((s) => readRequests(s, () => s.write(Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\nContent-Encoding: br, gzip\r\nContent-Length: ${body.length}\r\n\r\n`), body]))));
    const client = await defaultClient();
    const before = memory();
    const t0 = performance.now();
    const err = await within(rejection(client.get(`${srv.origin}/`)), 10_000, 'the stacked bomb to be stopped');
    expect(err, String(err)).toBeInstanceOf(DecompressionLimitError);
    expect((err as DecompressionLimitError).bound).toBe('ratio');
    expect((err as DecompressionLimitError).decoded).toBeLessThan(4 * MiB);
    expect(performance.now() - t0).toBeLessThan(3000);
    expect(growth(before).heap).toBeLessThan(64 * MiB);
  });

  it('a gzip body that never ends (zeros, chunked) stops with DecompressionLimitError, and the connection is closed', async () => {
    let fed = 0;
    const srv = await rawServer((s) =>
      s.once('data', () => {
        s.write('HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n');
        const gz = zlib.createGzip({ level: 9 });
        const zeros = Buffer.alloc(MiB);
        gz.on('data', (c: Buffer) => {
          if (!s.destroyed) s.write(Buffer.concat([Buffer.from(`${c.length.toString(16)}\r\n`), c, Buffer.from('\r\n')]));
        });
        s.once('close', () => gz.destroy());
        // A MiB of zeros per step, flushed: about a kilobyte on the wire each; at most 1 GiB in all.
        const feed = (): void => {
          while (!s.destroyed && fed < 1024) {
            fed++;
            const more = gz.write(zeros);
            gz.flush();
            if (!more) return void gz.once('drain', feed);
          }
        };
        feed();
      }),
    );
    const client = await defaultClient();
    const before = memory();
    const t0 = performance.now();
    const err = await within(rejection(client.get(`${srv.origin}/`)), 10_000, 'the endless compressed body to be stopped');
    expect(err, String(err)).toBeInstanceOf(DecompressionLimitError);
    expect((err as DecompressionLimitError).bound).toBe('ratio');
    expect(performance.now() - t0).toBeLessThan(5000);
    await within(srv.closedAt(1), 5000, 'the client to close the connection');
    // Stopped long before the server ran out of zeros to send.
    expect(fed).toBeLessThan(256);
    expect(growth(before).heap).toBeLessThan(64 * MiB);
  });
});
