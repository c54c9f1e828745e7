/**
 * A streamed request body whose source never ends is released when the HTTP/1 exchange ends
 * before the body was sent: the server answers early, closes the connection, or the call is
 * canceled. A Readable is destroyed, an async iterator's `return()` is called; the call
 * settles either way. Raw servers on loopback play the peer.
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { closedPort, newClient, okResponse, rawServer, rejection, stalledPort, text, waitFor, within } from '../../helpers/client.js';

/** An async iterable that yields `first`, then waits forever; records `return()` calls. */
function endless(first: string): AsyncIterable<Uint8Array> & { returned: number; nexts: number } {
  const it = {
    returned: 0,
    nexts: 0,
    [Symbol.asyncIterator]() {
      return {
        next: (): Promise<IteratorResult<Uint8Array>> => {
          it.nexts++;
          if (it.nexts === 1) return Promise.resolve({ done: false, value: Buffer.from(first) });
          return new Promise(() => undefined);
        },
        return: (): Promise<IteratorResult<Uint8Array>> => {
          it.returned++;
          return Promise.resolve({ done: true, value: undefined });
        },
      };
    },
  };
  return it;
}

/** A raw server that answers each request as soon as its head arrived, without reading its body. */
function answersEarly(response = okResponse('early', 'Connection: close\r\n')) {
  return rawServer((sock) => {
    let head = '';
    sock.on('data', (d: Buffer) => {
      if (head.includes('\r\n\r\n')) return;
      head += d.toString('latin1');
      if (head.includes('\r\n\r\n')) sock.write(response);
    });
  });
}

describe('streamed request bodies the exchange stops sending', () => {
  it('a never-ending Readable is destroyed when the server answers before reading it', async () => {
    const srv = await answersEarly();
    const src = new PassThrough();
    src.write('first');
    const c = newClient();
    const res = await within(c.post(`${srv.origin}/`, { body: src }), 5000, 'the early response');
    expect(text(res)).toBe('early');
    await waitFor(() => src.destroyed, 5000, 'the Readable to be destroyed');
  });

  it('an async iterator that never ends is returned when the server answers before reading it', async () => {
    const srv = await answersEarly();
    const src = endless('first');
    const c = newClient();
    const res = await within(c.post(`${srv.origin}/`, { body: src }), 5000, 'the early response');
    expect(text(res)).toBe('early');
    await waitFor(() => src.returned > 0, 5000, 'return() on the iterator');
  });

  it('a never-ending Readable is destroyed and an iterator returned when the server closes the connection', async () => {
    const srv = await rawServer((sock) => {
      sock.once('data', () => sock.destroy());
    });
    const c = newClient();
    const readable = new PassThrough();
    readable.write('first');
    expect(await within(rejection(c.post(`${srv.origin}/`, { body: readable })), 5000, 'the failure')).toBeInstanceOf(Error);
    await waitFor(() => readable.destroyed, 5000, 'the Readable to be destroyed');
    const iter = endless('first');
    expect(await within(rejection(c.post(`${srv.origin}/`, { body: iter })), 5000, 'the failure')).toBeInstanceOf(Error);
    await waitFor(() => iter.returned > 0, 5000, 'return() on the iterator');
  });

  it('a never-ending Readable is destroyed when the call is canceled while it is sent', async () => {
    let sawBody: () => void = () => undefined;
    const bodyArrived = new Promise<void>((resolve) => (sawBody = resolve));
    const srv = await rawServer((sock) => {
      let got = '';
      sock.on('data', (d: Buffer) => {
        got += d.toString('latin1');
        if (got.includes('first')) sawBody();
      });
    });
    const c = newClient();
    const src = new PassThrough();
    src.write('first');
    const ac = new AbortController();
    const p = c.post(`${srv.origin}/`, { body: src, signal: ac.signal });
    await within(bodyArrived, 5000, 'the first chunk at the server');
    ac.abort();
    expect(await within(rejection(p), 5000, 'the cancellation')).toBeInstanceOf(Error);
    await waitFor(() => src.destroyed, 5000, 'the Readable to be destroyed');
  });
});

describe('streamed request bodies of calls that never reach a connection', () => {
  it('a never-ending Readable is destroyed when the connection is refused', async () => {
    const port = await closedPort();
    const src = new PassThrough();
    src.write('first');
    const c = newClient();
    expect(await within(rejection(c.post(`http://127.0.0.1:${port}/`, { body: src })), 5000, 'the failure')).toBeInstanceOf(Error);
    await waitFor(() => src.destroyed, 5000, 'the Readable to be destroyed');
  });

  it('an async iterator is returned when the call is canceled while it connects', async () => {
    const port = await stalledPort();
    const src = endless('first');
    const c = newClient();
    const ac = new AbortController();
    const p = c.post(`http://127.0.0.1:${port}/`, { body: src, signal: ac.signal });
    await new Promise<void>((resolve) => setImmediate(resolve)); // the connect is under way
    ac.abort();
    expect(await within(rejection(p), 5000, 'the cancellation')).toBeInstanceOf(Error);
    await waitFor(() => src.returned > 0, 5000, 'return() on the iterator');
  });
});
