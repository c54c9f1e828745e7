/**
 * The disk store on cacache: entries survive a new store on the same directory (a second run),
 * a key holds one entry per variant, a body abandoned midway or over the bound never becomes
 * an entry and leaves no temporary file or open descriptor, and a damaged content file is a
 * miss that a later store repairs.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRequire } from 'node:module';
import net from 'node:net';
import { ArgumentError, Client, createKernel } from '../../../kernel/index.js';
import { cache, DiskStore, type CacheEntry, type StoredHead } from '../../../plugins/index.js';
import { closeNetServerAfter, onCleanup } from '../../helpers/cleanup.js';

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'disk-store-'));
  onCleanup(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function head(over: Partial<StoredHead> = {}): StoredHead {
  return {
    method: 'GET',
    url: 'http://example.test/a',
    status: 200,
    reason: 'OK',
    headers: [
      ['Cache-Control', 'max-age=60'],
      ['Content-Type', 'text/plain'],
    ],
    requestTime: 1000,
    responseTime: 1010,
    vary: [],
    ...over,
  };
}

async function text(e: CacheEntry): Promise<string> {
  const parts: Uint8Array[] = [];
  for await (const c of e.body()) parts.push(c);
  return Buffer.concat(parts).toString();
}

async function store(s: DiskStore, key: string, variant: string, body: string[], h = head()): Promise<boolean> {
  const w = s.open(key, variant, h);
  for (const c of body) await w.write(Buffer.from(c));
  return w.commit();
}

/** Files under the cache's tmp directory (cacache's half-written content). */
function tmpFiles(dir: string): string[] {
  try {
    return readdirSync(join(dir, 'tmp'));
  } catch {
    return [];
  }
}

const openFds = (): number => readdirSync('/proc/self/fd').length;

/** The one content file of the cache (the tests that damage it store one body). */
function contentFiles(dir: string): string[] {
  return (readdirSync(join(dir, 'content-v2'), { recursive: true }) as string[]).map((f) => join(dir, 'content-v2', f)).filter((f) => statSync(f).isFile());
}

