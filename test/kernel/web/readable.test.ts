import { describe, expect, it } from 'vitest';
import { BytesBody, CallbackBody } from '../../../kernel/message/index.js';
import { readableOf, readableOfBody } from '../../../kernel/web/readable.js';

async function drain(stream: ReadableStream<Uint8Array>): Promise<string> {
  let out = '';
  for await (const c of stream) out += Buffer.from(c).toString('latin1');
  return out;
}

describe('readableOfBody', () => {
  it('streams a body to its end as a byte stream', async () => {
    const text = 'x'.repeat(40000) + 'end';
    expect(await drain(readableOfBody(new BytesBody(text)))).toBe(text);
  });

  it('reads the source only when the reader asks (no read ahead)', async () => {
    let reads = 0;
    const body = new CallbackBody((dst) => {
      reads++;
      dst[0] = 0x61;
      return 1;
    });
    const stream = readableOfBody(body);
    await new Promise<void>((r) => setImmediate(r));
    expect(reads).toBe(0);
    const reader = stream.getReader();
    expect((await reader.read()).value).toEqual(new Uint8Array([0x61]));
    await new Promise<void>((r) => setImmediate(r));
    expect(reads).toBe(1);
    await reader.cancel();
  });

  it('closes the body when the reader cancels, and once at its end (not again on a later cancel)', async () => {
    let closes = 0;
    let left = 2;
    const body = new CallbackBody(
      (dst) => {
        if (left === 0) return 0;
        left--;
        dst[0] = 0x62;
        return 1;
      },
      () => closes++,
    );
    const reader = readableOfBody(body).getReader();
    await reader.read();
    await reader.cancel(new Error('enough'));
    expect(closes).toBe(1);
    expect(body.closed).toBe(true);

    let closes2 = 0;
    const ended = readableOfBody(
      new CallbackBody(
        () => 0,
        () => closes2++,
      ),
    );
    expect(await drain(ended)).toBe('');
    // The end releases what the body holds (a pooled connection) without waiting for a cancel.
    expect(closes2).toBe(1);
    await ended.cancel().catch(() => undefined);
    expect(closes2).toBe(1);
  });

  it('errors the stream when the body fails', async () => {
    const body = new CallbackBody(() => Promise.reject(new Error('socket reset')));
    await expect(drain(readableOfBody(body))).rejects.toThrow('socket reset');
  });

  it('errors the stream with what `failure` makes of a read error', async () => {
    const body = new CallbackBody(() => Promise.reject(new Error('socket reset')));
    const err = await drain(readableOfBody(body, (e) => new TypeError('terminated', { cause: e }))).catch((e: unknown) => e as TypeError);
    expect(err).toBeInstanceOf(TypeError);
    expect((err as TypeError).message).toBe('terminated');
    expect(((err as TypeError).cause as Error).message).toBe('socket reset');
  });

  it('serves a BYOB reader, the end included', async () => {
    const reader = readableOfBody(new BytesBody('hello')).getReader({ mode: 'byob' });
    const first = await reader.read(new Uint8Array(16));
    expect(Buffer.from(first.value!).toString()).toBe('hello');
    const last = await reader.read(new Uint8Array(16));
    expect(last.done).toBe(true);
  });
});

describe('readableOf', () => {
  it('copies a chunk that shares its buffer, so the other views stay usable', async () => {
    const whole = Buffer.from('head|body|tail');
    const chunks = [whole.subarray(5, 9), null];
    const stream = readableOf(
      () => Promise.resolve(chunks.shift() ?? null),
      () => undefined,
    );
    expect(await drain(stream)).toBe('body');
    expect(whole.buffer.byteLength).toBeGreaterThan(0);
    expect(whole.toString()).toBe('head|body|tail');
  });

  it('hands on the cancel reason', async () => {
    let why: unknown;
    const stream = readableOf(
      () => new Promise<Uint8Array | null>(() => undefined),
      (reason) => (why = reason),
    );
    await stream.cancel('gone');
    expect(why).toBe('gone');
  });
});
