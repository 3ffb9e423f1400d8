import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LorebookCache } from '../../../src/core/lorebook/lorebook-cache.js';
import type { RepositoryStore } from '../../../src/core/repositories.js';
import { openSqlStore } from '../../../src/store/sql/sql-store.js';
import { lorebookEntry } from '../../store/contract/many-characters.js';
import { newAccountRecords, uniqueUsername } from '../../store/repository-fixtures.js';

describe('the lorebook a prompt reads, kept per revision', () => {
  let directory: string;
  let mine: RepositoryStore;
  let theirs: RepositoryStore;
  beforeAll(async () => {
    directory = await mkdtemp(path.join(os.tmpdir(), 'likeness-lorebook-cache-'));
    const url = `sqlite://${path.join(directory, 'store.db')}`;
    mine = await openSqlStore(url);
    theirs = await openSqlStore(url);
  });
  afterAll(async () => {
    await mine.close();
    await theirs.close();
    await rm(directory, { recursive: true, force: true });
  });

  it('reads the book once while the character row says nothing changed, and again after any process writes it', async () => {
    const records = newAccountRecords(uniqueUsername('cached'));
    await mine.accounts.create(records);
    const id = records.character.id;
    await mine.lorebooks.addEntry(id, lorebookEntry({ keys: ['first'] }), 10);
    let reads = 0;
    const counting = { ...mine, lorebooks: { ...mine.lorebooks, get: (characterId: string) => ((reads += 1), mine.lorebooks.get(characterId)) } } as RepositoryStore;
    const cache = new LorebookCache(counting);

    const first = await cache.of((await mine.characters.get(id))!);
    expect(first.entries.map((entry) => entry.keys)).toEqual([['first']]);
    await cache.of((await mine.characters.get(id))!);
    expect(reads).toBe(1);

    // Another process adds an entry: the row it moved makes this one read the book again.
    await theirs.lorebooks.addEntry(id, lorebookEntry({ keys: ['second'] }), 10);
    const second = await cache.of((await mine.characters.get(id))!);
    expect(second.entries.map((entry) => entry.keys)).toEqual([['first'], ['second']]);
    expect(reads).toBe(2);
  });
});
