import { describe, expect, it } from 'vitest';
import { ArgumentError } from '../../../kernel/errors.js';
import { AbstractBody, BytesBody, CallbackBody, ChunkBody, Headers, bodyClose, bodyClosed, bodyLength, bodyRead, nobody, readAll, trailers } from '../../../kernel/message/index.js';

const text = (b: Uint8Array): string => Buffer.from(b).toString('utf8');

/** A CallbackBody serving `chunks` one per read, counting calls of both callbacks. */
function chunked(chunks: string[]) {
  const state = { reads: 0, closes: 0 };
  let i = 0;
  const body = new CallbackBody(
    (dst) => {
      state.reads++;
      if (i >= chunks.length) return 0;
      const bytes = Buffer.from(chunks[i++]!);
      dst.set(bytes);
      return bytes.length;
    },
    () => {
      state.closes++;
    },
  );
  return { body, state };
}

/** Reads everything with a fixed-size buffer; returns the text and the counts per read. */
async function drain(body: AbstractBody, size: number): Promise<{ text: string; counts: number[] }> {
  const dst = new Uint8Array(size);
  const out: Buffer[] = [];
  const counts: number[] = [];
  for (;;) {
    const n = await bodyRead(body, dst);
    counts.push(n);
    if (n === 0) break;
    out.push(Buffer.from(dst.subarray(0, n)));
  }
  return { text: Buffer.concat(out).toString('utf8'), counts };
}

/** A minimal third-party AbstractBody: the subclass contract only. */
class ListBody extends AbstractBody {
  private closedFlag = false;
  private readonly extra: Headers;
  constructor(
    private readonly parts: Uint8Array[],
    extra: Headers = new Headers(),
  ) {
    super();
    this.extra = extra;
  }
  async read(dst: Uint8Array): Promise<number> {
    const p = this.parts[0];
    if (!p || this.closedFlag) return 0;
    const n = Math.min(dst.length, p.length);
    dst.set(p.subarray(0, n));
    if (n === p.length) this.parts.shift();
    else this.parts[0] = p.subarray(n);
    return n;
  }
  close(): void {
    this.closedFlag = true;
  }
  get closed(): boolean {
    return this.closedFlag;
  }
  override trailers(): Headers {
    return this.extra;
  }
}

describe('CallbackBody', () => {
  it('reads until the callback returns 0, then keeps returning 0 without calling it', async () => {
    const { body, state } = chunked(['hello ', 'world']);
    const { text: t, counts } = await drain(body, 64);
    expect(t).toBe('hello world');
    expect(counts).toEqual([6, 5, 0]);
    expect(state.reads).toBe(3);
    expect(await bodyRead(body, new Uint8Array(8))).toBe(0);
    expect(await bodyRead(body, new Uint8Array(8))).toBe(0);
    expect(state.reads).toBe(3);
  });

  it('is readable only once: a second pass gets nothing', async () => {
    const { body } = chunked(['abc']);
    expect((await drain(body, 8)).text).toBe('abc');
    expect((await drain(body, 8)).text).toBe('');
  });

  it('accepts an async read callback', async () => {
    let sent = false;
    const body = new CallbackBody(async (dst) => {
      await Promise.resolve();
      if (sent) return 0;
      sent = true;
      dst.set([65, 66]);
      return 2;
    });
    expect((await drain(body, 4)).text).toBe('AB');
  });

  it('reading to the end does not close it', async () => {
    const { body, state } = chunked(['x']);
    await drain(body, 4);
    expect(bodyClosed(body)).toBe(false);
    expect(body.closed).toBe(false);
    expect(state.closes).toBe(0);
  });

  it('runs the close callback once, even when closed twice', () => {
    const { body, state } = chunked(['x']);
    expect(bodyClosed(body)).toBe(false);
    bodyClose(body);
    expect(bodyClosed(body)).toBe(true);
    expect(state.closes).toBe(1);
    bodyClose(body);
    body.close();
    expect(state.closes).toBe(1);
    expect(bodyClosed(body)).toBe(true);
  });

  it('returns 0 after close without calling the read callback', async () => {
    const { body, state } = chunked(['never read']);
    bodyClose(body);
    expect(await bodyRead(body, new Uint8Array(16))).toBe(0);
    expect(state.reads).toBe(0);
  });

  it('works without a close callback', () => {
    const body = new CallbackBody(() => 0);
    expect(() => bodyClose(body)).not.toThrow();
    expect(bodyClosed(body)).toBe(true);
  });

  it('an empty dst reads 0 without ending the body', async () => {
    const { body, state } = chunked(['abc']);
    expect(await bodyRead(body, new Uint8Array(0))).toBe(0);
    expect(state.reads).toBe(0);
    expect((await drain(body, 8)).text).toBe('abc');
  });

  it.each([
    ['more bytes than dst holds', 9],
    ['a negative count', -1],
    ['a fraction', 1.5],
    ['a string', '3'],
  ])('rejects a read callback returning %s', async (_name, bad) => {
    const body = new CallbackBody(() => bad as number);
    await expect(bodyRead(body, new Uint8Array(4))).rejects.toThrow(ArgumentError);
    await expect(bodyRead(body, new Uint8Array(4))).rejects.toThrow(/read callback returned .*expected an integer 0\.\.4/);
  });

  it.each([
    ['a missing read callback', () => new CallbackBody(undefined as never)],
    ['a non-function read callback', () => new CallbackBody('x' as never)],
    ['a non-function close callback', () => new CallbackBody(() => 0, 5 as never)],
  ])('rejects %s with ArgumentError', (_name, make) => {
    expect(make).toThrow(ArgumentError);
    expect(make).toThrow(/callback/);
  });

  it('its length is unknown (-1)', () => {
    expect(new CallbackBody(() => 0).length).toBe(-1);
    expect(bodyLength(new CallbackBody(() => 0))).toBe(-1);
  });
});

