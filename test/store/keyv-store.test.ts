import Keyv, { type KeyvStoreAdapter } from 'keyv';
import { describe, expect, it } from 'vitest';
import { KeyvStore } from '../../src/store/keyv-store.js';

/**
 * Keyv's in-memory storage with counted reads and a gate that holds reads back, so tests can
 * see which reads reach the backend and interleave a write with a read in flight. (The
 * contract suite covers the real backends; this covers the cache in front of them.)
 */
class GatedStorage {
  readonly records = new Map<string, unknown>();
  reads = 0;
  gate: Promise<void> | undefined;

  async get(key: string): Promise<unknown> {
    this.reads += 1;
    const value = this.records.get(key); // taken before waiting: the read's snapshot
    await this.gate;
    return value;
  }
  async getMany(keys: string[]): Promise<unknown[]> {
    this.reads += 1;
    const values = keys.map((key) => this.records.get(key));
    await this.gate;
    return values;
  }
  async set(key: string, value: unknown): Promise<void> {
    this.records.set(key, value);
  }
  async delete(key: string): Promise<boolean> {
    return this.records.delete(key);
  }
  async clear(): Promise<void> {
    this.records.clear();
  }
}

function storeOver(storage: GatedStorage, cacheEntries?: number): KeyvStore {
  const keyv = new Keyv(storage as unknown as KeyvStoreAdapter, { throwOnErrors: true });
  return new KeyvStore(keyv, { cacheEntries });
}

describe('KeyvStore read cache', () => {
  it('serves hot records and list bounds without reading the backend', async () => {
    const storage = new GatedStorage();
    const store = storeOver(storage);
    for (let count = 0; count < 100; count += 1) await store.append('messages', (index) => ({ index }));
    storage.reads = 0;
    expect(await store.range('messages')).toHaveLength(100);
    expect(await store.get('messages#meta')).toEqual({ start: 0, end: 100 });
    expect(storage.reads).toBe(0);

    const cold = storeOver(storage);
    expect(await cold.range('messages')).toHaveLength(100);
    expect(storage.reads).toBe(2); // the bounds, then one getMany for the items
    expect(await cold.range('messages')).toHaveLength(100);
    expect(storage.reads).toBe(2);
  });

  it('remembers missing keys, yet shows a later set', async () => {
    const storage = new GatedStorage();
    const store = storeOver(storage);
    expect(await store.get('absent')).toBeUndefined();
    expect(await store.get('absent')).toBeUndefined();
    expect(storage.reads).toBe(1);
    await store.set('absent', 'present');
    expect(await store.get('absent')).toBe('present');
    await store.delete('absent');
    expect(await store.get('absent')).toBeUndefined();
    expect(storage.reads).toBe(1);
  });

  it('does not cache what a read saw when a write finished while the read was in flight', async () => {
    const storage = new GatedStorage();
    const store = storeOver(storage);
    let open!: () => void;
    storage.gate = new Promise((resolve) => {
      open = resolve;
    });
    const slowRead = store.get('key'); // sees "missing", then waits
    const slowMany = store.getMany(['other', 'key']);
    await store.set('key', 'written');
    open();
    expect(await slowRead).toBeUndefined(); // it began before the write: either answer is fair
    expect(await slowMany).toEqual([undefined, undefined]);
    expect(await store.get('key')).toBe('written'); // but the stale answer was not cached
  });

  it('keeps getMany in key order across batches, cached and not', async () => {
    const storage = new GatedStorage();
    const store = storeOver(storage);
    const keys = Array.from({ length: 1_200 }, (_, index) => `key ${index}`);
    for (const [index, key] of keys.entries()) if (index % 3 !== 0) await store.set(key, index);
    const expected = keys.map((_, index) => (index % 3 === 0 ? undefined : index));
    const reversed = [...keys].reverse();
    expect(await storeOver(storage).getMany(reversed)).toEqual([...expected].reverse());
    expect(await store.getMany(reversed)).toEqual([...expected].reverse());
  });

  it('stays exact when the cache holds fewer entries than a list', async () => {
    const storage = new GatedStorage();
    const store = storeOver(storage, 2);
    for (let count = 0; count < 20; count += 1) await store.append('list', (index) => index);
    expect(await store.range('list', 5, 9)).toEqual([5, 6, 7, 8]);
  });

  it('deletes cleared items in the background and waits for that on close', async () => {
    const storage = new GatedStorage();
    const store = storeOver(storage);
    for (let count = 0; count < 1_100; count += 1) await store.append('list', (index) => index);
    await store.clear('list');
    expect(await store.bounds('list')).toEqual({ start: 1_100, end: 1_100 });
    await store.close();
    expect([...storage.records.keys()]).toEqual(['keyv:list#meta']);
  });
});
