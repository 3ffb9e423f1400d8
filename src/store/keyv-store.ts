import type Keyv from 'keyv';
import { LRUCache } from 'lru-cache';
import type { Store } from '../core/ports.js';
import { KeyedLock } from './keyed-lock.js';

export interface KeyvStoreOptions {
  /** Most records the read cache keeps. Default 100 000. */
  cacheEntries?: number;
  /** Most characters of serialized records the read cache keeps. Default 64 Mi (~128 MiB). */
  cacheCharacters?: number;
}

/** The indexes `[start, end)` an append-only list holds, stored at `<list>#meta`. */
interface ListBounds {
  start: number;
  end: number;
}

/** A cached record, decoded once and frozen, with the size of its serialized form. */
interface CacheEntry {
  /** `undefined` remembers that the backend holds no record. */
  value: unknown;
  size: number;
}
const missing: CacheEntry = Object.freeze({ value: undefined, size: 1 });
/** Keys per backend read or delete; also bounds the SQLite adapter's O(n²) matching. */
const batchSize = 500;

/**
 * The service's `Store` over any keyv adapter (SQLite, Redis, PostgreSQL).
 *
 * Reads go through a bounded LRU cache that is written through on every `set` and `delete`,
 * and remembers absent keys too, so hot records (a conversation's last messages, list bounds)
 * cost no I/O. That is only correct because one process is the single writer of the store:
 * a write made by another process stays invisible here until the entry is evicted.
 *
 * The cache holds each record decoded once, exactly as a backend read returns it, and deeply
 * frozen: reads hand out the same object without copying or parsing (decoding on every read
 * cost more than the rest of a conversation read), and a caller that tries to change a record
 * in place fails loudly instead of corrupting the cache. Its memory is bounded by the size of
 * the serialized records.
 */
export class KeyvStore implements Store {
  readonly #keyv: Keyv;
  readonly #serialize: NonNullable<Keyv['serialize']>;
  readonly #deserialize: NonNullable<Keyv['deserialize']>;
  readonly #cache: LRUCache<string, CacheEntry>;
  /** Callers' locks, list locks and per-key write order are separate so their names never clash. */
  readonly #locks = new KeyedLock();
  readonly #listLocks = new KeyedLock();
  readonly #writeLocks = new KeyedLock();
  /**
   * Backend reads in flight, one token per key. A write removes the key's token, so a read that
   * began before the write cannot put the old value in the cache after it.
   */
  readonly #reads = new Map<string, symbol>();
  readonly #background = new Set<Promise<void>>();
  #closed = false;

