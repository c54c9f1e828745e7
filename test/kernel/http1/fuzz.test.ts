/**
 * Seeded fuzzing of the HTTP/1 codec. Every case derives from `SEED + index`, so a failure
 * message names the exact input to reproduce. The only acceptable outcomes are a result that
 * satisfies the invariants, an incomplete parse, or ParseError/ProtocolError.
 */
import { describe, expect, it } from 'vitest';
import { ParseError, ProtocolError } from '../../../kernel/errors.js';
import { AbstractBody, readAll } from '../../../kernel/message/body.js';
import { canonicalHeaderKey } from '../../../kernel/message/headers.js';
import type { HeadKind } from '../../../kernel/http1/head-parser.js';
import { readRequest } from '../../../kernel/http1/read.js';
import { b, decodeChunked, feedHead, pieces, prng, randInt, snapshot, type FeedResult } from './helpers.js';

const SEED = 0x5eed;

const REQUESTS = [
  'GET / HTTP/1.1\r\nHost: a\r\n\r\n',
  'GET /search?q=x HTTP/1.1\r\nHost: www.example.com\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64)\r\nAccept: text/html,*/*;q=0.8\r\nAccept-Encoding: gzip, br\r\nConnection: keep-alive\r\nCookie: a=1; b=2\r\n\r\n',
  'POST /submit HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{"a":"hello"}',
  'PUT /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-Sum: 1\r\n\r\n',
  'DELETE /thing/1 HTTP/1.0\r\nConnection: keep-alive\r\nX-Custom-Header: value with  spaces\t\r\n\r\n',
  'OPTIONS * HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\nExpect: 100-continue\r\n\r\n',
  'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nProxy-Authorization: Basic Zm9vOmJhcg==\r\n\r\n',
  'GET /ws HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
];

const RESPONSES = [
  'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello',
  'HTTP/1.1 204 No Content\r\nDate: Tue, 01 Jul 2025 12:00:00 GMT\r\n\r\n',
  'HTTP/1.0 404 Not Found\r\nServer: x\r\n\r\nbody',
  'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n',
  'HTTP/1.1 301 Moved Permanently\r\nLocation: https://example.com/\r\nContent-Length: 0\r\n\r\n',
  'HTTP/1.1 100 Continue\r\n\r\n',
];

const CHUNKED = ['5\r\nhello\r\n0\r\n\r\n', '3;ext=1\r\nabc\r\nA\r\n0123456789\r\n0\r\nX-T: v\r\nY: z\r\n\r\n', '0\r\n\r\n', '1\r\nx\r\n1\r\ny\r\n1\r\nz\r\n0\r\n\r\nNEXT'];

/** Bytes a fuzzer should favour: the ones HTTP/1 syntax turns on. */
const INTERESTING = [0x0d, 0x0a, 0x00, 0x20, 0x09, 0x3a, 0x2c, 0x3b, 0x7f, 0x80, 0xff, 0x2d, 0x30, 0x39, 0x61, 0x41, 0x2f, 0x22];

function mutate(rnd: () => number, src: Buffer): Buffer {
  let buf = Buffer.from(src);
  const rounds = 1 + randInt(rnd, 4);
  for (let r = 0; r < rounds; r++) {
    const len = buf.length;
    const at = len === 0 ? 0 : randInt(rnd, len);
    switch (randInt(rnd, 8)) {
      case 0: // bit flip
        if (len > 0) buf[at] = buf[at]! ^ (1 << randInt(rnd, 8));
        break;
      case 1: // insert an interesting byte
        buf = Buffer.concat([buf.subarray(0, at), Buffer.from([INTERESTING[randInt(rnd, INTERESTING.length)]!]), buf.subarray(at)]);
        break;
      case 2: // insert a random byte
        buf = Buffer.concat([buf.subarray(0, at), Buffer.from([randInt(rnd, 256)]), buf.subarray(at)]);
        break;
      case 3: // delete a run
        buf = Buffer.concat([buf.subarray(0, at), buf.subarray(at + 1 + randInt(rnd, 4))]);
        break;
      case 4: {
        // duplicate a slice
        const end = Math.min(len, at + 1 + randInt(rnd, 40));
        buf = Buffer.concat([buf.subarray(0, end), buf.subarray(at, end), buf.subarray(end)]);
        break;
      }
      case 5: // truncate
        buf = buf.subarray(0, at);
        break;
      case 6: {
        // splice a slice of another corpus entry
        const other = b(REQUESTS[randInt(rnd, REQUESTS.length)]!);
        const s = randInt(rnd, other.length);
        buf = Buffer.concat([buf.subarray(0, at), other.subarray(s, s + 1 + randInt(rnd, 30)), buf.subarray(at)]);
        break;
      }
      default: // overwrite with an interesting byte
        if (len > 0) buf[at] = INTERESTING[randInt(rnd, INTERESTING.length)]!;
    }
  }
  return buf;
}

type Outcome = { ok: FeedResult } | { error: unknown };

function run(kind: HeadKind, parts: Uint8Array[]): Outcome {
  try {
    return { ok: feedHead(kind, parts) };
  } catch (error) {
    return { error };
  }
}

