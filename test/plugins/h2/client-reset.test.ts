/**
 * The HTTP/2 client when the server resets a stream (RST_STREAM): every call settles at once
 * with an `H2StreamResetError` carrying the code, whatever the method, the request body (none,
 * bytes, a stream still being sent) and the moment of the reset; a streamed request body is
 * released; a REFUSED_STREAM is sent again when its body can be. The peer is a bare
 * node:http2 server.
 */
import http2 from 'node:http2';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { AbstractBody, ParseError, ProtocolError, type Response } from '../../../kernel/index.js';
import { readAll } from '../../../kernel/message/body.js';
import { H2StreamResetError } from '../../../plugins/h2/index.js';
import { h2Client, nodeServer, waitFor } from '../../helpers/h2.js';

const { NGHTTP2_PROTOCOL_ERROR, NGHTTP2_INTERNAL_ERROR, NGHTTP2_REFUSED_STREAM, NGHTTP2_CANCEL, NGHTTP2_ENHANCE_YOUR_CALM } = http2.constants;

/** When the server resets: on the request head, after the first request DATA (or the head when there is no body), after its own response head. */
type When = 'on-head' | 'after-data' | 'after-response-head';

/**
 * The peer: `/<code>/<when>` resets with `code` at `when`. After its response head it sends
 * part of a body and resets once those bytes are written out (the write callback), so the
 * RST_STREAM follows them (and no END_STREAM comes before it).
 */
async function resettingServer(): Promise<{ port: number; streams: () => number }> {
  let streams = 0;
  const { port } = await nodeServer((st, h) => {
    streams++;
    st.on('error', () => undefined);
    const [, codeText, when] = String(h[':path']).split('/') as [string, string, When];
    const code = Number(codeText);
    const reset = (): void => {
      if (!st.destroyed) st.close(code);
    };
    if (when === 'on-head') reset();
    else if (when === 'after-data') {
      // A POST without a body ends with an empty DATA frame: no 'data', but 'end'.
      if (st.endAfterHeaders) reset();
      else {
        st.once('data', reset);
        st.once('end', reset);
      }
    } else {
      // waitForTrailers: node:http2 then sends no END_STREAM of its own before the RST_STREAM.
      st.respond({ ':status': 200, 'content-length': '100' }, { waitForTrailers: true });
      st.write('partial', reset);
    }
  });
  return { port, streams: () => streams };
}

/** A request body that sends one chunk and then waits until it is closed (its `return()` ends the wait). */
function endlessIterable(): AsyncIterable<Uint8Array> & { returned: boolean } {
  const it = {
    returned: false,
    [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
      let first = true;
      let wake: ((r: IteratorResult<Uint8Array>) => void) | null = null;
      return {
        next(): Promise<IteratorResult<Uint8Array>> {
          if (first) {
            first = false;
            return Promise.resolve({ done: false, value: Buffer.from('first chunk') });
          }
          return new Promise((r) => (wake = r));
        },
        return(): Promise<IteratorResult<Uint8Array>> {
          it.returned = true;
          wake?.({ done: true, value: undefined });
          return Promise.resolve({ done: true, value: undefined });
        },
      };
    },
  };
  return it;
}

type BodyKind = 'none' | 'bytes' | 'iterable' | 'readable';

/** The body for `kind`, and a check that a streamed one was released. */
function bodyOf(kind: BodyKind): { body: unknown; released: () => boolean } {
  if (kind === 'none') return { body: undefined, released: () => true };
  if (kind === 'bytes') return { body: 'abc', released: () => true };
  if (kind === 'iterable') {
    const it = endlessIterable();
    return { body: it, released: () => it.returned };
  }
  const r = new PassThrough();
  r.write('first chunk'); // and never ended
  return { body: r, released: () => r.destroyed };
}

/** `p`, or a rejection naming `what` when it has not settled within `ms` (the bug is a call that never settles). */
function settleWithin<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

const CODES = [NGHTTP2_PROTOCOL_ERROR, NGHTTP2_INTERNAL_ERROR, NGHTTP2_REFUSED_STREAM, NGHTTP2_CANCEL, NGHTTP2_ENHANCE_YOUR_CALM];
const METHODS = ['GET', 'POST', 'PUT'];
const BODIES: BodyKind[] = ['none', 'bytes', 'iterable', 'readable'];
const WHENS: When[] = ['on-head', 'after-data', 'after-response-head'];