describe('DiskStore', () => {
  it('keeps an entry across stores on the same directory: head, variant, size and body, read as often as wanted', async () => {
    const dir = tempDir();
    expect(await store(new DiskStore(dir), 'GET http://example.test/a', '', ['hello ', 'disk'])).toBe(true);
    const second = new DiskStore(dir);
    const [e, ...rest] = await second.get('GET http://example.test/a');
    expect(rest).toEqual([]);
    expect(e!.head).toEqual(head());
    expect(e!.variant).toBe('');
    expect(e!.size).toBe(10);
    expect(await text(e!)).toBe('hello disk');
    expect(await text(e!)).toBe('hello disk');
    expect(await second.get('GET http://example.test/other')).toEqual([]);
  });

  it('holds one entry per variant, newest first; storing a variant again replaces it; delete removes them all', async () => {
    const dir = tempDir();
    const s = new DiskStore(dir);
    const key = 'GET http://example.test/v';
    await store(s, key, 'accept-language=en', ['hello'], head({ vary: [['accept-language', 'en']] }));
    await store(s, key, 'accept-language=fr', ['bonjour'], head({ vary: [['accept-language', 'fr']] }));
    await store(s, key, 'accept-language=en', ['hello again']);
    const got = await s.get(key);
    expect(got.map((e) => e.variant)).toEqual(['accept-language=en', 'accept-language=fr']);
    expect(await Promise.all(got.map(text))).toEqual(['hello again', 'bonjour']);
    await s.delete(key);
    expect(await s.get(key)).toEqual([]);
    await store(s, key, 'accept-language=fr', ['salut']);
    expect((await s.get(key)).map((e) => e.variant)).toEqual(['accept-language=fr']);
  });

  it('update replaces a variant head and keeps its body; a gone variant is left gone', async () => {
    const s = new DiskStore(tempDir());
    const key = 'GET http://example.test/u';
    await store(s, key, '', ['body']);
    await s.update(key, '', head({ responseTime: 5000, headers: [['ETag', '"2"']] }));
    const [e] = await s.get(key);
    expect(e!.head.responseTime).toBe(5000);
    expect(e!.head.headers).toEqual([['ETag', '"2"']]);
    expect(await text(e!)).toBe('body');
    await s.update(key, 'other', head());
    expect((await s.get(key)).length).toBe(1);
  });

  it('stores an empty body (a 204, a HEAD) though cacache refuses empty content', async () => {
    const s = new DiskStore(tempDir());
    expect(await store(s, 'HEAD http://example.test/h', '', [], head({ method: 'HEAD' }))).toBe(true);
    const [e] = await s.get('HEAD http://example.test/h');
    expect(e!.size).toBe(0);
    expect(await text(e!)).toBe('');
  });

  it('a body that fails midway never becomes an entry, and its temporary file and descriptor are released', async () => {
    const dir = tempDir();
    const s = new DiskStore(dir);
    const key = 'GET http://example.test/half';
    await store(s, key, '', ['the old complete body']);
    const fds = openFds();
    // Many at once: a temporary file created after its removal shows up among them.
    for (let i = 0; i < 40; i++) {
      const w = s.open(key, '', head({ status: 203 }));
      await w.write(Buffer.alloc(64 * 1024, 'x'));
      await w.write(Buffer.from('half of a body'));
      w.abort();
      w.abort();
      expect(await w.commit()).toBe(false);
    }
    await s.settled();
    const [e, ...rest] = await s.get(key);
    expect(rest).toEqual([]);
    expect(e!.head.status).toBe(200);
    expect(await text(e!)).toBe('the old complete body');
    expect(tmpFiles(dir)).toEqual([]);
    expect(openFds()).toBeLessThanOrEqual(fds);
  });

  it("never runs a key's compaction and its deletion at once (compaction would drop a deletion appended meanwhile)", async () => {
    const dir = tempDir();
    const s = new DiskStore(dir);
    const key = 'GET http://example.test/race';
    // Five lines for one variant stay uncompacted; the sixth store compacts.
    for (let i = 0; i < 5; i++) await store(s, key, '', [`v${i}`]);
    const lib = createRequire(import.meta.url)('cacache') as { index: { compact: (...a: unknown[]) => Promise<unknown> }; rm: { entry: (...a: unknown[]) => Promise<unknown> } };
    const { compact, entry } = { compact: lib.index.compact, entry: lib.rm.entry };
    onCleanup(() => {
      lib.index.compact = compact;
      lib.rm.entry = entry;
    });
    const order: string[] = [];
    let compacting!: () => void;
    const started = new Promise<void>((resolve) => (compacting = resolve));
    lib.index.compact = async (...a) => {
      compacting();
      await Promise.resolve();
      order.push('compact start');
      const r = await compact(...a);
      order.push('compact end');
      return r;
    };
    lib.rm.entry = (...a) => {
      order.push('delete');
      return entry(...a);
    };
    const stored = store(s, key, '', ['v5']);
    await started;
    await Promise.all([s.delete(key), stored]);
    expect(order).toEqual(['compact start', 'compact end', 'delete']);
    expect(await s.get(key)).toEqual([]);
  });

  it('a body abandoned right after its first bytes leaves no temporary file, however soon', async () => {
    const dir = tempDir();
    const s = new DiskStore(dir);
    for (let i = 0; i < 40; i++) {
      const w = s.open(`GET http://example.test/soon${i}`, '', head());
      void w.write(Buffer.from('first bytes'));
      w.abort();
    }
    await s.settled();
    expect(tmpFiles(dir)).toEqual([]);
  });

  it('a body over maxEntryBytes is not stored (commit resolves false) and leaves nothing behind', async () => {
    const dir = tempDir();
    const s = new DiskStore(dir, { maxEntryBytes: 10 });
    expect(await store(s, 'GET http://example.test/big', '', ['0123456', '789'])).toBe(true);
    expect(await store(s, 'GET http://example.test/big2', '', ['0123456', '7890'])).toBe(false);
    await s.settled();
    expect(await s.get('GET http://example.test/big2')).toEqual([]);
    expect(tmpFiles(dir)).toEqual([]);
  });

  it.each([
    ['overwritten', (f: string) => writeFileSync(f, 'hellO disk')],
    ['truncated', (f: string) => writeFileSync(f, 'hello')],
    ['removed', (f: string) => rmSync(f)],
  ])('a content file %s is a miss, not an error, and storing the body again repairs it', async (_, damage) => {
    const dir = tempDir();
    const s = new DiskStore(dir);
    const key = 'GET http://example.test/c';
    await store(s, key, '', ['hello disk']);
    const [file, ...others] = contentFiles(dir);
    expect(others).toEqual([]);
    expect(readFileSync(file!, 'utf8')).toBe('hello disk');
    damage(file!);
    expect(await s.get(key)).toEqual([]);
    await store(s, key, '', ['hello disk']);
    const [e] = await s.get(key);
    expect(await text(e!)).toBe('hello disk');
  });

  it('a large body is checked for its length before it is served and for its hash as it streams', async () => {
    const dir = tempDir();
    const s = new DiskStore(dir, { verifyBytes: 4 });
    const key = 'GET http://example.test/large';
    await store(s, key, '', ['hello ', 'disk']);
    const [e] = await s.get(key);
    expect(await text(e!)).toBe('hello disk');
    const [file] = contentFiles(dir);
    writeFileSync(file!, 'hello');
    expect(await s.get(key)).toEqual([]);
    await store(s, key, '', ['hello ', 'disk']);
    writeFileSync(contentFiles(dir)[0]!, 'HELLO DISK');
    const [damaged] = await s.get(key);
    await expect(text(damaged!)).rejects.toMatchObject({ code: 'EINTEGRITY' });
  });

  it('a directory it cannot write refuses entries (commit resolves false) instead of failing the response', async () => {
    const file = join(tempDir(), 'not-a-dir');
    writeFileSync(file, '');
    const s = new DiskStore(join(file, 'cache'));
    expect(await store(s, 'GET http://example.test/e', '', [])).toBe(false);
    expect(await store(s, 'GET http://example.test/b', '', ['body'])).toBe(false);
    expect(await s.get('GET http://example.test/b')).toEqual([]);
    await s.update('GET http://example.test/b', '', head());
    await s.delete('GET http://example.test/b');
  });

  it('through the plugin: a body the server cuts off midway is not stored; the next complete one is', async () => {
    const dir = tempDir();
    const s = new DiskStore(dir);
    const body = Buffer.alloc(200_000, 'b');
    let connections = 0;
    const server = closeNetServerAfter(
      net.createServer((sock) => {
        const n = ++connections;
        sock.once('data', () => {
          sock.write(`HTTP/1.1 200 OK\r\nCache-Control: max-age=600\r\nContent-Length: ${body.length}\r\n\r\n`);
          // The first answer stops after half of its body and drops the connection.
          if (n === 1) sock.write(body.subarray(0, body.length / 2), () => sock.destroy());
          else sock.end(body);
        });
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const kernel = createKernel().register(cache, { store: s });
    await kernel.ready();
    const client = new Client({ kernel });
    onCleanup(async () => {
      client.close();
      await kernel.close();
    });
    const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/big`;
    await expect(client.get(url)).rejects.toThrow();
    await s.settled();
    expect(await s.get(`GET ${url}`)).toEqual([]);
    expect(tmpFiles(dir)).toEqual([]);
    const full = await client.get(url);
    expect(full.cacheStatus).toBe('miss');
    await s.settled();
    const hit = await client.get(url);
    expect(hit.cacheStatus).toBe('hit');
    expect(Buffer.from(hit.body as Uint8Array).equals(body)).toBe(true);
    expect(connections).toBe(2);
  });

  it('refuses a missing directory and bad bounds with ArgumentError', () => {
    expect(() => new DiskStore('')).toThrow(ArgumentError);
    expect(() => new DiskStore(tempDir(), { maxEntryBytes: -1 })).toThrow(/maxEntryBytes/);
    expect(() => new DiskStore(tempDir(), { verifyBytes: 1.5 })).toThrow(ArgumentError);
    expect(() => new DiskStore(tempDir(), { verifyByte: 1 } as never)).toThrow(/unknown option "verifyByte" \(did you mean verifyBytes\?\)/);
  });
});
