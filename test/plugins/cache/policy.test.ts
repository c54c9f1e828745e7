/**
 * The RFC 9111 / RFC 5861 rules of the cache plugin, one by one, on heads (no network).
 */
import { describe, expect, it } from 'vitest';
import { Headers } from '../../../kernel/message/headers.js';
import {
  cacheControl,
  cacheKey,
  conditionalFields,
  currentAge,
  evaluate,
  freshnessLifetime,
  invalidatedUrls,
  isStorable,
  notModifiedSelects,
  staleIfError,
  storedFields,
  updateHead,
  varyMatches,
  varySelection,
} from '../../../plugins/cache/policy.js';
import type { StoredHead } from '../../../plugins/cache/store.js';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const h = (o: Record<string, string> = {}): Headers => new Headers(Object.entries(o));
const date = (ms: number): string => new Date(ms).toUTCString();

function head(fields: Record<string, string>, o: Partial<StoredHead> = {}): StoredHead {
  return { method: 'GET', url: 'http://a.test/x', status: 200, reason: 'OK', headers: Object.entries(fields), requestTime: T0, responseTime: T0, vary: [], ...o };
}

describe('Cache-Control parsing', () => {
  it('reads directives case-insensitively, with quoted arguments containing commas, first occurrence wins', () => {
    const d = cacheControl(h({ 'Cache-Control': 'Max-Age=60, no-cache="a, b", max-age=5, public' }));
    expect(d.get('max-age')).toBe('60');
    expect(d.get('no-cache')).toBe('a, b');
    expect(d.get('public')).toBe(true);
  });
});

describe('storable (§3)', () => {
  const ok = (status: number, res: Record<string, string>, o: { method?: string; req?: Record<string, string>; mode?: 'private' | 'shared' } = {}) =>
    isStorable(o.method ?? 'GET', h(o.req), status, h(res), o.mode ?? 'private');
  it('by method: GET and HEAD, not POST/PUT/DELETE', () => {
    expect(ok(200, {})).toBe(true);
    expect(ok(200, {}, { method: 'HEAD' })).toBe(true);
    for (const m of ['POST', 'PUT', 'DELETE', 'PATCH']) expect(ok(200, { 'Cache-Control': 'max-age=60' }, { method: m })).toBe(false);
  });
  it('by status: heuristically cacheable ones, others only with explicit freshness; never 1xx, 206, 304', () => {
    for (const s of [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501]) expect(ok(s, {})).toBe(true);
    for (const s of [201, 302, 307, 400, 403, 500, 503]) {
      expect(ok(s, {})).toBe(false);
      expect(ok(s, { 'Cache-Control': 'max-age=10' })).toBe(true);
      expect(ok(s, { Expires: date(T0 + 1000) })).toBe(true);
    }
    expect(ok(206, { 'Cache-Control': 'max-age=10' })).toBe(false);
    expect(ok(304, { 'Cache-Control': 'max-age=10' })).toBe(false);
  });
  it('no-store in the response or the request', () => {
    expect(ok(200, { 'Cache-Control': 'no-store' })).toBe(false);
    expect(ok(200, { 'Cache-Control': 'max-age=60' }, { req: { 'Cache-Control': 'no-store' } })).toBe(false);
  });
  it('must-understand overrides no-store for understood statuses only', () => {
    expect(ok(200, { 'Cache-Control': 'must-understand, no-store, max-age=60' })).toBe(true);
    expect(ok(299, { 'Cache-Control': 'must-understand, no-store, max-age=60' })).toBe(false);
  });
  it('Set-Cookie: stored by a private cache, never by a shared one, whatever the freshness', () => {
    expect(ok(200, { 'Set-Cookie': 'sid=1', 'Cache-Control': 'max-age=60' })).toBe(true);
    expect(ok(200, { 'Set-Cookie': 'sid=1', 'Cache-Control': 'public, s-maxage=60' }, { mode: 'shared' })).toBe(false);
    expect(ok(200, { 'Set-Cookie': 'sid=1' }, { mode: 'shared' })).toBe(false);
    expect(ok(200, { 'Cache-Control': 'public, s-maxage=60' }, { mode: 'shared' })).toBe(true);
  });
  it('private: stored by a private cache, never by a shared one', () => {
    expect(ok(201, { 'Cache-Control': 'private' })).toBe(true);
    expect(ok(200, { 'Cache-Control': 'private, max-age=60' }, { mode: 'shared' })).toBe(false);
  });
  it('s-maxage makes a response storable in a shared cache only', () => {
    expect(ok(201, { 'Cache-Control': 's-maxage=60' }, { mode: 'shared' })).toBe(true);
    expect(ok(201, { 'Cache-Control': 's-maxage=60' })).toBe(false);
  });
  it('Authorization (§3.5): a shared cache stores only with must-revalidate, public or s-maxage; a private one stores', () => {
    const req = { Authorization: 'Bearer x' };
    expect(ok(200, { 'Cache-Control': 'max-age=60' }, { req, mode: 'shared' })).toBe(false);
    for (const cc of ['public', 'must-revalidate, max-age=60', 's-maxage=60']) expect(ok(200, { 'Cache-Control': cc }, { req, mode: 'shared' })).toBe(true);
    expect(ok(200, { 'Cache-Control': 'max-age=60' }, { req, mode: 'private' })).toBe(true);
  });
});

