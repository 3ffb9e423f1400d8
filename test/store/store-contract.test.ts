import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/core/ports.js';
import { createKeyv, openStore } from '../../src/store/create-keyv.js';
import type { KeyvStoreOptions } from '../../src/store/keyv-store.js';

/** One backend under test: `open` may be called many times, each giving a fresh store on the same data. */
interface StoreBackend {
  open(options?: KeyvStoreOptions): Promise<Store>;
  destroy(): Promise<void>;
}

interface Message {
  index: number;
  text: string;
}

/** The `Store` contract, run against every backend (keyv's own pattern: one suite, many adapters). */
function storeContract(name: string, createBackend: () => Promise<StoreBackend>): void {
  describe(`Store contract: ${name}`, () => {
    let backend: StoreBackend | undefined;
    let store: Store;
    let prefix: string;
    const opened: Store[] = [];
    const reopen = async (options?: KeyvStoreOptions): Promise<Store> => {
      const other = await backend!.open(options);
      opened.push(other);
      return other;
    };

    let unreachable: unknown;

    beforeAll(async () => {
      backend = await createBackend();
      // Probed once: an unreachable server fails every test at once with its reason (never
      // skips them), instead of each test waiting out the connect timeout.
      try {
        await (await backend.open()).close();
      } catch (error) {
        unreachable = error;
      }
    });
    afterAll(async () => {
      if (unreachable === undefined) await backend?.destroy();
    });
    beforeEach(async () => {
      if (unreachable !== undefined) throw unreachable;
      store = await reopen();
      prefix = `test-${randomUUID()}`;
    });
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((each) => each.close()));
    });

    it('gets, sets, overwrites and deletes records', async () => {
      const key = `${prefix}:record`;
      expect(await store.get(key)).toBeUndefined();
      await store.set(key, { name: 'Ada' });
      expect(await store.get(key)).toEqual({ name: 'Ada' });
      await store.set(key, { name: 'Grace' });
      expect(await store.get(key)).toEqual({ name: 'Grace' });
      await store.delete(key);
      expect(await store.get(key)).toBeUndefined();
      await store.delete(`${prefix}:never-set`);
    });

    it('returns getMany values in key order, with undefined for missing keys', async () => {
      await store.set(`${prefix}:a`, 1);
      await store.set(`${prefix}:b`, 2);
      await store.set(`${prefix}:c`, 3);
      const keys = ['c', 'missing', 'a', 'b', 'c'].map((key) => `${prefix}:${key}`);
      expect(await store.getMany(keys)).toEqual([3, undefined, 1, 2, 3]);
      // A fresh store answers from the backend alone.
      expect(await (await reopen()).getMany(keys)).toEqual([3, undefined, 1, 2, 3]);
      expect(await store.getMany([])).toEqual([]);
    });

    it('round-trips nested objects, unicode and numbers through the backend', async () => {
      const value = {
        text: 'Grüße, 世界 👋🏽 مرحبا e\u0301 "quoted" \\ back\nline',
        colon: ':leading colon',
        empty: '',
        numbers: [0, -1.5, 1e300, Number.MAX_SAFE_INTEGER, -0.000001],
        flags: { yes: true, no: false, nothing: null },
        deep: { list: [{ a: [1, { b: 'c' }] }], map: { 'key with spaces': 'ü' } },
      };
      await store.set(`${prefix}:value`, value);
      await store.set(`${prefix}:number`, 42.5);
      await store.set(`${prefix}:string`, '🙂');
      const fresh = await reopen();
      for (const reader of [store, fresh]) {
        expect(await reader.get(`${prefix}:value`)).toEqual(value);
        expect(await reader.get(`${prefix}:number`)).toBe(42.5);
        expect(await reader.get(`${prefix}:string`)).toBe('🙂');
      }
    });

    it('hands out frozen records: changing one read or one written in place cannot change the store', async () => {
      const written = { count: 1, nested: { items: [1] } };
      await store.set(`${prefix}:copy`, written);
      written.count = 42;
      written.nested.items.push(2);
      const read = await store.get<{ count: number; nested: { items: number[] } }>(`${prefix}:copy`);
      expect(read).toEqual({ count: 1, nested: { items: [1] } });
      expect(() => {
        read!.count = 99;
      }).toThrow(TypeError);
      expect(() => read!.nested.items.push(3)).toThrow(TypeError);
      expect(await store.get(`${prefix}:copy`)).toEqual({ count: 1, nested: { items: [1] } });
    });

    it('persists writes for a new store instance, including one made after a cached miss', async () => {
      const key = `${prefix}:persisted`;
      expect(await store.get(key)).toBeUndefined(); // cached as missing
      await store.set(key, { saved: true });
      expect(await store.get(key)).toEqual({ saved: true });
      await store.set(`${prefix}:deleted`, 'soon gone');
      await store.delete(`${prefix}:deleted`);
      await store.append(`${prefix}:list`, (index) => ({ index, text: 'hello' }));
      await store.close();
      const next = await reopen();
      expect(await next.get(key)).toEqual({ saved: true });
      expect(await next.get(`${prefix}:deleted`)).toBeUndefined();
      expect(await next.range(`${prefix}:list`)).toEqual([{ index: 0, text: 'hello' }]);
    });

    it('keeps working when another store on the same backend closes', async () => {
      const other = await reopen();
      await other.close();
      await store.set(`${prefix}:after`, 'still here');
      expect(await (await reopen()).get(`${prefix}:after`)).toBe('still here');
    });

    it('appends in order and hands build the index of the new item', async () => {
      const list = `${prefix}:messages`;
      const seen: number[] = [];
      for (const text of ['one', 'two', 'three']) {
        const item = await store.append<Message>(list, async (index) => {
          seen.push(index);
          return { index, text };
        });
        expect(item.text).toBe(text);
      }
      expect(seen).toEqual([0, 1, 2]);
      expect(await store.bounds(list)).toEqual({ start: 0, end: 3 });
      expect((await store.range<Message>(list)).map((item) => item.text)).toEqual(['one', 'two', 'three']);
    });

    it('loses and duplicates nothing under 200 concurrent appends to one list', async () => {
      const list = `${prefix}:busy`;
      const items = await Promise.all(
        Array.from({ length: 200 }, (_, call) => store.append<Message>(list, (index) => ({ index, text: `call ${call}` }))),
      );
      const indexes = items.map((item) => item.index).sort((left, right) => left - right);
      expect(indexes).toEqual(Array.from({ length: 200 }, (_, index) => index));
      for (const reader of [store, await reopen()]) {
        const stored = await reader.range<Message>(list);
        expect(stored.map((item) => item.index)).toEqual(indexes);
        expect(new Set(stored.map((item) => item.text)).size).toBe(200);
        expect(await reader.bounds(list)).toEqual({ start: 0, end: 200 });
      }
    });

    it('keeps concurrent appends to different lists apart', async () => {
      const lists = ['a', 'b', 'c', 'd', 'e'].map((name) => `${prefix}:${name}`);
      await Promise.all(
        Array.from({ length: 40 }).flatMap(() => lists.map((list) => store.append(list, (index) => ({ index, text: list })))),
      );
      for (const list of lists) {
        const stored = await store.range<Message>(list);
        expect(stored.map((item) => item.index)).toEqual(Array.from({ length: 40 }, (_, index) => index));
        expect(stored.every((item) => item.text === list)).toBe(true);
      }
    });

    it('serialises a read-modify-write under withLock: 100 concurrent increments make 100', async () => {
      const key = `${prefix}:counter`;
      await Promise.all(
        Array.from({ length: 100 }, () =>
          store.withLock(key, async () => {
            const count = (await store.get<number>(key)) ?? 0;
            await store.set(key, count + 1);
          }),
        ),
      );
      expect(await store.get(key)).toBe(100);
      expect(await (await reopen()).get(key)).toBe(100);
    });

    it('lets a caller append while holding its own lock, and releases a lock whose task throws', async () => {
      const list = `${prefix}:locked`;
      const item = await store.withLock(`list:${list}`, () => store.append(list, (index) => ({ index, text: 'inside' })));
      expect(item).toEqual({ index: 0, text: 'inside' });
      await expect(store.withLock('failing', async () => Promise.reject(new Error('task failed')))).rejects.toThrow('task failed');
      expect(await store.withLock('failing', async () => 'next ran')).toBe('next ran');
    });

    it('clears a list and continues appending after its old end', async () => {
      const list = `${prefix}:cleared`;
      for (let count = 0; count < 3; count += 1) await store.append(list, (index) => ({ index, text: 'old' }));
      await store.clear(list);
      expect(await store.bounds(list)).toEqual({ start: 3, end: 3 });
      expect(await store.range(list)).toEqual([]);
      expect(await store.range(list, 0, 3)).toEqual([]);
      const next = await store.append<Message>(list, (index) => ({ index, text: 'new' }));
      expect(next.index).toBe(3);
      await store.clear(`${prefix}:never-used`);
      await store.close(); // waits for the background deletion of the old items
      const fresh = await reopen();
      expect(await fresh.range(list, 0, 10)).toEqual([{ index: 3, text: 'new' }]);
      expect(await fresh.bounds(list)).toEqual({ start: 3, end: 4 });
    });

    it('clamps range to the list bounds', async () => {
      const list = `${prefix}:ranged`;
      for (let count = 0; count < 10; count += 1) await store.append(list, (index) => index);
      expect(await store.range(list, 2, 5)).toEqual([2, 3, 4]);
      expect(await store.range(list, -5, 3)).toEqual([0, 1, 2]);
      expect(await store.range(list, 8, 100)).toEqual([8, 9]);
      expect(await store.range(list, 8)).toEqual([8, 9]);
      expect(await store.range(list, undefined, 2)).toEqual([0, 1]);
      expect(await store.range(list, 5, 5)).toEqual([]);
      expect(await store.range(list, 7, 3)).toEqual([]);
      expect(await store.range(list)).toHaveLength(10);
      expect(await store.range(`${prefix}:unknown`)).toEqual([]);
      expect(await store.bounds(`${prefix}:unknown`)).toEqual({ start: 0, end: 0 });
    });

    it('stays correct when the read cache is far smaller than the data', async () => {
      const small = await reopen({ cacheEntries: 3 });
      const list = `${prefix}:evicted`;
      for (let count = 0; count < 30; count += 1) await small.append(list, (index) => index);
      await small.set(`${prefix}:kept`, 'value');
      expect(await small.range(list)).toEqual(Array.from({ length: 30 }, (_, index) => index));
      expect(await small.get(`${prefix}:kept`)).toBe('value');
    });
  });
}

