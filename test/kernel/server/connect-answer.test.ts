/**
 * A 2xx answer to CONNECT on HTTP/1.1 (RFC 9110 §9.3.6): the connection becomes a tunnel right
 * after the head, so the head carries no Content-Length or Transfer-Encoding and no body follows.
 * A handler that answers 2xx without taking the socket leaves no tunnel, so the server closes.
 * The neighbours keep their framing: a non-2xx answer to CONNECT and a 2xx to another method.
 */
import { describe, expect, it } from 'vitest';
import { Response, type Request, type Stream } from '../../../kernel/index.js';
import { exchange, expectClosed, rawClient, startServer, startStreamServer } from '../../helpers/server.js';

const CONNECT = 'CONNECT origin.example:443 HTTP/1.1\r\nHost: origin.example:443\r\n\r\n';

/** Sends a CONNECT and returns every byte received until the server closes. */
async function connectAnswer(port: number): Promise<string> {
  const c = await rawClient(port);
  await c.write(CONNECT);
  const bytes = await expectClosed(c);
  c.destroy();
  return bytes.toString('latin1');
}

/** The head ends the bytes (no body) and names no framing field. */
function expectBareHead(wire: string, status: number): void {
  expect(wire.startsWith(`HTTP/1.1 ${status} `)).toBe(true);
  expect(wire.indexOf('\r\n\r\n')).toBe(wire.length - 4);
  expect(wire).not.toMatch(/^content-length:/im);
  expect(wire).not.toMatch(/^transfer-encoding:/im);
}

describe('a 2xx answer to CONNECT', () => {
  it('a request handler: no framing field, no body, and the connection closes', async () => {
    const { port } = await startServer((req: Request) => new Response(req.method === 'CONNECT' ? 200 : 404, 'ok', { headers: [['X-A', '1']] }));
    const wire = await connectAnswer(port);
    expectBareHead(wire, 200);
    expect(wire).toMatch(/^X-A: 1\r\n/m);
  });

  it('drops a Content-Length or Transfer-Encoding the handler set', async () => {
    for (const field of [
      ['Content-Length', '2'],
      ['Transfer-Encoding', 'chunked'],
    ] as [string, string][]) {
      const { port } = await startServer(() => new Response(200, 'ok', { headers: [field] }));
      expectBareHead(await connectAnswer(port), 200);
    }
  });

  it('a stream handler that writes a body: no framing field, no body', async () => {
    const { port } = await startStreamServer(async (stream: Stream) => {
      stream.setStatus(201);
      await stream.write('body');
    });
    expectBareHead(await connectAnswer(port), 201);
  });

  it('a non-2xx answer to CONNECT keeps its framing, its body and the connection', async () => {
    const { port } = await startServer((req: Request) => new Response(req.method === 'CONNECT' ? 407 : 200, 'no'));
    const { client, res } = await exchange(port, CONNECT, 'CONNECT');
    expect(res.status).toBe(407);
    expect(res.headers.get('Content-Length')).toBe('2');
    expect(res.text).toBe('no');
    await client.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    expect((await client.response()).status).toBe(200);
    client.destroy();
  });

  it('a 2xx to another method keeps its Content-Length', async () => {
    const { port } = await startServer(() => new Response(200, 'ok'));
    const { client, res } = await exchange(port, 'GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(res.headers.get('Content-Length')).toBe('2');
    expect(res.text).toBe('ok');
    client.destroy();
  });
});
