/**
 * A {@link CacheStore} on disk, on `cacache` (the content-addressed cache npm keeps its
 * packages in), so a command-line tool or a build keeps its HTTP cache across runs.
 *
 * Layout: one cacache key per cache key; each stored variant is an index entry under it whose
 * metadata holds the variant and the response head ({@link StoredHead}: method, URL, status,
 * fields, request and response times, the Vary selection); bodies are content files named by
 * their sha512, in cacache's layout. A body streams into a temporary file; only once it is
 * complete is the file moved to its content path and the index entry appended, so a body that
 * fails midway never becomes an entry (and an abandoned one's file is removed once closed). A
 * content file that no longer matches its hash (truncated, overwritten) is a miss, and is
 * removed.
 *
 * cacache is loaded on the store's first use, not when this module is imported.
 */
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { ArgumentError, nodeCrypto } from '../../kernel/index.js';
import { checkStoreOptions, storeLimit, type CacheEntry, type CacheStore, type CacheWriter, type StoredHead } from './store.js';

/** Options of {@link DiskStore}. */
export interface DiskStoreOptions {
  /** Largest body stored, in bytes; a larger one is not stored. Default 64 MiB. */
  maxEntryBytes?: number;
  /**
   * Bodies up to this many bytes are read and checked against their hash before the entry is
   * returned, so a damaged file is a miss. A larger body is checked for its length up front and
   * for its hash as it streams: damage then fails the body's read at its end. Default 1 MiB.
   */
  verifyBytes?: number;
}

// The parts of cacache this store uses (it ships no types).
interface IndexEntry {
  key: string;
  integrity: string | null;
  size?: number;
  time: number;
  metadata?: unknown;
}
interface Cacache {
  get: {
    byDigest(dir: string, integrity: string, opts?: { size?: number }): Promise<Buffer>;
    hasContent(dir: string, integrity: string): Promise<false | { size: number }>;
    stream: { byDigest(dir: string, integrity: string, opts?: { size?: number }): AsyncIterable<Buffer> };
  };
  index: {
    insert(dir: string, key: string, integrity: string, opts: { metadata: unknown; size: number }): Promise<unknown>;
    compact(dir: string, key: string, match: (a: IndexEntry, b: IndexEntry) => boolean): Promise<unknown>;
  };
  rm: { entry(dir: string, key: string): Promise<unknown>; content(dir: string, integrity: string): Promise<unknown> };
  verify(dir: string): Promise<unknown>;
}
// Internals of the pinned cacache: its public API gives a key's newest entry only (a key here
// has one per variant), and its put stream cannot be abandoned midway without leaving its
// temporary file and descriptor behind, so bodies are written here and moved into place.
interface EntryIndex {
  bucketPath(dir: string, key: string): string;
  bucketEntries(bucket: string): Promise<IndexEntry[]>;
}

interface Lib {
  cacache: Cacache;
  index: EntryIndex;
  contentPath: (dir: string, integrity: string) => string;
}
let lib: Lib | undefined;
function load(): Lib {
  if (lib === undefined) {
    const require = createRequire(import.meta.url);
    lib = {
      cacache: require('cacache') as Cacache,
      index: require('cacache/lib/entry-index.js') as EntryIndex,
      contentPath: require('cacache/lib/content/path.js') as Lib['contentPath'],
    };
  }
  return lib;
}

/** What a variant's index entry carries. */
interface Meta {
  readonly variant: string;
  readonly head: StoredHead;
}

/** The integrity of an empty body (the sha512 of nothing, base64), which cacache stores no content file for. */
const EMPTY_SHA512 = 'sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==';

function isMeta(m: unknown): m is Meta {
  return typeof m === 'object' && m !== null && typeof (m as Meta).variant === 'string' && typeof (m as Meta).head === 'object';
}

const DISK_STORE_OPTIONS: ReadonlySet<string> = new Set(['maxEntryBytes', 'verifyBytes']);

/**
 * A {@link CacheStore} in a directory on disk (created on first write), shared by every
 * process that opens the same directory.
 *
 * @example
 * ```ts
 * import { createKernel } from 'switchyard';
 * import { cache, DiskStore } from 'switchyard/plugins';
 * const kernel = createKernel().register(cache, { store: new DiskStore('.http-cache') });
 * ```
 */
export class DiskStore implements CacheStore {
  /** The cache directory. */
  readonly dir: string;
  /** See {@link DiskStoreOptions.maxEntryBytes}. */
  readonly maxEntryBytes: number;
  /** See {@link DiskStoreOptions.verifyBytes}. */
  readonly verifyBytes: number;
  private readonly pending = new Set<Promise<void>>();
  private readonly keyLocks = new Map<string, Promise<void>>();