describe('BytesBody', () => {
  it.each([
    [1, [1, 1, 1, 1, 1, 0]],
    [2, [2, 2, 1, 0]],
    [3, [3, 2, 0]],
    [5, [5, 0]],
    [64, [5, 0]],
  ])('streams "hello" through a %i-byte dst in pieces', async (size, counts) => {
    const body = new BytesBody('hello');
    const r = await drain(body, size);
    expect(r.text).toBe('hello');
    expect(r.counts).toEqual(counts);
  });

  it('is single-use: nothing is left after the end', async () => {
    const body = new BytesBody(new Uint8Array([1, 2, 3]));
    await drain(body, 2);
    expect(await bodyRead(body, new Uint8Array(8))).toBe(0);
    expect(body.length).toBe(0);
  });

  it('encodes a string as UTF-8', async () => {
    const body = new BytesBody('héllo');
    expect(body.length).toBe(6);
    expect(text(await readAll(body))).toBe('héllo');
  });

  it('fills the start of dst and leaves the rest alone', async () => {
    const body = new BytesBody(new Uint8Array([7, 8]));
    const dst = new Uint8Array([0, 0, 9, 9]);
    expect(await bodyRead(body, dst)).toBe(2);
    expect([...dst]).toEqual([7, 8, 9, 9]);
  });

  it('length counts the bytes not yet read', async () => {
    const body = new BytesBody('abcdef');
    expect(body.length).toBe(6);
    await bodyRead(body, new Uint8Array(4));
    expect(body.length).toBe(2);
  });

  it('close stops reading; reading to the end does not close', async () => {
    const body = new BytesBody('abcdef');
    await drain(body, 100);
    expect(bodyClosed(body)).toBe(false);
    const other = new BytesBody('abcdef');
    await bodyRead(other, new Uint8Array(2));
    bodyClose(other);
    bodyClose(other);
    expect(bodyClosed(other)).toBe(true);
    expect(await bodyRead(other, new Uint8Array(10))).toBe(0);
  });

  it('rejects other input with ArgumentError', () => {
    expect(() => new BytesBody(42 as never)).toThrow(ArgumentError);
    expect(() => new BytesBody([1, 2] as never)).toThrow(/Uint8Array or string/);
  });
});