describe('a stream the server resets', () => {
  // Buffered: a plain call, the body gathered inside the exchange; streamed: a trace forces the full loop, the body a stream.
  for (const mode of ['buffered', 'streamed'] as const) {
    it(`rejects every call promptly with H2StreamResetError and its code, releasing the request body (${mode} responses)`, async () => {
      const { port } = await resettingServer();
      const c = await h2Client({ http2PriorKnowledge: true });
      const failures: string[] = [];
      for (const code of CODES) {
        for (const when of WHENS) {
          for (const method of METHODS) {
            for (const kind of BODIES) {
              const what = `${method} with body ${kind}, reset ${code} ${when}`;
              const { body, released } = bodyOf(kind);
              const started = performance.now();
              const call = c.request(method, `http://127.0.0.1:${port}/${code}/${when}`, { body: body as never, ...(mode === 'streamed' ? { trace: () => undefined } : {}) });
              let err: unknown;
              try {
                const res: Response = await settleWithin(call, 2000, what);
                // A streamed response body is where the reset shows once the head came first.
                if (res.body instanceof AbstractBody) await settleWithin(readAll(res.body), 2000, `${what} (body)`);
                err = new Error(`resolved with status ${res.status}`);
              } catch (e) {
                err = e;
              }
              const ms = performance.now() - started;
              if (!(err instanceof H2StreamResetError)) failures.push(`${what}: ${String(err)}`);
              else {
                if (!(err instanceof ProtocolError)) failures.push(`${what}: not a ProtocolError`);
                if (err.errorCode !== code) failures.push(`${what}: errorCode ${err.errorCode}`);
                if (err.afterHead !== (when === 'after-response-head')) failures.push(`${what}: afterHead ${err.afterHead}`);
              }
              if (ms > 1000) failures.push(`${what}: took ${Math.round(ms)} ms`);
              if (!released()) failures.push(`${what}: the request body was not released`);
            }
          }
        }
      }
      expect(failures).toEqual([]);
      // Every stream was counted out: the session is idle and can be closed as such.
      c.transport.closeIdleConnections();
      expect(c.transport.connectionCount()).toBe(0);
    }, 60_000);
  }

  it('open(): a write waiting when the server resets rejects with the reset, and so does the call', async () => {
    const { port } = await resettingServer();
    const c = await h2Client({ http2PriorKnowledge: true });
    let writeError: unknown = null;
    const call = c.open(
      'POST',
      `http://127.0.0.1:${port}/${NGHTTP2_ENHANCE_YOUR_CALM}/after-data`,
      async (stream) => {
        await stream.write('first');
        // The server resets on the first DATA: the writes that follow are never taken.
        try {
          for (;;) await stream.write(Buffer.alloc(16384));
        } catch (e) {
          writeError = e;
          throw e;
        }
      },
      { headers: { 'Transfer-Encoding': 'chunked' } },
    );
    const err = await settleWithin(
      call.catch((e: unknown) => e),
      2000,
      'open()',
    );
    expect(writeError).toBeInstanceOf(H2StreamResetError);
    expect(err).toBeInstanceOf(H2StreamResetError);
    expect((err as H2StreamResetError).errorName).toBe('ENHANCE_YOUR_CALM');
  });

  it('names the code in the message and as errorName', async () => {
    const { port } = await resettingServer();
    const c = await h2Client({ http2PriorKnowledge: true });
    const err = (await c.post(`http://127.0.0.1:${port}/${NGHTTP2_CANCEL}/on-head`, { body: 'x' }).catch((e: unknown) => e)) as H2StreamResetError;
    expect(err).toBeInstanceOf(H2StreamResetError);
    expect(err.errorName).toBe('CANCEL');
    expect(err.code).toBe('SWY_ERR_PROTOCOL');
    expect(err.message).toMatch(/reset the HTTP\/2 stream before the response head \(CANCEL, code 8\)/);
  });
});