  /** A store in `dir`. */
  constructor(dir: string, options: DiskStoreOptions = {}) {
    if (typeof dir !== 'string' || dir === '') throw new ArgumentError(`DiskStore needs a directory path, got ${JSON.stringify(dir)}`);
    checkStoreOptions(options, DISK_STORE_OPTIONS, 'DiskStore');
    this.dir = dir;
    this.maxEntryBytes = storeLimit(options.maxEntryBytes, 'maxEntryBytes', 64 * 1024 * 1024, 'DiskStore');
    this.verifyBytes = storeLimit(options.verifyBytes, 'verifyBytes', 1024 * 1024, 'DiskStore');
  }

  /** See {@link CacheStore.get}. */
  async get(key: string): Promise<readonly CacheEntry[]> {
    const found = await this.variants(key);
    const out: CacheEntry[] = [];
    for (const e of found) {
      const entry = await this.open_(e);
      if (entry !== null) out.push(entry);
    }
    return out;
  }

  /** See {@link CacheStore.open}. */
  open(key: string, variant: string, head: StoredHead): CacheWriter {
    const { cacache, contentPath } = load();
    const metadata: Meta = { variant, head };
    const dir = this.dir;
    const hash = nodeCrypto().createHash('sha512');
    let size = 0;
    let state: 'open' | 'over' | 'done' = 'open';
    let file: WriteStream | null = null;
    let failed = false;
    const tmp = join(dir, 'tmp', `swy-${nodeCrypto().randomUUID()}`);
    const start = (): WriteStream | null => {
      try {
        mkdirSync(join(dir, 'tmp'), { recursive: true });
      } catch {
        failed = true;
        return null;
      }
      const f = createWriteStream(tmp, { flags: 'wx' });
      f.on('error', () => {
        failed = true;
      });
      return f;
    };
    // Resolves once the file is closed (after its open, so nothing creates it afterwards).
    const closed = (f: WriteStream): Promise<void> => (f.closed ? Promise.resolve() : new Promise<void>((resolve) => f.once('close', () => resolve())));
    const drop = (): void => {
      if (file === null) return;
      const f = file;
      file = null;
      f.destroy();
      this.track(closed(f).then(() => rm(tmp, { force: true })));
    };
    const compact = (): Promise<void> => this.compact(key);
    // A disk that cannot take the entry (full, read-only, not a directory) leaves it unstored:
    // the caller's response does not fail for the cache's sake.
    const publish = async (): Promise<boolean> => {
      try {
        if (failed) throw new Error('not written');
        if (file === null) {
          // An empty body needs no content file.
          await cacache.index.insert(dir, key, EMPTY_SHA512, { metadata, size: 0 });
        } else {
          const f = file;
          file = null;
          f.end();
          await closed(f);
          if (failed) throw new Error('not written');
          const integrity = `sha512-${hash.digest('base64')}`;
          const target = contentPath(dir, integrity);
          await mkdir(dirname(target), { recursive: true });
          // The content is complete before the index names it; an existing file of the same
          // name is replaced by identical (or, if it was damaged, correct) bytes.
          await rename(tmp, target);
          await cacache.index.insert(dir, key, integrity, { metadata, size });
        }
      } catch {
        await rm(tmp, { force: true }).catch(() => {});
        return false;
      }
      // Compaction only saves space; an entry is stored even when it fails.
      await compact().catch(() => {});
      return true;
    };
    return {
      write: (chunk) => {
        if (state !== 'open' || chunk.length === 0) return;
        size += chunk.length;
        if (size > this.maxEntryBytes) {
          state = 'over';
          drop();
          return;
        }
        hash.update(chunk);
        file ??= start();
        if (file !== null && !file.write(chunk)) {
          const f = file;
          return new Promise<void>((resolve) => {
            const done = (): void => {
              f.off('drain', done);
              f.off('close', done);
              resolve();
            };
            f.on('drain', done);
            f.on('close', done);
          });
        }
      },
      commit: () => {
        if (state !== 'open') return Promise.resolve(false);
        state = 'done';
        const done = publish();
        this.track(done);
        return done;
      },
      abort: () => {
        state = 'done';
        drop();
      },
    };
  }

