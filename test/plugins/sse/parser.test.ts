/**
 * The WHATWG event-stream interpretation of SSEParser, fed whole and in every split: BOM,
 * line ends, comments, fields, ids, retry, dispatch, the end of a stream, UTF-8, maxLen. Also
 * SSEEvent's wire form read back through the parser.
 */
import { Buffer } from 'node:buffer';
import { describe, expect, it, vi } from 'vitest';
import { ArgumentError } from '../../../kernel/index.js';
import { SSEEvent, SSEEventTooLargeError, SSEParser } from '../../../plugins/sse/index.js';
import { encodeEvent } from '../../../plugins/sse/event.js';

type Plain = { data: string; event: string | null; id: string | null; retry: number | null; fields: Record<string, string> };
const plain = (e: SSEEvent): Plain => ({ data: e.data, event: e.event, id: e.id, retry: e.retry, fields: { ...e.fields } });

/** Parses `input` in one chunk and returns the plain events; `reset()` ends the stream. */
function parse(input: string | Uint8Array, parser = new SSEParser()): Plain[] {
  const bytes = typeof input === 'string' ? Buffer.from(input, 'utf8') : input;
  const out = parser.push(bytes);
  parser.reset();
  return out.map(plain);
}

/** Parses `input` split at every position (two chunks), and byte by byte; all must agree with one chunk. */
function parseEverySplit(input: string | Uint8Array): Plain[] {
  const bytes = typeof input === 'string' ? Buffer.from(input, 'utf8') : Buffer.from(input);
  const whole = parse(bytes);
  for (let cut = 0; cut <= bytes.length; cut++) {
    const p = new SSEParser();
    const out = [...p.push(bytes.subarray(0, cut)), ...p.push(bytes.subarray(cut))];
    expect(out.map(plain), `split at ${cut}`).toEqual(whole);
  }
  const p = new SSEParser();
  const out: SSEEvent[] = [];
  for (let i = 0; i < bytes.length; i++) p.push(bytes.subarray(i, i + 1), out);
  expect(out.map(plain), 'byte by byte').toEqual(whole);
  return whole;
}