describe('freshness (§4.2.1, §4.2.2)', () => {
  const life = (f: Record<string, string>, mode: 'private' | 'shared' = 'private', o: Partial<StoredHead> = {}) => {
    const hd = head(f, o);
    return freshnessLifetime(hd, h(f), mode);
  };
  it('max-age wins over Expires', () => {
    expect(life({ 'Cache-Control': 'max-age=30', Expires: date(T0 + 3600_000), Date: date(T0) })).toBe(30);
  });
  it('s-maxage wins in shared mode only', () => {
    expect(life({ 'Cache-Control': 'max-age=30, s-maxage=90' }, 'shared')).toBe(90);
    expect(life({ 'Cache-Control': 'max-age=30, s-maxage=90' }, 'private')).toBe(30);
  });
  it('Expires minus Date; an invalid Expires is already expired', () => {
    expect(life({ Expires: date(T0 + 120_000), Date: date(T0) })).toBe(120);
    expect(life({ Expires: '0', Date: date(T0), 'Last-Modified': date(T0 - 1000_000) })).toBe(0);
  });
  it('heuristic: a tenth of Date − Last-Modified for heuristically cacheable statuses, none for others unless public', () => {
    const f = { Date: date(T0), 'Last-Modified': date(T0 - 1000_000) };
    expect(life(f)).toBe(100);
    expect(life(f, 'private', { status: 302 })).toBe(0);
    expect(life({ ...f, 'Cache-Control': 'public' }, 'private', { status: 302 })).toBe(100);
    expect(life({ Date: date(T0) })).toBe(0);
  });
});

describe('age (§4.2.3)', () => {
  it('corrected initial age plus resident time, counting the Age field and the response delay', () => {
    const hd = head({ Date: date(T0 - 10_000), Age: '5' }, { requestTime: T0 - 2000, responseTime: T0 });
    // apparent 10, corrected 5 + 2 = 7 → 10; resident 30
    expect(currentAge(hd, h({ Date: date(T0 - 10_000), Age: '5' }), T0 + 30_000)).toBe(40);
    const hd2 = head({ Date: date(T0), Age: '100' }, { requestTime: T0 - 3000, responseTime: T0 });
    expect(currentAge(hd2, h({ Date: date(T0), Age: '100' }), T0)).toBe(103);
  });
  it('a Date in the future gives no negative age', () => {
    const f = { Date: date(T0 + 60_000) };
    expect(currentAge(head(f), h(f), T0)).toBe(0);
  });
});

