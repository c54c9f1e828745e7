/**
 * Accept-Encoding negotiation (RFC 9110 §12.5.3): q-values, `*`, `identity`, junk, and a
 * hostile header (huge, many elements) answered promptly on a real server.
 */
import { describe, expect, it } from 'vitest';
import { Headers, Response } from '../../../kernel/index.js';
import { CodingChooser, MAX_ELEMENTS, chooseCoding, type CompressionCoding } from '../../../plugins/index.js';
import { exchange } from '../../helpers/server.js';
import { compressedServer, jsonOf, raw } from './helpers.js';

const ALL: CompressionCoding[] = ['br', 'zstd', 'gzip'];
const NO_ZSTD: CompressionCoding[] = ['br', 'gzip'];

describe('chooseCoding', () => {
  it.each([
    [undefined, 'identity'],
    ['', 'identity'],
    ['gzip', 'gzip'],
    ['GZIP', 'gzip'],
    ['gzip, br', 'br'],
    ['gzip, br, zstd', 'br'],
    ['br;q=0.9, gzip', 'gzip'],
    ['br;q=0.9, gzip;q=0.9', 'br'],
    ['gzip;q=0.001', 'gzip'],
    ['gzip;q=0', 'identity'],
    ['gzip;Q=0.5', 'gzip'],
    ['gzip ; q=0.5 , br ; q=0.4', 'gzip'],
    ['*', 'br'],
    ['*;q=0.5, br;q=0', 'gzip'],
    ['*;q=0', 'identity'],
    ['identity', 'identity'],
    ['identity;q=0', 'identity'],
    ['identity;q=0.5, gzip', 'gzip'],
    ['identity, gzip;q=0.5', 'identity'],
    ['gzip;q=0.8, *;q=0.5', 'gzip'],
    ['gzip;q=0.4, identity;q=0.4', 'gzip'],
    ['deflate, compress', 'identity'],
    ['x-gzip', 'gzip'],
    ['gzip;level=9', 'gzip'],
  ] as [string | undefined, string][])('%j → %s', (value, expected) => {
    expect(chooseCoding(value, NO_ZSTD)).toBe(expected);
  });

  it('offers zstd when asked to, in the offer order', () => {
    expect(chooseCoding('zstd, gzip', ALL)).toBe('zstd');
    expect(chooseCoding('zstd', NO_ZSTD)).toBe('identity');
    expect(chooseCoding('gzip, br', ['gzip', 'br'])).toBe('gzip');
  });

  it.each([
    'gzip;q=abc',
    'gzip;q=',
    'gzip;q=1.5',
    'gzip;q=1.001',
    'gzip;q=-1',
    'gzip;q=0.0001',
    'gzip;q=.5',
    'gzip;q=0,5',
    'gzip;q="1"',
    'gzip;q=1e0',
    'gzip;q=0x1',
    'gzip;q=Infinity',
    'gzip;q=NaN',
    'gzip;q=0.5;q=junk',
  ])('a malformed q-value ignores its element: %j', (value) => {
    expect(chooseCoding(value, NO_ZSTD)).toBe('identity');
    expect(chooseCoding(`${value}, br;q=0.1`, NO_ZSTD)).toBe('br');
  });

  it('junk around the elements is ignored', () => {
    expect(chooseCoding(',,, ,gzip,,', NO_ZSTD)).toBe('gzip');
    expect(chooseCoding(';;;', NO_ZSTD)).toBe('identity');
    expect(chooseCoding('\u0000\u00ff, gzip', NO_ZSTD)).toBe('gzip');
    expect(chooseCoding('gzip;', NO_ZSTD)).toBe('gzip');
  });

  it(`reads at most ${MAX_ELEMENTS} elements`, () => {
    const filler = Array.from({ length: MAX_ELEMENTS }, (_, i) => `c${i}`).join(', ');
    expect(chooseCoding(`${filler}, gzip`, NO_ZSTD)).toBe('identity');
    expect(chooseCoding(`gzip, ${filler}`, NO_ZSTD)).toBe('gzip');
  });

  it('CodingChooser reads every Accept-Encoding field as one list, and caches by value', () => {
    const c = new CodingChooser(NO_ZSTD);
    const h = new Headers([
      ['Accept-Encoding', 'gzip;q=0.5'],
      ['Accept-Encoding', 'br;q=0.9'],
    ]);
    expect(c.choose(h)).toBe('br');
    expect(c.choose(new Headers([['Accept-Encoding', 'gzip']]))).toBe('gzip');
    expect(c.choose(new Headers())).toBe('identity');
  });
});