describe('SSEParser: WHATWG rules', () => {
  it('dispatches on a blank line, with the type, id and fields', () => {
    const evs = parseEverySplit('event: tick\nid: 7\ndata: hello\n\n');
    expect(evs).toEqual([{ data: 'hello', event: 'tick', id: '7', retry: null, fields: { event: 'tick', id: '7', data: 'hello' } }]);
  });

  it('accepts LF, CR and CRLF line ends, mixed, also split between chunks', () => {
    const want = [
      { data: 'a', event: null, id: null, retry: null, fields: { data: 'a' } },
      { data: 'b', event: null, id: null, retry: null, fields: { data: 'b' } },
      { data: 'c', event: null, id: null, retry: null, fields: { data: 'c' } },
    ];
    expect(parseEverySplit('data: a\n\ndata: b\r\rdata: c\r\n\r\n')).toEqual(want);
    // CRLF is one line end: a CR at a chunk's end followed by LF is not a blank line.
    const p = new SSEParser();
    expect(p.push(Buffer.from('data: x\r'))).toEqual([]);
    expect(p.push(Buffer.from('\ndata: y\r\n\r\n')).map((e) => e.data)).toEqual(['x\ny']);
  });

  it('joins data lines with LF, keeps empty ones, strips one space only', () => {
    expect(parseEverySplit('data: one\ndata:\ndata:  three\ndata\n\n').map((e) => e.data)).toEqual(['one\n\n three\n']);
    expect(parse('data:no-space\n\n')[0]!.data).toBe('no-space');
    expect(parse('data: \n\n')[0]!.data).toBe('');
  });

  it('drops one leading BOM (also split), and only at the start', () => {
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    expect(parseEverySplit(Buffer.concat([bom, Buffer.from('data: x\n\n')])).map((e) => e.data)).toEqual(['x']);
    // A second BOM is part of the first field name, which is then unknown.
    const two = parse(Buffer.concat([bom, bom, Buffer.from('data: x\n\ndata: y\n\n')]));
    expect(two.map((e) => e.data)).toEqual(['y']);
    // A stream that starts with EF but is not a BOM keeps its bytes.
    expect(parseEverySplit(Buffer.concat([Buffer.from([0xef, 0x41]), Buffer.from(': c\ndata: z\n\n')])).map((e) => e.data)).toEqual(['z']);
  });

  it('ignores comments, unknown fields still appear in fields', () => {
    const evs = parseEverySplit(': a comment\n:\nfoo: bar\ndata: d\n: another\n\n');
    expect(evs).toEqual([{ data: 'd', event: null, id: null, retry: null, fields: { foo: 'bar', data: 'd' } }]);
  });

  it('a line without a colon is a field with an empty value', () => {
    expect(parse('data\n\n')).toEqual([{ data: '', event: null, id: null, retry: null, fields: { data: '' } }]);
    expect(parse('event\ndata: x\n\n')[0]!.event).toBe(null);
  });

  it('does not dispatch an event without data, but its id takes effect', () => {
    const p = new SSEParser();
    expect(p.push(Buffer.from('event: e\n\nid: 5\n\n'))).toEqual([]);
    expect(p.lastEventId).toBe('5');
    expect(p.push(Buffer.from('data: x\n\n')).map(plain)).toEqual([{ data: 'x', event: null, id: '5', retry: null, fields: { data: 'x' } }]);
  });

  it('keeps the last event id across events; an empty id clears it; an id with NUL is ignored', () => {
    const evs = parseEverySplit('id: 1\ndata: a\n\ndata: b\n\nid: 2\u0000x\ndata: c\n\nid\ndata: d\n\n');
    expect(evs.map((e) => [e.data, e.id])).toEqual([
      ['a', '1'],
      ['b', '1'],
      ['c', '1'],
      ['d', null],
    ]);
    // The NUL id was observed: it is in fields.
    expect(evs[2]!.fields.id).toBe('2\u0000x');
  });

  it('takes retry only when all ASCII digits, and keeps the last valid one', () => {
    const evs = parseEverySplit('retry: 1500\ndata: a\n\nretry: 12x\ndata: b\n\nretry: -5\ndata: c\n\nretry:  7\ndata: d\n\nretry: 0\ndata: e\n\n');
    expect(evs.map((e) => e.retry)).toEqual([1500, 1500, 1500, 1500, 0]);
    expect(evs[1]!.fields.retry).toBe('12x');
  });

  it('repeated fields are joined in fields, the last event type wins', () => {
    const [e] = parse('event: a\nevent: b\nx: 1\nx: 2\ndata: d\n\n');
    expect(e!.event).toBe('b');
    expect(e!.fields).toEqual({ event: 'a\nb', x: '1\n2', data: 'd' });
  });

  it('drops an event cut off by the end of the stream; id and retry survive reset()', () => {
    const p = new SSEParser();
    expect(p.push(Buffer.from('id: 9\nretry: 50\ndata: whole\n\ndata: partial\nid: 10\n'))).toHaveLength(1);
    p.reset();
    expect(p.lastEventId).toBe('9');
    expect(p.retry).toBe(50);
    // The next stream (a reconnect) starts clean: BOM allowed again, no leftover data.
    const next = p.push(Buffer.from('\ufeffdata: again\n\n'));
    expect(next.map(plain)).toEqual([{ data: 'again', event: null, id: '10', retry: 50, fields: { data: 'again' } }]);
  });

  it('decodes UTF-8 per line, also split inside a character; invalid bytes become U+FFFD', () => {
    expect(parseEverySplit('data: héllo wörld €𝄞\n\n').map((e) => e.data)).toEqual(['héllo wörld €𝄞']);
    const bad = Buffer.concat([Buffer.from('data: a'), Buffer.from([0xff, 0xc3]), Buffer.from('b\n\n')]);
    expect(parse(bad)[0]!.data).toBe('a\ufffd\ufffdb');
  });

  it('maxLen bounds one event, counting a line still being read', () => {
    const p = new SSEParser({ maxLen: 20 });
    // 'data: 0123456789abc\n' is 20 bytes: allowed.
    expect(p.push(Buffer.from('data: 0123456789abc\n\n')).map((e) => e.data)).toEqual(['0123456789abc']);
    expect(() => new SSEParser({ maxLen: 20 }).push(Buffer.from('data: 0123456789abcd\n\n'))).toThrow(SSEEventTooLargeError);
    // Several lines add up.
    expect(() => new SSEParser({ maxLen: 20 }).push(Buffer.from('data: 0123\ndata: 4567\n\n'))).toThrow(SSEEventTooLargeError);
    // A line that never ends is refused before it is held whole.
    const q = new SSEParser({ maxLen: 20 });
    let err: unknown = null;
    try {
      for (let i = 0; i < 100; i++) q.push(Buffer.from('xxxxx'));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SSEEventTooLargeError);
    expect(err).toMatchObject({ maxLen: 20, side: 'parse', code: 'SWY_ERR_SSE_EVENT_TOO_LARGE' });
    // Comments do not count: they are not kept.
    expect(new SSEParser({ maxLen: 20 }).push(Buffer.from(`: ${'c'.repeat(100)}\ndata: ok\n\n`)).map((e) => e.data)).toEqual(['ok']);
  });

  it('checks its options', () => {
    expect(() => new SSEParser({ maxLen: 0 })).toThrow(ArgumentError);
    expect(() => new SSEParser({ maxLen: 1.5 })).toThrow(/maxLen must be a whole number/);
    expect(new SSEParser({ lastEventId: 'x' }).lastEventId).toBe('x');
  });
});