describe('request directives and stale rules (§4.2, §5.2.1, RFC 5861)', () => {
  const at = (f: Record<string, string>, secs: number, req: Record<string, string> = {}, mode: 'private' | 'shared' = 'private') =>
    evaluate(head({ Date: date(T0), ...f }), h(req), T0 + secs * 1000, mode).use;
  it('fresh while age < lifetime, then revalidate', () => {
    expect(at({ 'Cache-Control': 'max-age=60' }, 59)).toBe('fresh');
    expect(at({ 'Cache-Control': 'max-age=60' }, 60)).toBe('revalidate');
  });
  it('response no-cache always revalidates', () => {
    expect(at({ 'Cache-Control': 'no-cache, max-age=60' }, 0)).toBe('revalidate');
  });
  it('request no-cache, and Pragma: no-cache without Cache-Control', () => {
    expect(at({ 'Cache-Control': 'max-age=60' }, 0, { 'Cache-Control': 'no-cache' })).toBe('revalidate');
    expect(at({ 'Cache-Control': 'max-age=60' }, 0, { Pragma: 'no-cache' })).toBe('revalidate');
    expect(at({ 'Cache-Control': 'max-age=60' }, 0, { Pragma: 'no-cache', 'Cache-Control': 'max-stale' })).toBe('fresh');
  });
  it('request max-age', () => {
    expect(at({ 'Cache-Control': 'max-age=60' }, 10, { 'Cache-Control': 'max-age=5' })).toBe('revalidate');
    expect(at({ 'Cache-Control': 'max-age=60' }, 10, { 'Cache-Control': 'max-age=20' })).toBe('fresh');
  });
  it('request min-fresh', () => {
    expect(at({ 'Cache-Control': 'max-age=60' }, 50, { 'Cache-Control': 'min-fresh=20' })).toBe('revalidate');
    expect(at({ 'Cache-Control': 'max-age=60' }, 30, { 'Cache-Control': 'min-fresh=20' })).toBe('fresh');
  });
  it('request max-stale, with and without a value, not past must-revalidate', () => {
    expect(at({ 'Cache-Control': 'max-age=60' }, 80, { 'Cache-Control': 'max-stale=30' })).toBe('fresh');
    expect(at({ 'Cache-Control': 'max-age=60' }, 100, { 'Cache-Control': 'max-stale=30' })).toBe('revalidate');
    expect(at({ 'Cache-Control': 'max-age=60' }, 10_000, { 'Cache-Control': 'max-stale' })).toBe('fresh');
    expect(at({ 'Cache-Control': 'max-age=60, must-revalidate' }, 80, { 'Cache-Control': 'max-stale' })).toBe('revalidate');
    expect(at({ 'Cache-Control': 's-maxage=60' }, 80, { 'Cache-Control': 'max-stale' }, 'shared')).toBe('revalidate');
    expect(at({ 'Cache-Control': 'max-age=60, proxy-revalidate' }, 80, { 'Cache-Control': 'max-stale' }, 'private')).toBe('fresh');
  });
  it('stale-while-revalidate within its window only', () => {
    expect(at({ 'Cache-Control': 'max-age=60, stale-while-revalidate=30' }, 70)).toBe('stale-while-revalidate');
    expect(at({ 'Cache-Control': 'max-age=60, stale-while-revalidate=30' }, 91)).toBe('revalidate');
  });
  it('stale-if-error within its window, from the response or the request, never with must-revalidate', () => {
    const sie = (f: Record<string, string>, secs: number, req: Record<string, string> = {}) => staleIfError(head({ Date: date(T0), ...f }), h(req), T0 + secs * 1000, 'private');
    expect(sie({ 'Cache-Control': 'max-age=60, stale-if-error=30' }, 80)).toBe(true);
    expect(sie({ 'Cache-Control': 'max-age=60, stale-if-error=30' }, 100)).toBe(false);
    expect(sie({ 'Cache-Control': 'max-age=60' }, 80, { 'Cache-Control': 'stale-if-error=60' })).toBe(true);
    expect(sie({ 'Cache-Control': 'max-age=60' }, 80)).toBe(false);
    expect(sie({ 'Cache-Control': 'max-age=60, stale-if-error=30, must-revalidate' }, 80)).toBe(false);
  });
});

describe('validators and the 304 update (§4.3)', () => {
  it('conditional fields from ETag and Last-Modified', () => {
    expect(conditionalFields(h({ ETag: '"a"', 'Last-Modified': date(T0) }))).toEqual([
      ['If-None-Match', '"a"'],
      ['If-Modified-Since', date(T0)],
    ]);
    expect(conditionalFields(h({}))).toEqual([]);
  });
  it('a 304 selects by strong ETag, weak ETag or Last-Modified; one with no validator confirms the revalidated response', () => {
    expect(notModifiedSelects(h({ ETag: '"a"' }), h({ ETag: '"a"' }))).toBe(true);
    expect(notModifiedSelects(h({ ETag: '"a"' }), h({ ETag: '"b"' }))).toBe(false);
    expect(notModifiedSelects(h({ ETag: 'W/"a"' }), h({ ETag: '"a"' }))).toBe(false);
    expect(notModifiedSelects(h({ ETag: 'W/"a"' }), h({ ETag: 'W/"a"' }))).toBe(true);
    expect(notModifiedSelects(h({ 'Last-Modified': date(T0) }), h({ 'Last-Modified': date(T0) }))).toBe(true);
    expect(notModifiedSelects(h({ 'Last-Modified': date(T0) }), h({ 'Last-Modified': date(T0 + 1000) }))).toBe(false);
    expect(notModifiedSelects(h({ 'Last-Modified': date(T0) }), h({}))).toBe(true);
    expect(notModifiedSelects(h({ ETag: '"a"' }), h({}))).toBe(true);
    expect(notModifiedSelects(h({}), h({}))).toBe(true);
  });
  it('updates stored fields from the 304 but not framing or Connection-named ones', () => {
    const stored = head({ 'Content-Type': 'text/plain', 'Content-Length': '5', 'Cache-Control': 'max-age=1', ETag: '"a"', 'X-Old': '1' });
    const nm = h({ 'Cache-Control': 'max-age=600', ETag: '"a"', 'Content-Length': '0', Connection: 'X-Hop', 'X-Hop': 'y', 'X-New': '2' });
    const up = updateHead(stored, nm, T0 + 5000, T0 + 6000);
    const out = new Headers(up.headers.map(([n, v]) => [n, v] as [string, string]));
    expect(out.get('Cache-Control')).toBe('max-age=600');
    expect(out.get('Content-Length')).toBe('5');
    expect(out.get('X-Old')).toBe('1');
    expect(out.get('X-New')).toBe('2');
    expect(out.has('X-Hop')).toBe(false);
    expect(up.responseTime).toBe(T0 + 6000);
  });
});