  constructor(keyv: Keyv, options: KeyvStoreOptions = {}) {
    const { serialize, deserialize } = keyv;
    if (serialize === undefined || deserialize === undefined) {
      throw new TypeError('KeyvStore needs a Keyv with serialize and deserialize functions.');
    }
    this.#keyv = keyv;
    this.#serialize = serialize;
    this.#deserialize = deserialize;
    this.#cache = new LRUCache<string, CacheEntry>({
      max: options.cacheEntries ?? 100_000,
      maxSize: options.cacheCharacters ?? 64 * 1024 * 1024,
      sizeCalculation: (entry, key) => entry.size + key.length + 1,
    });
  }

  async get<T>(key: string): Promise<T | undefined> {
    const [value] = await this.getMany<T>([key]);
    return value;
  }

  async getMany<T>(keys: readonly string[]): Promise<Array<T | undefined>> {
    const values = new Array<T | undefined>(keys.length);
    const uncached = new Map<string, number[]>();
    for (const [position, key] of keys.entries()) {
      const entry = this.#cache.get(key);
      if (entry !== undefined) values[position] = entry.value as T | undefined;
      else uncached.set(key, [...(uncached.get(key) ?? []), position]);
    }
    const pending = [...uncached.keys()];
    for (let offset = 0; offset < pending.length; offset += batchSize) {
      const batch = pending.slice(offset, offset + batchSize);
      const loaded = await this.#load<T>(batch);
      for (const [index, key] of batch.entries()) {
        for (const position of uncached.get(key) ?? []) values[position] = loaded[index];
      }
    }
    return values;
  }

  async set<T>(key: string, value: T): Promise<void> {
    await this.#setInOrder([{ key, value }]);
  }

  async delete(key: string): Promise<void> {
    await this.#write([{ key, entry: missing }], async () => {
      await this.#keyv.delete(key);
    });
  }

  withLock<T>(name: string, task: () => Promise<T>): Promise<T> {
    return this.#locks.run(name, task);
  }

  /**
   * Writes the item and the new bounds in one batch, atomic on all three backends. Were it
   * not, they are written item first: a crash between leaves an item past `end` that the
   * next append overwrites, never bounds that point at a missing item.
   */
  append<T>(list: string, build: (index: number) => T | Promise<T>): Promise<T> {
    return this.#listLocks.run(list, async () => {
      const { start, end } = await this.bounds(list);
      const item = await build(end);
      const bounds: ListBounds = { start, end: end + 1 };
      await this.#setInOrder([
        { key: itemKey(list, end), value: item },
        { key: boundsKey(list), value: bounds },
      ]);
      return item;
    });
  }

  async range<T>(list: string, start?: number, end?: number): Promise<T[]> {
    const bounds = await this.bounds(list);
    // Rounding both up keeps exactly the integers i with start <= i < end.
    const from = Math.max(bounds.start, Math.ceil(start ?? bounds.start));
    const to = Math.min(bounds.end, Math.ceil(end ?? bounds.end));
    if (!(from < to)) return [];
    const keys = Array.from({ length: to - from }, (_, offset) => itemKey(list, from + offset));
    const items = await this.getMany<T>(keys);
    // An item inside the bounds is written with or before them; a gap means the backend lost
    // data (e.g. Redis without persistence), and dropping it beats returning holes typed as T.
    return items.filter((item): item is T => item !== undefined);
  }

  async bounds(list: string): Promise<{ start: number; end: number }> {
    return (await this.get<ListBounds>(boundsKey(list))) ?? { start: 0, end: 0 };
  }

  /**
   * Moves `start` to `end` under the list lock, which is all correctness needs; the old items
   * are deleted afterwards in batches, in the background (`close` waits for it).
   */
  async clear(list: string): Promise<void> {
    const dropped = await this.#listLocks.run(list, async () => {
      const bounds = await this.bounds(list);
      if (bounds.start === bounds.end) return undefined;
      await this.set<ListBounds>(boundsKey(list), { start: bounds.end, end: bounds.end });
      return bounds;
    });
    if (dropped === undefined) return;
    const deletion = this.#deleteItems(list, dropped)
      .catch((error: unknown) => {
        // Leftover items are unreachable and harmless; report through the adapter's error channel.
        this.#keyv.emit('error', error);
      })
      .finally(() => this.#background.delete(deletion));
    this.#background.add(deletion);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.allSettled([...this.#background]);
    this.#cache.clear();
    await this.#keyv.disconnect();
  }

  /**
   * Sets records in one atomic batch when the adapter has `setMany` (our SQLite adapter,
   * PostgreSQL, Redis MULTI); otherwise one by one, in order.
   */
  async #setInOrder(entries: Array<{ key: string; value: unknown }>): Promise<void> {
    const cached = await Promise.all(entries.map(async ({ key, value }) => ({ key, entry: await this.#entry(value) })));
    const [only] = entries;
    await this.#write(cached, async () => {
      if (only !== undefined && entries.length === 1) await this.#keyv.set(only.key, only.value);
      else if (typeof this.#keyv.store.setMany === 'function') await this.#keyv.setMany(entries);
      else for (const { key, value } of entries) await this.#keyv.set(key, value);
    });
  }

  /** Runs a backend write in call order per key, then records its outcome in the cache. */
  async #write(entries: Array<{ key: string; entry: CacheEntry }>, write: () => Promise<void>): Promise<void> {
    // Postgres runs queries on several connections, so two unordered writes to one key could
    // land in either order and leave the cache disagreeing with the table. Keys are locked in
    // sorted order so two multi-key writes cannot wait on each other.
    const keys = entries.map((entry) => entry.key).sort();
    const locked = keys.reduceRight<() => Promise<void>>(
      (inner, key) => () => this.#writeLocks.run(key, inner),
      async () => {
        for (const key of keys) this.#reads.delete(key);
        try {
          await write();
        } finally {
          for (const key of keys) {
            this.#reads.delete(key);
            // Deleted first: lru-cache refuses an entry larger than maxSize and keeps the old one.
            this.#cache.delete(key);
          }
        }
        for (const { key, entry } of entries) this.#cache.set(key, entry);
      },
    );
    await locked();
  }

  /** Reads keys from the backend and caches the answers unless a write overtook the read. */
  async #load<T>(keys: string[]): Promise<Array<T | undefined>> {
    const tokens = keys.map((key) => {
      const token = Symbol(key);
      this.#reads.set(key, token);
      return token;
    });
    try {
      const [first] = keys;
      const values: Array<T | undefined> =
        keys.length === 1 && first !== undefined ? [await this.#keyv.get<T>(first)] : await this.#keyv.getMany<T>(keys);
      const entries = await Promise.all(
        values.map(async (value) => (value === undefined ? missing : { value: deepFreeze(value), size: (await this.#serialize({ value })).length })),
      );
      // No await from the token check to the cache write, so no write can slip in between.
      for (const [index, key] of keys.entries()) {
        const entry = entries[index];
        if (entry !== undefined && this.#reads.get(key) === tokens[index]) this.#cache.set(key, entry);
      }
      return entries.map((entry) => entry.value as T | undefined);
    } finally {
      for (const [index, key] of keys.entries()) {
        if (this.#reads.get(key) === tokens[index]) this.#reads.delete(key);
      }
    }
  }

  /**
   * What a backend read would return for `value` (serialized and decoded once, so types that do
   * not survive the round trip are cached as they come back), frozen.
   */
  async #entry(value: unknown): Promise<CacheEntry> {
    const text = await this.#serialize({ value });
    const decoded = await this.#deserialize<unknown>(text);
    return { value: deepFreeze(decoded?.value), size: text.length };
  }

  async #deleteItems(list: string, { start, end }: ListBounds): Promise<void> {
    for (let from = start; from < end; from += batchSize) {
      const to = Math.min(end, from + batchSize);
      const keys = Array.from({ length: to - from }, (_, offset) => itemKey(list, from + offset));
      await this.#keyv.delete(keys);
      for (const key of keys) {
        this.#reads.delete(key);
        this.#cache.delete(key);
      }
    }
  }
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const member of Object.values(value)) deepFreeze(member);
  }
  return value;
}

function boundsKey(list: string): string {
  return `${list}#meta`;
}

function itemKey(list: string, index: number): string {
  return `${list}#${index}`;
}