describe('hostile Accept-Encoding on a server', () => {
  it('a header of ~31 KiB (under the line limit) with thousands of elements is answered promptly, and correctly', async () => {
    const body = jsonOf(8192);
    const { port, errors } = await compressedServer(() => new Response(200, body, { headers: { 'Content-Type': 'application/json' } }));
    const huge = `${'a;q=0.1, '.repeat(3500)}gzip`;
    const t0 = performance.now();
    const r = await raw(port, '/', { 'Accept-Encoding': huge });
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(r.status).toBe(200);
    // gzip comes after the elements read: not named, so not chosen.
    expect(r.headers['content-encoding']).toBeUndefined();
    expect(r.body.toString()).toBe(body);
    // A long value that names gzip first still gets it.
    const first = await raw(port, '/', { 'Accept-Encoding': `gzip, ${'x;q=0.5, '.repeat(3400)}` });
    expect(first.headers['content-encoding']).toBe('gzip');
    expect(errors).toEqual([]);
  });

  it('junk q-values and bytes in Accept-Encoding, sent raw, get an unencoded 200', async () => {
    const body = jsonOf(4096);
    const { port, errors } = await compressedServer(() => new Response(200, body, { headers: { 'Content-Type': 'application/json' } }));
    const head = `GET / HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip;q=\u00ff\u00fe, br;q=9999999999999999999999, zstd;q=-0\r\n\r\n`;
    const { client, res } = await exchange(port, Buffer.from(head, 'latin1'));
    client.destroy();
    expect(res.status).toBe(200);
    expect(res.headers.has('Content-Encoding')).toBe(false);
    expect(res.text).toBe(body);
    expect(errors).toEqual([]);
  });
});

describe('register(compression, options)', () => {
  it.each([
    [{ threshold: -1 }, /threshold must be a whole number of bytes >= 0/],
    [{ threshold: 1.5 }, /threshold/],
    [{ encodings: [] }, /encodings must be a non-empty array/],
    [{ encodings: ['deflate'] }, /unknown encoding "deflate"/],
    [{ levels: { gzip: 10 } }, /levels.gzip must be an integer 1..9/],
    [{ levels: { br: -1 } }, /levels.br must be an integer 0..11/],
    [{ levels: { gzp: 1 } }, /gzp.*did you mean gzip/],
    [{ treshold: 10 }, /treshold.*did you mean threshold/],
    [{ types: 'text/*' }, /types must be a function/],
  ])('refuses %j', async (options, message) => {
    const { createKernel } = await import('../../../kernel/index.js');
    const { compression } = await import('../../../plugins/index.js');
    const kernel = createKernel().register(compression, options as never);
    await expect(kernel.ready()).rejects.toThrow(message);
  });

  it('zstd only where Node has it', async () => {
    const { createKernel } = await import('../../../kernel/index.js');
    const { compression, hasZstd } = await import('../../../plugins/index.js');
    const kernel = createKernel().register(compression, { encodings: ['zstd', 'gzip'] });
    if (hasZstd()) await expect(kernel.ready()).resolves.toBeDefined();
    else await expect(kernel.ready()).rejects.toThrow(/zstd needs a Node whose zlib has it/);
    await kernel.close().catch(() => {});
  });
});
