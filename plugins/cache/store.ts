/**
 * Where the cache plugin keeps responses: the {@link CacheStore} interface and the in-memory
 * {@link MemoryStore} (bounded by entries and bytes, least recently used out first).
 *
 * A store only keeps and hands back bytes and heads; every RFC 9111 decision (what may be
 * stored, what is fresh, which variant matches) is the plugin's.
 */
import { ArgumentError, checkOptionKeys } from '../../kernel/index.js';

/** A stored response head, plain data so any store can serialize it. */
export interface StoredHead {
  /** The request method the response answered (`GET`, `HEAD`). */
  readonly method: string;
  /** The request URL (the cache key's target). */
  readonly url: string;
  /** Status code. */
  readonly status: number;
  /** Reason phrase as received. */
  readonly reason: string;
  /** Response header fields in received order, names as received. */
  readonly headers: readonly (readonly [string, string])[];
  /** When the request was sent (ms since the epoch): `request_time` of RFC 9111 §4.2.3. */
  readonly requestTime: number;
  /** When the response head arrived (ms since the epoch): `response_time` of RFC 9111 §4.2.3. */
  readonly responseTime: number;
  /**
   * The request header fields the response's `Vary` names, lowercased, with the values the
   * storing request had (null when absent): which requests this variant answers.
   */
  readonly vary: readonly (readonly [string, string | null])[];
}

/** One stored variant, complete: a store never returns an entry whose body is still being written. */
export interface CacheEntry {
  /** The stored head. */
  readonly head: StoredHead;
  /** Identifies the variant within its key (the plugin's normalized `Vary` selection). */
  readonly variant: string;
  /** Body length in bytes. */
  readonly size: number;
  /** The body's bytes, from the start, each call a fresh iteration. */
  body(): AsyncIterable<Uint8Array>;
}

/**
 * Receives one response's body while it streams to the caller. Nothing is visible to
 * {@link CacheStore.get} until {@link CacheWriter.commit} resolves true; {@link CacheWriter.abort}
 * (or a commit that resolves false) leaves the store as it was.
 */
export interface CacheWriter {
  /** Appends body bytes. The store may copy or keep them; the caller does not reuse the chunk. */
  write(chunk: Uint8Array): void | Promise<void>;
  /** The body is complete: publish the entry, replacing the key's entry of the same variant. Resolves false when the store refused it (too large). */
  commit(): Promise<boolean>;
  /** Drop what was written (the caller stopped reading, the body failed). Idempotent. */
  abort(): void;
}

/**
 * A cache's storage: per key (method and URL), several variants. All methods are async so a
 * store may live on disk or elsewhere.
 */
export interface CacheStore {
  /** The complete variants stored under `key`, most recently stored first; empty when none. */
  get(key: string): Promise<readonly CacheEntry[]>;
  /** Starts storing a response under `key` as `variant`; the entry appears on commit. */
  open(key: string, variant: string, head: StoredHead): CacheWriter;
  /** Replaces the head of a stored variant, keeping its body (after a 304, RFC 9111 §4.3.4). Does nothing when it is gone. */
  update(key: string, variant: string, head: StoredHead): Promise<void>;
  /** Removes every variant under `key`. */
  delete(key: string): Promise<void>;
}

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /** Most entries (variants) kept. Default 1000. */
  maxEntries?: number;
  /** Most body bytes kept in all. Default 64 MiB. */
  maxBytes?: number;
  /** Largest body stored; a larger one is not stored. Default `maxBytes / 10`. */
  maxEntryBytes?: number;
}

interface MemoryEntry extends CacheEntry {
  readonly key: string;
  readonly chunks: readonly Uint8Array[];
}

/** @internal Checks a store's options: an object whose every key is one of `keys` (else the nearest is named). */
export function checkStoreOptions(options: unknown, keys: ReadonlySet<string>, store: string): void {
  if (typeof options !== 'object' || options === null) throw new ArgumentError(`${store} options must be an object`);
  checkOptionKeys(options, keys, `new ${store}()`);
}

/** @internal A store's size option `name`: `dflt` when absent, else an integer >= 0. */
export function storeLimit(v: unknown, name: string, dflt: number, store: string): number {
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw new ArgumentError(`${store} ${name} must be an integer >= 0, got ${String(v)}`);
  return v;
}

const MEMORY_STORE_OPTIONS: ReadonlySet<string> = new Set(['maxEntries', 'maxBytes', 'maxEntryBytes']);