describe('nobody', () => {
  it('is an empty frozen Uint8Array', () => {
    expect(nobody).toBeInstanceOf(Uint8Array);
    expect(nobody.length).toBe(0);
    expect(Object.isFrozen(nobody)).toBe(true);
  });

  it('attempts to modify it do not change it', () => {
    const attempts: (() => void)[] = [
      () => ((nobody as unknown as Record<number, number>)[0] = 1),
      () => ((nobody as unknown as Record<string, unknown>).extra = 'x'),
      () => nobody.set([1]),
      () => nobody.fill(1),
      () => Object.defineProperty(nobody, 'length', { value: 5 }),
    ];
    for (const attempt of attempts) {
      try {
        attempt();
      } catch {
        // throwing is a fine way to refuse
      }
    }
    expect(nobody.length).toBe(0);
    expect(nobody.byteLength).toBe(0);
    expect(nobody[0]).toBeUndefined();
    expect('extra' in nobody).toBe(false);
    expect(bodyLength(nobody)).toBe(0);
  });

  it('is the same object on every import', async () => {
    const again = await import('../../../kernel/message/body.js');
    expect(again.nobody).toBe(nobody);
  });
});

describe('bodyRead / bodyClose / bodyClosed on non-bodies', () => {
  const nonBodies: [string, unknown][] = [
    ['a string', 'text'],
    ['bytes', new Uint8Array(2)],
    ['null', null],
    ['undefined', undefined],
    ['a plain object with read/close', { read: async () => 0, close() {}, closed: false }],
  ];

  it.each(nonBodies)('bodyRead(%s) → ArgumentError', async (_name, value) => {
    await expect(async () => bodyRead(value as never, new Uint8Array(1))).rejects.toThrow(ArgumentError);
    await expect(async () => bodyRead(value as never, new Uint8Array(1))).rejects.toThrow(/bodyRead takes an AbstractBody/);
  });

  it.each(nonBodies)('bodyClose(%s) → ArgumentError', (_name, value) => {
    expect(() => bodyClose(value as never)).toThrow(ArgumentError);
    expect(() => bodyClose(value as never)).toThrow(/bodyClose takes an AbstractBody/);
  });

  it.each(nonBodies)('bodyClosed(%s) → ArgumentError', (_name, value) => {
    expect(() => bodyClosed(value as never)).toThrow(ArgumentError);
    expect(() => bodyClosed(value as never)).toThrow(/bodyClosed takes an AbstractBody/);
  });
});

describe('trailers(body)', () => {
  it.each([
    ['a string', 'x'],
    ['bytes', new Uint8Array(3)],
    ['null', null],
    ['undefined', undefined],
    ['nobody', nobody],
  ])('is an empty Headers for %s', (_name, body) => {
    const t = trailers(body as never);
    expect(t).toBeInstanceOf(Headers);
    expect(t.size).toBe(0);
  });

  it('is empty for BytesBody and CallbackBody', async () => {
    const b = new BytesBody('abc');
    await readAll(b);
    expect(trailers(b).size).toBe(0);
    expect(trailers(new CallbackBody(() => 0)).size).toBe(0);
  });

  it('is a copy of the trailers a streamed body ended with', async () => {
    const own = new Headers([['X-Checksum', 'abc']]);
    const body = new ListBody([Buffer.from('data')], own);
    await readAll(body);
    const t = trailers(body);
    expect([...t]).toEqual([['X-Checksum', 'abc']]);
    expect(t).not.toBe(own);
    t.set('X-Checksum', 'changed');
    expect(own.get('X-Checksum')).toBe('abc');
  });
});

