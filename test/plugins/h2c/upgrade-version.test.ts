/**
 * `Upgrade: h2c` in an HTTP/1.0 request is ignored (RFC 9110 §7.8: a server MUST ignore
 * Upgrade received in HTTP/1.0): the request is answered as HTTP/1, while the same request in
 * HTTP/1.1 is switched (101). Raw sockets on loopback.
 */
import { describe, expect, it } from 'vitest';
import { createKernel, Response } from '../../../kernel/index.js';
import { h2 } from '../../../plugins/h2/index.js';
import { h2c } from '../../../plugins/h2c/index.js';
import { exchange, onCleanup, rawClient, startServer, waitFor } from '../../helpers/server.js';

const UPGRADE = 'Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n';

describe('h2c upgrade and the HTTP version', () => {
  it('ignores Upgrade: h2c in an HTTP/1.0 request, switches an HTTP/1.1 one', async () => {
    const kernel = await createKernel().register(h2).register(h2c).ready();
    onCleanup(() => kernel.close());
    const { port } = await startServer((req) => new Response(200, `plain HTTP/${req.protoMajor}.${req.protoMinor}`), { kernel });
    const old = await exchange(port, `GET / HTTP/1.0\r\nHost: x\r\n${UPGRADE}\r\n`);
    old.client.destroy();
    expect(old.res.status).toBe(200);
    expect(old.res.text).toBe('plain HTTP/1.0');
    const c = await rawClient(port);
    await c.write(`GET / HTTP/1.1\r\nHost: x\r\n${UPGRADE}\r\n`);
    await waitFor(() => c.received.includes('\r\n\r\n') || c.isClosed, 3000, 'the answer to the HTTP/1.1 upgrade');
    expect(c.received.toString('latin1')).toMatch(/^HTTP\/1\.1 101 /);
    c.destroy();
  });
});

describe('h2c upgrade and the client preface', () => {
  it('a first SETTINGS frame declaring more than 16 KiB is refused at once, not waited for', async () => {
    const kernel = await createKernel().register(h2).register(h2c).ready();
    onCleanup(() => kernel.close());
    const { port } = await startServer(() => new Response(200, 'ok'), { kernel, readHeaderTimeout: 10_000 });
    const c = await rawClient(port);
    await c.write(`GET / HTTP/1.1\r\nHost: x\r\n${UPGRADE}\r\n`);
    await waitFor(() => c.received.includes('\r\n\r\n'), 3000, 'the 101');
    // The preface, then a SETTINGS frame header declaring 1 MiB (a multiple of 6): no valid
    // preface has it, and the server must not hold the connection for its bytes.
    const header = Buffer.from([0x10, 0x00, 0x02, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00]);
    await c.write(Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), header]));
    await waitFor(() => c.isClosed, 3000, 'the connection closed');
  });
});