describe('SSEParser: a long line in many reads', () => {
  it('keeps the pieces and joins them once, so a line costs its size, not its size times its reads', () => {
    const parser = new SSEParser();
    const concat = vi.spyOn(Buffer, 'concat');
    try {
      const events: SSEEvent[] = [];
      parser.push(Buffer.from('data: '), events);
      for (let i = 0; i < 5000; i++) parser.push(Buffer.from('x'), events);
      parser.push(Buffer.from('\n\n'), events);
      expect(events.map((e) => e.data)).toEqual(['x'.repeat(5000)]);
      expect(concat.mock.calls.length).toBeLessThanOrEqual(2);
    } finally {
      concat.mockRestore();
    }
  });
});

describe('SSEEvent', () => {
  it('has the reference fields and defaults', () => {
    const e = new SSEEvent('d');
    expect(plain(e)).toEqual({ data: 'd', event: null, id: null, retry: null, fields: {} });
    expect(e.type).toBe('message');
    expect(new SSEEvent('d', { event: 'x' }).type).toBe('x');
  });

  it('refuses values that would break the framing', () => {
    expect(() => new SSEEvent('d', { event: 'a\nb' })).toThrow(ArgumentError);
    expect(() => new SSEEvent('d', { id: 'a\rb' })).toThrow(ArgumentError);
    expect(() => new SSEEvent('d', { id: 'a\u0000b' })).toThrow(/NUL/);
    expect(() => new SSEEvent('d', { retry: -1 })).toThrow(ArgumentError);
    expect(() => new SSEEvent('d', { retry: 1.5 })).toThrow(ArgumentError);
    expect(() => new SSEEvent({ a: 1 } as unknown as string)).toThrow(/JSON.stringify/);
  });

  it('writes the wire form, splitting data at CRLF, CR and LF, and reads back the same', () => {
    const e = new SSEEvent('one\r\ntwo\rthree\n\nfive', { event: 'e', id: '42', retry: 1000 });
    expect(encodeEvent(e).toString()).toBe('event: e\nid: 42\nretry: 1000\ndata: one\ndata: two\ndata: three\ndata: \ndata: five\n\n');
    expect(encodeEvent(e)).toBe(encodeEvent(e)); // encoded once
    const [back] = parse(encodeEvent(e));
    expect(back).toMatchObject({ data: 'one\ntwo\nthree\n\nfive', event: 'e', id: '42', retry: 1000 });
    // Leading spaces of data survive (one space is always written after the colon).
    expect(parse(encodeEvent(new SSEEvent('  indented\n:colon')))[0]!.data).toBe('  indented\n:colon');
    expect(parse(encodeEvent(new SSEEvent('')))[0]!.data).toBe('');
  });
});