describe('AbstractBody: async iteration and readAll', () => {
  it('a subclass implementing read/close/closed works with the helpers', async () => {
    const body = new ListBody([Buffer.from('ab'), Buffer.from('cd')]);
    expect(body.length).toBe(-1);
    expect(bodyLength(body)).toBe(-1);
    expect(bodyClosed(body)).toBe(false);
    const dst = new Uint8Array(1);
    expect(await bodyRead(body, dst)).toBe(1);
    expect(text(dst)).toBe('a');
    bodyClose(body);
    expect(bodyClosed(body)).toBe(true);
  });

  it('for await yields the chunks in order', async () => {
    const body = new ListBody([Buffer.from('one '), Buffer.from('two '), Buffer.from('three')]);
    const chunks: string[] = [];
    for await (const c of body) chunks.push(text(c));
    expect(chunks).toEqual(['one ', 'two ', 'three']);
  });

  it('for await chunks are fresh buffers the caller may keep', async () => {
    const { body } = chunked(['aaa', 'bbb', 'ccc']);
    const kept: Uint8Array[] = [];
    for await (const c of body) kept.push(c);
    expect(kept.map(text)).toEqual(['aaa', 'bbb', 'ccc']);
    expect(new Set(kept.map((k) => k.buffer)).size).toBe(3);
  });

  it('for await splits a large body and yields nothing for an empty one', async () => {
    const big = new Uint8Array(40_000).map((_, i) => i % 251);
    const chunks: Uint8Array[] = [];
    for await (const c of new BytesBody(big)) chunks.push(c);
    expect(chunks.length).toBeGreaterThan(1);
    expect(Buffer.concat(chunks).equals(Buffer.from(big))).toBe(true);
    const none: Uint8Array[] = [];
    for await (const c of new BytesBody('')) none.push(c);
    expect(none).toEqual([]);
  });

  it('readAll collects the rest of the body', async () => {
    const { body } = chunked(['hel', 'lo', ' ', 'world']);
    expect(text(await readAll(body))).toBe('hello world');
    expect((await readAll(body)).length).toBe(0);
  });

  it('readAll of a partly read body returns the rest', async () => {
    const body = new BytesBody('abcdef');
    await bodyRead(body, new Uint8Array(2));
    expect(text(await readAll(body))).toBe('cdef');
  });

  it('readAll of an empty body is empty', async () => {
    const r = await readAll(new CallbackBody(() => 0));
    expect(r).toBeInstanceOf(Uint8Array);
    expect(r.length).toBe(0);
  });

  it('readAll rejects a body over the limit, naming it', async () => {
    await expect(readAll(new BytesBody('0123456789'), 5)).rejects.toThrow(/larger than 5 bytes/);
    expect(text(await readAll(new BytesBody('01234'), 5))).toBe('01234');
  });
});

describe('bodyLength', () => {
  it.each([
    ['null', null, 0],
    ['undefined', undefined, 0],
    ['a string', 'héllo', 6],
    ['bytes', new Uint8Array(3), 3],
    ['a BytesBody', new BytesBody('abc'), -1],
  ])('of %s is %i', (_name, body, expected) => {
    expect(bodyLength(body as never)).toBe(expected);
  });
});

/** A ChunkBody over fixed chunks, recording how often it was asked for one. */
class Chunks extends ChunkBody {
  asked = 0;
  private isClosed = false;
  constructor(private readonly list: Uint8Array[]) {
    super();
  }
  protected async nextChunk(): Promise<Uint8Array | null> {
    this.asked++;
    return this.isClosed ? null : (this.list.shift() ?? null);
  }
  iterate(): AsyncGenerator<Uint8Array> {
    return this.chunks();
  }
  close(): void {
    this.isClosed = true;
    this.dropWaiting();
  }
  get closed(): boolean {
    return this.isClosed;
  }
}

describe('ChunkBody', () => {
  const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);

  it("hands each chunk out in pieces of the reader's size, skipping empty chunks", async () => {
    const body = new Chunks([bytes('hello'), bytes(''), bytes('abc')]);
    const dst = new Uint8Array(2);
    const got: string[] = [];
    for (let n = await body.read(dst); n > 0; n = await body.read(dst)) got.push(new TextDecoder().decode(dst.subarray(0, n)));
    expect(got).toEqual(['he', 'll', 'o', 'ab', 'c']);
    expect(await body.read(dst)).toBe(0);
  });

  it('a read into an empty buffer takes nothing', async () => {
    const body = new Chunks([bytes('x')]);
    expect(await body.read(new Uint8Array(0))).toBe(0);
    expect(body.asked).toBe(0);
    expect(new TextDecoder().decode(await readAll(body))).toBe('x');
  });

  it('chunks() yields what a read left, then the chunks themselves, uncopied', async () => {
    const second = bytes('world');
    const body = new Chunks([bytes('hello'), second]);
    expect(await body.read(new Uint8Array(2))).toBe(2);
    const out: Uint8Array[] = [];
    for await (const c of body.iterate()) out.push(c);
    expect(out.map((c) => new TextDecoder().decode(c))).toEqual(['llo', 'world']);
    expect(out[1]).toBe(second);
  });

  it('after close a read returns 0 and what waited is dropped', async () => {
    const body = new Chunks([bytes('hello')]);
    expect(await body.read(new Uint8Array(1))).toBe(1);
    body.close();
    expect(await body.read(new Uint8Array(8))).toBe(0);
  });
});