function isCodecError(err: unknown): boolean {
  return err instanceof ParseError || err instanceof ProtocolError;
}

function checkInvariants(r: FeedResult, input: Buffer, where: string): void {
  const p = r.parser;
  if (r.consumed < 0) return;
  expect(r.consumed, where).toBeGreaterThan(0);
  expect(r.consumed, where).toBeLessThanOrEqual(input.length);
  expect(p.headBytes, where).toBe(r.consumed);
  for (const [name, value] of p.headers) {
    expect(name.length, where).toBeGreaterThan(0);
    expect(name, where).toBe(canonicalHeaderKey(name));
    expect(/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(name), `${where}: name ${JSON.stringify(name)}`).toBe(true);
    expect(/[\x00-\x08\x0a-\x1f\x7f]/.test(value), `${where}: value ${JSON.stringify(value)}`).toBe(false);
    expect(/^[ \t]|[ \t]$/.test(value), `${where}: untrimmed ${JSON.stringify(value)}`).toBe(false);
  }
  if (p.kind === 'request') {
    expect(/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(p.method), where).toBe(true);
    expect(/[\x00-\x20\x7f]/.test(p.target), where).toBe(false);
  } else {
    expect(p.status, where).toBeGreaterThanOrEqual(100);
    expect(p.status, where).toBeLessThanOrEqual(999);
  }
}

describe('fuzz', () => {
  it('12,000 mutated heads: only results, incomplete heads, ParseError or ProtocolError; splits agree', () => {
    const N = 12_000;
    let completed = 0;
    let errors = 0;
    for (let i = 0; i < N; i++) {
      const seed = SEED + i;
      const rnd = prng(seed);
      const kind: 'request' | 'response' = rnd() < 0.75 ? 'request' : 'response';
      const corpus = kind === 'request' ? REQUESTS : RESPONSES;
      const input = mutate(rnd, b(corpus[randInt(rnd, corpus.length)]!));
      const where = `seed ${seed} (${kind}) ${JSON.stringify(input.toString('latin1'))}`;
      const whole = run(kind, [input]);
      const split = run(kind, i % 10 === 0 ? pieces(input, 'bytes') : pieces(input, rnd));
      for (const o of [whole, split]) {
        if ('error' in o && !isCodecError(o.error)) throw new Error(`${where}: unexpected ${String(o.error)}`, { cause: o.error });
        if ('ok' in o) checkInvariants(o.ok, input, where);
      }
      if ('ok' in whole && whole.ok.consumed >= 0) {
        completed++;
        // A head that parses whole parses identically in pieces.
        expect('ok' in split, where).toBe(true);
        if ('ok' in split) {
          expect(split.ok.consumed, where).toBe(whole.ok.consumed);
          expect(snapshot(split.ok.parser), where).toEqual(snapshot(whole.ok.parser));
        }
      } else if ('error' in whole) {
        errors++;
        // An error on the whole input is an error (same class) or an unfinished line in pieces.
        if ('error' in split) expect((split.error as Error).constructor, where).toBe((whole.error as Error).constructor);
        else expect(split.ok.consumed, where).toBe(-1);
      } else if ('ok' in split) {
        expect(split.ok.consumed, where).toBe(-1);
      }
    }
    // The mutator must exercise both sides.
    expect(completed).toBeGreaterThan(N / 10);
    expect(errors).toBeGreaterThan(N / 10);
  });

  it('6,000 mutated chunked bodies: only data, ParseError or ProtocolError; splits agree', () => {
    for (let i = 0; i < 6000; i++) {
      const seed = SEED * 3 + i;
      const rnd = prng(seed);
      const input = mutate(rnd, b(CHUNKED[randInt(rnd, CHUNKED.length)]!));
      const where = `seed ${seed} ${JSON.stringify(input.toString('latin1'))}`;
      const outcome = (parts: Uint8Array[]): unknown => {
        try {
          const r = decodeChunked(parts);
          return r.done ? { data: r.data.toString('latin1'), trailers: r.trailers, leftover: r.leftover.toString('latin1') } : 'incomplete';
        } catch (err) {
          if (!isCodecError(err)) throw new Error(`${where}: unexpected ${String(err)}`, { cause: err });
          return (err as Error).constructor.name;
        }
      };
      const whole = outcome([input]);
      const split = outcome(pieces(input, rnd));
      if (typeof whole === 'object') expect(split, where).toEqual(whole);
      else if (whole !== 'incomplete' && split !== 'incomplete') expect(split, where).toBe(whole);
    }
  });

  it('1,500 mutated messages through readRequest and the body', async () => {
    for (let i = 0; i < 1500; i++) {
      const seed = SEED * 7 + i;
      const rnd = prng(seed);
      const input = mutate(rnd, b(REQUESTS[randInt(rnd, REQUESTS.length)]!));
      const where = `seed ${seed} ${JSON.stringify(input.toString('latin1'))}`;
      try {
        const req = await readRequest(input);
        if (req.body instanceof AbstractBody) await readAll(req.body);
      } catch (err) {
        if (!isCodecError(err)) throw new Error(`${where}: unexpected ${String(err)}`, { cause: err });
      }
    }
  });
});
