import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { type LorebookEntry, defaultLorebookEntry, defaultLorebookSettings } from '../../../src/core/lorebook/lorebook.js';
import type { RepositoryStore } from '../../../src/core/repositories.js';
import { characterRecord, learnedMemoryRecord } from '../repository-fixtures.js';
import { type ContractContext, outcomes } from './contract-context.js';

export function lorebookEntry(change: Partial<LorebookEntry> = {}): LorebookEntry {
  return { ...defaultLorebookEntry, id: randomUUID(), keys: ['castle'], content: 'The castle stands on a hill.', ...change };
}

/** Many characters per account (a limit held by the database), paging, deletion, lorebooks. */
export function manyCharactersContract(context: ContractContext): void {
  const { createAccount } = context;
  let store: RepositoryStore;
  let other: RepositoryStore;
  beforeEach(() => {
    store = context.store();
    other = context.other();
  });

  describe('many characters', () => {
    it('never lets concurrent creations from two processes pass the limit', async () => {
      const { account } = await createAccount('caster');
      // The account's own character counts: 4 more fit under a limit of 5.
      const { values, codes } = await outcomes(
        Array.from({ length: 10 }, (_, index) =>
          (index % 2 ? other : store).characters.createWithin(characterRecord(account.id, `Cast ${index}`), 5),
        ),
      );
      expect(values).toHaveLength(4);
      expect(codes).toEqual(Array(6).fill('CHARACTER_LIMIT_REACHED'));
    });

    it('pages the caller own characters, then public ones of others by name, skipping deleted ones', async () => {
      const { account } = await createAccount('pager');
      const { account: stranger } = await createAccount('stranger');
      const tag = randomUUID().slice(0, 8);
      for (const name of ['b', 'a', 'c', 'd']) await store.characters.create(characterRecord(account.id, `${tag} mine ${name}`));
      for (const name of ['y', 'x']) await store.characters.create(characterRecord(stranger.id, `${tag} theirs ${name}`, { isPublic: true }));
      await store.characters.create(characterRecord(stranger.id, `${tag} private`));
      const gone = await store.characters.create(characterRecord(stranger.id, `${tag} gone`, { isPublic: true }));
      await store.characters.purge(gone.id, Date.now() * 1000);

      const names: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await (pages % 2 ? other : store).characters.list({ accountId: account.id, publicQuery: tag, limit: 2, ...(cursor ? { cursor } : {}) });
        names.push(...page.characters.map((character) => character.name));
        cursor = page.nextCursor ?? undefined;
        pages += 1;
      } while (cursor && pages < 10);
      expect(names).toEqual([`${tag} mine a`, `${tag} mine b`, `${tag} mine c`, `${tag} mine d`, `${tag} theirs x`, `${tag} theirs y`]);
      expect(pages).toBe(3);

      const own = await store.characters.list({ accountId: account.id, limit: 50 });
      expect(own.characters.map((character) => character.name)).toContain(`${tag} mine a`);
      expect(own.characters.every((character) => character.accountId === account.id)).toBe(true);
      expect(own.nextCursor).toBeNull();
      await expect(store.characters.list({ accountId: account.id, limit: 2, cursor: 'bm90IG91cnM' })).rejects.toMatchObject({ code: 'VALIDATION_FAILED' });
    });

    it('holds a character read in a transaction: a change from another process waits until it ends', async () => {
      const { account } = await createAccount('holder');
      const character = await store.characters.create(characterRecord(account.id, 'Held', { isPublic: true }));
      const order: string[] = [];
      let changed: Promise<unknown> | undefined;
      await store.transaction(async (repositories) => {
        expect(await repositories.characters.hold(character.id)).toMatchObject({ id: character.id, isPublic: true });
        expect(await repositories.characters.hold(randomUUID())).toBeUndefined();
        changed = other.transaction(async (each) => {
          const current = await each.characters.get(character.id);
          await each.characters.update({ ...current!, isPublic: false });
        }).then(() => order.push('changed'));
        // Work of the holding transaction that comes well after the change was asked for.
        for (let index = 0; index < 20; index++) await repositories.characters.get(character.id);
        order.push('held');
      });
      await changed;
      expect(order).toEqual(['held', 'changed']);
      expect((await store.characters.get(character.id))?.isPublic).toBe(false);
    });

    it('purges what belongs to a character and keeps its name, marked deleted', async () => {
      const { account } = await createAccount('deleter');
      const { account: person } = await createAccount('told');
      const character = await store.characters.create(
        characterRecord(account.id, 'Doomed', { description: 'secret', avatar: { key: 'doomed.png', mimeType: 'image/png' }, ttsVoiceId: 'v1' }),
      );
      await store.memories.add(character.id, { id: randomUUID(), text: 'I remember', createdMicros: 1 }, 10);
      await store.learnedMemories.add(learnedMemoryRecord(character.id, person.id, 'Likes tea.'));
      await store.lorebooks.addEntry(character.id, lorebookEntry(), 10);
      const keys = await other.characters.purge(character.id, 42);
      expect(keys).toEqual(['doomed.png']);
      const read = await store.characters.get(character.id);
      expect(read).toMatchObject({ name: 'Doomed', description: '', avatar: null, ttsVoiceId: null, isPublic: false, deletedMicros: 42 });
      expect(await store.memories.list(character.id)).toEqual([]);
      expect(await store.learnedMemories.about(person.id)).toEqual([]);
      expect((await store.lorebooks.get(character.id)).entries).toEqual([]);
      expect(await store.characters.search('doomed', { accountId: account.id, limit: 10 })).toEqual([]);
    });
  });

  describe('lorebooks', () => {
    it('keeps settings and entries in order, changes and removes entries, and replaces a whole book', async () => {
      const { character } = await createAccount('lorist');
      expect(await store.lorebooks.get(character.id)).toEqual({ settings: defaultLorebookSettings, entries: [] });
      const first = await store.lorebooks.addEntry(character.id, lorebookEntry({ keys: ['/dra(g|k)on/i'], extensionsJson: '{"x": 1}' }), 3);
      const second = await other.lorebooks.addEntry(character.id, lorebookEntry({ keys: ['sea'] }), 3);
      await store.lorebooks.setSettings(character.id, { ...defaultLorebookSettings, scanDepth: 4, name: 'World' });
      expect(await other.lorebooks.get(character.id)).toEqual({ settings: { ...defaultLorebookSettings, scanDepth: 4, name: 'World' }, entries: [first, second] });
      await store.lorebooks.updateEntry(character.id, { ...first, content: 'Dragons sleep.' });
      expect(await store.lorebooks.removeEntry(character.id, second.id)).toBe(true);
      expect(await store.lorebooks.removeEntry(character.id, second.id)).toBe(false);
      expect((await store.lorebooks.get(character.id)).entries).toEqual([{ ...first, content: 'Dragons sleep.' }]);
      await expect(store.lorebooks.updateEntry(character.id, second)).rejects.toMatchObject({ code: 'NOT_FOUND' });

      // Every write moved the revision the prompt's cache keys on (add, add, settings, change, remove); a change of the character keeps it.
      const revision = async () => (await other.characters.get(character.id))!.lorebookRevision;
      expect(await revision()).toBe(5);
      expect(await store.lorebooks.removeEntry(character.id, randomUUID())).toBe(false);
      await store.characters.update({ ...(await store.characters.get(character.id))!, description: 'keeps the revision', lorebookRevision: 0 });
      expect(await revision()).toBe(5);
      const entries = ['one', 'two', 'three'].map((key) => lorebookEntry({ keys: [key] }));
      await store.lorebooks.replace(character.id, { settings: { ...defaultLorebookSettings, recursiveScanning: true }, entries });
      expect(await other.lorebooks.get(character.id)).toEqual({ settings: { ...defaultLorebookSettings, recursiveScanning: true }, entries });
      expect(await revision()).toBe(6);
      // A card's book is written a hundred entries a statement: the order holds across them.
      const book = Array.from({ length: 250 }, (_, index) => lorebookEntry({ keys: [`key ${index}`] }));
      await store.lorebooks.replace(character.id, { settings: defaultLorebookSettings, entries: book });
      expect((await other.lorebooks.get(character.id)).entries).toEqual(book);
    });

    it('never lets concurrent additions pass the entry limit', async () => {
      const { character } = await createAccount('crowded');
      const { values, codes } = await outcomes(
        Array.from({ length: 8 }, (_, index) => (index % 2 ? other : store).lorebooks.addEntry(character.id, lorebookEntry(), 5)),
      );
      expect(values).toHaveLength(5);
      expect(codes).toEqual(['CONFLICT', 'CONFLICT', 'CONFLICT']);
    });
  });
}
