/** fromWebResponse: the web's global Response as a switchyard Response, bodies in memory and streamed. */
import { describe, expect, it } from 'vitest';
import { AbstractBody, ArgumentError, Response, readAllBody } from './from-web-response-helpers.js';
import { fromWebResponse, toWebResponse } from '../../../kernel/web/index.js';
import { webBodySource } from '../../../kernel/web/from-web-response.js';

describe('fromWebResponse', () => {
  it('keeps status, status text, headers and each Set-Cookie apart', () => {
    const h = new globalThis.Headers([
      ['content-type', 'text/plain'],
      ['set-cookie', 'a=1'],
      ['set-cookie', 'b=2'],
    ]);
    const r = fromWebResponse(new globalThis.Response('hi', { status: 201, statusText: 'Made', headers: h }));
    expect(r).toBeInstanceOf(Response);
    expect(r.status).toBe(201);
    expect(r.reason).toBe('Made');
    expect(r.headers.get('content-type')).toBe('text/plain');
    expect(r.headers.getAll('set-cookie')).toEqual(['a=1', 'b=2']);
  });

  it('takes a string or bytes body as it was made, without a stream', () => {
    expect(fromWebResponse(new globalThis.Response('text body')).body).toBe('text body');
    const bytes = new Uint8Array([1, 2, 3]);
    expect(fromWebResponse(new globalThis.Response(bytes)).body).toEqual(bytes);
    expect(fromWebResponse(new globalThis.Response(null, { status: 204 })).body).toBe(null);
    expect(webBodySource(new globalThis.Response('x'))).toBe('x');
  });

  it('streams a ReadableStream body as it is read, and closing it cancels the stream', async () => {
    let pulls = 0;
    let canceled: unknown = null;
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        pulls++;
        c.enqueue(new TextEncoder().encode(`chunk${pulls};`));
        if (pulls === 3) c.close();
      },
    });
    const r = fromWebResponse(new globalThis.Response(stream));
    expect(r.body).toBeInstanceOf(AbstractBody);
    expect(await readAllBody(r.body as AbstractBody)).toBe('chunk1;chunk2;chunk3;');

    const endless = new ReadableStream<Uint8Array>({
      pull(c) {
        c.enqueue(new Uint8Array(10));
      },
      cancel(reason) {
        canceled = reason ?? 'canceled';
      },
    });
    const e = fromWebResponse(new globalThis.Response(endless));
    const b = e.body as AbstractBody;
    expect(await b.read(new Uint8Array(4))).toBe(4);
    b.close();
    await new Promise<void>((r) => setImmediate(r));
    expect(canceled).not.toBe(null);
  });

  it('reads the body of a subclass that keeps it elsewhere through its body (a converted switchyard response)', async () => {
    const r = fromWebResponse(toWebResponse(new Response(200, 'kept elsewhere')));
    expect(await readAllBody(r.body as AbstractBody)).toBe('kept elsewhere');
  });

  it('refuses a used body and what is not a web Response', async () => {
    const used = new globalThis.Response('x');
    await used.text();
    expect(() => fromWebResponse(used)).toThrow(TypeError);
    expect(() => fromWebResponse(new Response(200, 'x') as unknown as globalThis.Response)).toThrow(ArgumentError);
  });
});