/**
 * A {@link CacheStore} in memory: bounded by `maxEntries` and `maxBytes`, evicting the least
 * recently used entry first; a body over `maxEntryBytes` is not stored.
 */
export class MemoryStore implements CacheStore {
  /** See {@link MemoryStoreOptions.maxEntries}. */
  readonly maxEntries: number;
  /** See {@link MemoryStoreOptions.maxBytes}. */
  readonly maxBytes: number;
  /** See {@link MemoryStoreOptions.maxEntryBytes}. */
  readonly maxEntryBytes: number;
  // Map order is the LRU order: a read or a write moves the entry to the end.
  private readonly lru = new Map<string, MemoryEntry>();
  private readonly byKey = new Map<string, Set<string>>();
  private bytes = 0;

  /** A store with the given bounds. */
  constructor(options: MemoryStoreOptions = {}) {
    checkStoreOptions(options, MEMORY_STORE_OPTIONS, 'MemoryStore');
    this.maxEntries = storeLimit(options.maxEntries, 'maxEntries', 1000, 'MemoryStore');
    this.maxBytes = storeLimit(options.maxBytes, 'maxBytes', 64 * 1024 * 1024, 'MemoryStore');
    this.maxEntryBytes = Math.min(this.maxBytes, storeLimit(options.maxEntryBytes, 'maxEntryBytes', Math.floor(this.maxBytes / 10), 'MemoryStore'));
  }

  /** Entries held now. */
  get size(): number {
    return this.lru.size;
  }

  /** Body bytes held now. */
  get totalBytes(): number {
    return this.bytes;
  }

  /** See {@link CacheStore.get}. */
  get(key: string): Promise<readonly CacheEntry[]> {
    const ids = this.byKey.get(key);
    if (ids === undefined) return Promise.resolve([]);
    const out: MemoryEntry[] = [];
    for (const id of ids) {
      const e = this.lru.get(id)!;
      this.lru.delete(id);
      this.lru.set(id, e);
      out.push(e);
    }
    return Promise.resolve(out.reverse());
  }

  /** See {@link CacheStore.open}. */
  open(key: string, variant: string, head: StoredHead): CacheWriter {
    const chunks: Uint8Array[] = [];
    let size = 0;
    let state: 'open' | 'over' | 'done' = 'open';
    return {
      write: (chunk) => {
        if (state !== 'open') return;
        size += chunk.length;
        if (size > this.maxEntryBytes) {
          state = 'over';
          chunks.length = 0;
          return;
        }
        chunks.push(chunk);
      },
      commit: () => {
        if (state !== 'open') return Promise.resolve(false);
        state = 'done';
        this.insert({ key, variant, head, size, chunks, body: () => iterate(chunks) });
        return Promise.resolve(true);
      },
      abort: () => {
        state = 'done';
        chunks.length = 0;
      },
    };
  }

  /** See {@link CacheStore.update}. */
  update(key: string, variant: string, head: StoredHead): Promise<void> {
    const id = entryId(key, variant);
    const e = this.lru.get(id);
    if (e !== undefined) {
      this.lru.delete(id);
      this.lru.set(id, { ...e, head });
    }
    return Promise.resolve();
  }

  /** See {@link CacheStore.delete}. */
  delete(key: string): Promise<void> {
    const ids = this.byKey.get(key);
    if (ids !== undefined) for (const id of [...ids]) this.remove(id);
    return Promise.resolve();
  }

  private insert(e: MemoryEntry): void {
    const id = entryId(e.key, e.variant);
    this.remove(id);
    if (this.maxEntries === 0) return;
    this.lru.set(id, e);
    let ids = this.byKey.get(e.key);
    if (ids === undefined) this.byKey.set(e.key, (ids = new Set()));
    ids.add(id);
    this.bytes += e.size;
    for (const [old] of this.lru) {
      if (this.lru.size <= this.maxEntries && this.bytes <= this.maxBytes) break;
      this.remove(old);
    }
  }

  private remove(id: string): void {
    const e = this.lru.get(id);
    if (e === undefined) return;
    this.lru.delete(id);
    this.bytes -= e.size;
    const ids = this.byKey.get(e.key)!;
    ids.delete(id);
    if (ids.size === 0) this.byKey.delete(e.key);
  }
}

function entryId(key: string, variant: string): string {
  return `${key}\u0000${variant}`;
}

async function* iterate(chunks: readonly Uint8Array[]): AsyncGenerator<Uint8Array> {
  for (const c of chunks) yield c;
}