  /**
   * Resolves once every writer ended so far has finished with the disk: a committed body is in
   * the index, an abandoned one (aborted, over {@link DiskStoreOptions.maxEntryBytes}) has had
   * its temporary file removed. A program that exits soon after a response calls it first.
   */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.all(this.pending);
  }

  private track(work: Promise<unknown>): void {
    const p = work.then(
      () => {},
      () => {},
    );
    this.pending.add(p);
    void p.then(() => this.pending.delete(p));
  }

  /** See {@link CacheStore.update}. */
  async update(key: string, variant: string, head: StoredHead): Promise<void> {
    const e = (await this.variants(key)).find((x) => (x.metadata as Meta).variant === variant);
    if (e === undefined) return;
    // Like a refused commit: an entry whose head could not be renewed is revalidated again next time.
    await load()
      .cacache.index.insert(this.dir, key, e.integrity!, { metadata: { variant, head } satisfies Meta, size: e.size ?? 0 })
      .catch(() => {});
  }

  /** See {@link CacheStore.delete}. */
  delete(key: string): Promise<void> {
    return this.exclusive(key, async () => {
      try {
        await load().cacache.rm.entry(this.dir, key);
      } catch (err) {
        // No directory where the index would be: nothing is stored. Any other failure is raised,
        // since an entry left in place after an invalidation would be served.
        if ((err as NodeJS.ErrnoException).code !== 'ENOTDIR') throw err;
      }
    });
  }

  /**
   * Runs `fn` after the key's earlier exclusive work. Compaction rewrites the key's index from
   * what it read; a deletion appended in between would be dropped and the deleted entries
   * served again, so within this store the two never overlap.
   */
  private exclusive<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const run = (this.keyLocks.get(key) ?? Promise.resolve()).then(fn);
    const tail = run.then(
      () => {},
      () => {},
    );
    this.keyLocks.set(key, tail);
    void tail.then(() => {
      if (this.keyLocks.get(key) === tail) this.keyLocks.delete(key);
    });
    return run;
  }

  /**
   * Removes content no entry refers to any more (replaced variants, deleted keys) and checks
   * every content file against its hash. Not needed for correctness; run it now and then to
   * reclaim disk space.
   */
  async prune(): Promise<void> {
    await load().cacache.verify(this.dir);
  }

  /** The key's live variants, newest first: its index entries after the last deletion, one per variant. */
  private async variants(key: string): Promise<IndexEntry[]> {
    const { index } = load();
    let entries: IndexEntry[];
    try {
      entries = await index.bucketEntries(index.bucketPath(this.dir, key));
    } catch (err) {
      // No index file, or no directory where one would be: nothing stored.
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return [];
      throw err;
    }
    const out: IndexEntry[] = [];
    const seen = new Set<string>();
    for (let i = entries.length - 1; i >= 0; i--) {
      const e = entries[i]!;
      // Different keys can share a bucket (hash prefix); a null integrity is a deletion of all before it.
      if (e.key !== key) continue;
      if (e.integrity === null) break;
      if (!isMeta(e.metadata) || seen.has(e.metadata.variant)) continue;
      seen.add(e.metadata.variant);
      out.push(e);
    }
    return out;
  }

  /** Rewrites the key's index without superseded lines once it has some, so it stays small. */
  private compact(key: string): Promise<void> {
    return this.exclusive(key, async () => {
      const { cacache, index } = load();
      const all = (await index.bucketEntries(index.bucketPath(this.dir, key)).catch(() => [])).filter((e) => e.key === key);
      if (all.length <= (await this.variants(key)).length + 4) return;
      await cacache.index.compact(this.dir, key, (a, b) => isMeta(a.metadata) && isMeta(b.metadata) && a.metadata.variant === b.metadata.variant);
    });
  }

  /** The entry for an index line, or null when its content is gone or damaged. */
  private async open_(e: IndexEntry): Promise<CacheEntry | null> {
    const { cacache } = load();
    const { variant, head } = e.metadata as Meta;
    const size = e.size ?? 0;
    const integrity = e.integrity!;
    if (size === 0) return { head, variant, size, body: () => chunks([]) };
    if (size <= this.verifyBytes) {
      let data: Buffer;
      try {
        data = await cacache.get.byDigest(this.dir, integrity, { size });
      } catch (err) {
        return this.damaged(integrity, err);
      }
      return { head, variant, size, body: () => chunks([data]) };
    }
    const has = await cacache.get.hasContent(this.dir, integrity);
    if (has === false || has.size !== size) return this.damaged(integrity, null);
    return { head, variant, size, body: () => cacache.get.stream.byDigest(this.dir, integrity, { size }) };
  }

  /** A content file that is missing or fails its hash: removed, so a later store of the same bytes writes it afresh. */
  private async damaged(integrity: string, err: unknown): Promise<null> {
    const code = (err as NodeJS.ErrnoException | null)?.code;
    if (err !== null && code !== 'EINTEGRITY' && code !== 'EBADSIZE' && code !== 'ENOENT') throw err;
    // Removed so no later reader trips on it; storing the same bytes again writes it afresh.
    await load()
      .cacache.rm.content(this.dir, integrity)
      .catch(() => {});
    return null;
  }
}

async function* chunks(list: readonly Uint8Array[]): AsyncGenerator<Uint8Array> {
  for (const c of list) yield c;
}