describe('stored fields (§3.1)', () => {
  it('drops hop-by-hop fields and those Connection names, keeps the rest', () => {
    const out = storedFields(h({ Connection: 'X-Hop', 'Keep-Alive': 'timeout=5', 'Transfer-Encoding': 'chunked', 'X-Hop': '1', 'Content-Type': 'text/plain', 'Set-Cookie': 'a=1' }));
    expect(out.map(([n]) => n)).toEqual(['Content-Type', 'Set-Cookie']);
  });
});

describe('invalidation (§4.4)', () => {
  it('unsafe methods with 2xx/3xx invalidate the target and same-origin Location/Content-Location', () => {
    const res = h({ Location: '/new', 'Content-Location': 'http://other.test/y' });
    expect(invalidatedUrls('POST', 'http://a.test/x', 201, res)).toEqual(['http://a.test/x', 'http://a.test/new']);
    expect(invalidatedUrls('PUT', 'http://a.test/x', 303, h({ 'Content-Location': 'http://a.test/c' }))).toEqual(['http://a.test/x', 'http://a.test/c']);
    expect(invalidatedUrls('DELETE', 'http://a.test/x', 204, h({}))).toEqual(['http://a.test/x']);
  });
  it('not for safe methods, nor for error statuses', () => {
    expect(invalidatedUrls('GET', 'http://a.test/x', 200, h({}))).toEqual([]);
    expect(invalidatedUrls('POST', 'http://a.test/x', 500, h({}))).toEqual([]);
    expect(invalidatedUrls('POST', 'http://a.test/x', 404, h({}))).toEqual([]);
  });
  it('a Location on another port or scheme is another origin', () => {
    expect(invalidatedUrls('POST', 'http://a.test/x', 200, h({ Location: 'http://a.test:81/x' }))).toEqual(['http://a.test/x']);
    expect(invalidatedUrls('POST', 'http://a.test/x', 200, h({ Location: 'https://a.test/x' }))).toEqual(['http://a.test/x']);
  });
});

describe('Vary (§4.1)', () => {
  it('one header', () => {
    const sel = varySelection(h({ Vary: 'Accept-Encoding' }), h({ 'Accept-Encoding': 'gzip' }))!;
    expect(varyMatches(sel, h({ 'Accept-Encoding': 'gzip' }))).toBe(true);
    expect(varyMatches(sel, h({ 'Accept-Encoding': 'br' }))).toBe(false);
    expect(varyMatches(sel, h({}))).toBe(false);
  });
  it('several headers, in one or several fields, any case, whitespace normalized', () => {
    const sel = varySelection(h({ Vary: 'accept-language, ACCEPT' }), h({ Accept: 'a/b, c/d', 'Accept-Language': 'en' }))!;
    expect(varyMatches(sel, h({ Accept: 'a/b,c/d', 'Accept-Language': 'en' }))).toBe(true);
    expect(varyMatches(sel, h({ Accept: 'a/b, c/d', 'Accept-Language': 'fr' }))).toBe(false);
    expect(varyMatches(sel, h({ Accept: 'a/b, c/d' }))).toBe(false);
  });
  it('an absent header matches only an absent header', () => {
    const sel = varySelection(h({ Vary: 'Cookie' }), h({}))!;
    expect(varyMatches(sel, h({}))).toBe(true);
    expect(varyMatches(sel, h({ Cookie: 'a=1' }))).toBe(false);
  });
  it('Vary: * never matches', () => {
    expect(varySelection(h({ Vary: 'Accept, *' }), h({}))).toBeNull();
  });
});

describe('cache key (§2)', () => {
  it('method and URL, without fragment', () => {
    expect(cacheKey('GET', 'http://a.test/x?q#f')).toBe('GET http://a.test/x?q');
  });
});