const connectTimeoutMs = 5_000;

storeContract('SQLite', async () => {
  const directory = await mkdtemp(path.join(os.tmpdir(), 'likeness-store-'));
  const storeUrl = `sqlite://${path.join(directory, 'nested', 'store.sqlite')}`;
  return {
    open: (options) => openStore(storeUrl, { ...options, connectTimeoutMs }),
    destroy: () => rm(directory, { recursive: true, force: true }),
  };
});

storeContract('Redis', async () => {
  // CI starts Redis; an unreachable server fails these tests (with the URL and the reason), never skips them.
  const storeUrl = 'redis://127.0.0.1:6379';
  const namespace = `likeness-test-${randomUUID()}`;
  return {
    open: (options) => openStore(storeUrl, { ...options, namespace, connectTimeoutMs }),
    async destroy() {
      const keyv = await createKeyv(storeUrl, { namespace, connectTimeoutMs });
      await keyv.clear(); // deletes `namespace::*` only
      await keyv.disconnect();
    },
  };
});

storeContract('PostgreSQL', async () => {
  // CI starts PostgreSQL; an unreachable server fails these tests, never skips them.
  const storeUrl = 'postgres://postgres@127.0.0.1:5432/test';
  const table = `store_test_${randomUUID().replaceAll('-', '')}`;
  return {
    open: (options) => openStore(storeUrl, { ...options, table, connectTimeoutMs }),
    async destroy() {
      const keyv = await createKeyv(storeUrl, { table, connectTimeoutMs });
      await (keyv.store as { query(sql: string): Promise<unknown> }).query(`DROP TABLE IF EXISTS ${table}`);
      await keyv.disconnect();
    },
  };
});