describe('RST_STREAM(NO_ERROR) in the middle of a response body', () => {
  it('fails the call with a ParseError when the body is short of its content-length (buffered and streamed, any request body)', async () => {
    const { port } = await resettingServer();
    const c = await h2Client({ http2PriorKnowledge: true });
    const failures: string[] = [];
    for (const mode of ['buffered', 'streamed'] as const) {
      for (const method of METHODS) {
        for (const kind of BODIES) {
          const what = `${mode} ${method} with body ${kind}`;
          const { body, released } = bodyOf(kind);
          const call = c.request(method, `http://127.0.0.1:${port}/0/after-response-head`, { body: body as never, ...(mode === 'streamed' ? { trace: () => undefined } : {}) });
          let err: unknown;
          try {
            const res: Response = await settleWithin(call, 2000, what);
            if (res.body instanceof AbstractBody) await settleWithin(readAll(res.body), 2000, `${what} (body)`);
            err = new Error(`resolved with ${(res.body as Uint8Array).length} body bytes`);
          } catch (e) {
            err = e;
          }
          if (!(err instanceof ParseError)) failures.push(`${what}: ${String(err)}`);
          else if (!/93 bytes short of the response's content-length 100/.test(err.message)) failures.push(`${what}: ${err.message}`);
          if (!released()) failures.push(`${what}: the request body was not released`);
        }
      }
    }
    expect(failures).toEqual([]);
  });

  it('a body that is complete when the server resets with NO_ERROR, and a HEAD answer with a length, are taken', async () => {
    const { port } = await nodeServer((st, h) => {
      st.on('error', () => undefined);
      if (h[':method'] === 'HEAD') {
        st.respond({ ':status': 200, 'content-length': '100' }, { endStream: true });
        return;
      }
      st.respond({ ':status': 200, 'content-length': '5' }, { waitForTrailers: true });
      st.write('whole', () => st.close(http2.constants.NGHTTP2_NO_ERROR));
    });
    const c = await h2Client({ http2PriorKnowledge: true });
    const res = await settleWithin(c.get(`http://127.0.0.1:${port}/`), 2000, 'GET');
    expect(Buffer.from(res.body as Uint8Array).toString()).toBe('whole');
    const head = await settleWithin(c.head(`http://127.0.0.1:${port}/`), 2000, 'HEAD');
    expect(head.headers.get('Content-Length')).toBe('100');
  });
});

describe('a complete response while the request body is still being sent', () => {
  it('resolves, stops the upload (body released, stream closed without an error) and leaves the session idle', async () => {
    const resets: number[] = [];
    const { port } = await nodeServer((st) => {
      st.on('error', () => undefined);
      st.on('close', () => resets.push(st.rstCode ?? -1));
      st.once('data', () => {
        st.respond({ ':status': 200 });
        st.end('early answer');
      });
    });
    const c = await h2Client({ http2PriorKnowledge: true });
    for (const kind of ['iterable', 'readable'] as const) {
      const { body, released } = bodyOf(kind);
      const res = await settleWithin(c.post(`http://127.0.0.1:${port}/`, { body: body as never }), 2000, kind);
      expect(Buffer.from(res.body as Uint8Array).toString()).toBe('early answer');
      expect(released()).toBe(true);
    }
    await waitFor(() => resets.length === 2, 2000, 'both streams to close on the server');
    expect(resets).toEqual([http2.constants.NGHTTP2_NO_ERROR, http2.constants.NGHTTP2_NO_ERROR]);
    c.transport.closeIdleConnections();
    expect(c.transport.connectionCount()).toBe(0);
  });
});

describe('REFUSED_STREAM', () => {
  it('is sent again (any method) when the body can be; a streamed body fails with the code instead', async () => {
    let refuse = 0;
    const bodies: string[] = [];
    const { port } = await nodeServer((st) => {
      st.on('error', () => undefined);
      if (refuse > 0) {
        refuse--;
        st.close(NGHTTP2_REFUSED_STREAM);
        return;
      }
      const chunks: Buffer[] = [];
      st.on('data', (c: Buffer) => chunks.push(c));
      st.on('end', () => {
        bodies.push(Buffer.concat(chunks).toString());
        st.respond({ ':status': 200 });
        st.end('done');
      });
    });
    const c = await h2Client({ http2PriorKnowledge: true });
    const url = `http://127.0.0.1:${port}/`;
    refuse = 2;
    expect(Buffer.from((await c.post(url, { body: 'again' })).body as Uint8Array).toString()).toBe('done');
    expect(bodies).toEqual(['again']);
    refuse = 1;
    expect((await c.get(url)).status).toBe(200);
    // Past the retries (3): the caller gets the refusal.
    refuse = 10;
    const gaveUp = await c.put(url, { body: 'x' }).catch((e: unknown) => e);
    expect(gaveUp).toBeInstanceOf(H2StreamResetError);
    expect((gaveUp as H2StreamResetError).errorCode).toBe(NGHTTP2_REFUSED_STREAM);
    expect(refuse).toBe(6);
    // A streamed body cannot be sent again.
    refuse = 1;
    const it = endlessIterable();
    const once = await c.post(url, { body: it as never }).catch((e: unknown) => e);
    expect(once).toBeInstanceOf(H2StreamResetError);
    expect((once as H2StreamResetError).errorName).toBe('REFUSED_STREAM');
    expect(it.returned).toBe(true);
    expect(refuse).toBe(0);
  });
});
