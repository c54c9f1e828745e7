/**
 * The MemoryStore on its own: entries appear only on commit, an aborted or oversized body
 * leaves nothing, variants per key, the 304 head update, and LRU eviction by count and bytes.
 */
import { describe, expect, it } from 'vitest';
import { ArgumentError } from '../../../kernel/index.js';
import { MemoryStore, type CacheEntry, type StoredHead } from '../../../plugins/cache/store.js';

const head = (url = 'http://a.test/x'): StoredHead => ({ method: 'GET', url, status: 200, reason: 'OK', headers: [['Content-Type', 'text/plain']], requestTime: 0, responseTime: 0, vary: [] });
const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);

async function text(e: CacheEntry): Promise<string> {
  let s = '';
  for await (const c of e.body()) s += new TextDecoder().decode(c);
  return s;
}

async function put(store: MemoryStore, key: string, variant: string, body: string): Promise<boolean> {
  const w = store.open(key, variant, head());
  await w.write(bytes(body));
  return w.commit();
}

describe('MemoryStore', () => {
  it('a body being written is invisible until commit; its bytes are then readable, more than once', async () => {
    const s = new MemoryStore();
    const w = s.open('k', 'v', head());
    await w.write(bytes('ab'));
    expect(await s.get('k')).toEqual([]);
    await w.write(bytes('cd'));
    expect(await w.commit()).toBe(true);
    const [e] = await s.get('k');
    expect(await text(e!)).toBe('abcd');
    expect(await text(e!)).toBe('abcd');
    expect(e!.size).toBe(4);
  });

  it('abort leaves nothing, and keeps an older entry of the same variant', async () => {
    const s = new MemoryStore();
    await put(s, 'k', 'v', 'old');
    const w = s.open('k', 'v', head());
    await w.write(bytes('new'));
    w.abort();
    expect(await w.commit()).toBe(false);
    const all = await s.get('k');
    expect(all.length).toBe(1);
    expect(await text(all[0]!)).toBe('old');
  });

  it('a body over maxEntryBytes is refused at commit', async () => {
    const s = new MemoryStore({ maxEntryBytes: 3 });
    expect(await put(s, 'k', 'v', 'abcd')).toBe(false);
    expect(s.size).toBe(0);
    expect(await put(s, 'k', 'v', 'abc')).toBe(true);
  });

  it('holds several variants per key, newest first; the same variant replaces; delete removes them all', async () => {
    const s = new MemoryStore();
    await put(s, 'k', 'en', '1');
    await put(s, 'k', 'fr', '2');
    await put(s, 'k', 'en', '3');
    const all = await s.get('k');
    expect(await Promise.all(all.map(text))).toEqual(['3', '2']);
    expect(s.totalBytes).toBe(2);
    await s.delete('k');
    expect(await s.get('k')).toEqual([]);
    expect(s.totalBytes).toBe(0);
  });

  it('update replaces the head and keeps the body', async () => {
    const s = new MemoryStore();
    await put(s, 'k', 'v', 'body');
    await s.update('k', 'v', { ...head(), headers: [['X-New', '1']] });
    const [e] = await s.get('k');
    expect(e!.head.headers).toEqual([['X-New', '1']]);
    expect(await text(e!)).toBe('body');
  });

  it('evicts the least recently used by count and by bytes', async () => {
    const s = new MemoryStore({ maxEntries: 2, maxBytes: 10, maxEntryBytes: 10 });
    await put(s, 'a', '', '1');
    await put(s, 'b', '', '2');
    await s.get('a');
    await put(s, 'c', '', '3');
    expect((await s.get('b')).length).toBe(0);
    expect((await s.get('a')).length).toBe(1);
    await put(s, 'd', '', '123456789');
    expect(s.totalBytes).toBeLessThanOrEqual(10);
    expect((await s.get('d')).length).toBe(1);
  });

  it('refuses bad bounds', () => {
    expect(() => new MemoryStore({ maxEntries: -1 })).toThrow(ArgumentError);
    expect(() => new MemoryStore({ maxBytes: 1.5 })).toThrow(/maxBytes/);
    expect(() => new MemoryStore({ maxEntrys: 10 } as never)).toThrow(ArgumentError);
    expect(() => new MemoryStore({ maxEntrys: 10 } as never)).toThrow(/unknown option "maxEntrys" \(did you mean maxEntries\?\)/);
  });
});
