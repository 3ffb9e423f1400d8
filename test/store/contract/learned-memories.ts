import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import type { RepositoryStore } from '../../../src/core/repositories.js';
import type { LearnedMemoryRecord } from '../../../src/core/records.js';
import { learnedMemoryRecord } from '../repository-fixtures.js';
import { type ContractContext, outcomes } from './contract-context.js';

/** Learned memories: each fact once (in the database), what may be used, supersession, forgetting for good. */
export function learnedMemoriesContract(context: ContractContext): void {
  const { createAccount } = context;
  let store: RepositoryStore;
  let other: RepositoryStore;
  beforeEach(() => {
    store = context.store();
    other = context.other();
  });

  /** A character (with its owner) and a person it talks with. */
  const characterAndPerson = async () => {
    const owner = await createAccount('knower');
    const person = await createAccount('known');
    return { characterId: owner.character.id, ownerId: owner.account.id, personId: person.account.id };
  };
  const ids = (memories: LearnedMemoryRecord[]) => memories.map((memory) => memory.id);

  describe('learned memories', () => {
    it('stores a fact once, whatever its case, spacing and end punctuation, and answers the one stored', async () => {
      const { characterId, personId } = await characterAndPerson();
      const first = await store.learnedMemories.add(learnedMemoryRecord(characterId, personId, 'Likes green tea.'));
      expect(first.created).toBe(true);
      const again = await other.learnedMemories.add(learnedMemoryRecord(characterId, personId, '  likes   GREEN\ttea!? '));
      expect(again).toEqual({ memory: first.memory, created: false });
      expect(await store.learnedMemories.get(first.memory.id)).toEqual(first.memory);
      // Another kind, another person or another character is another fact.
      const { characterId: otherCharacterId, personId: otherPersonId } = await characterAndPerson();
      for (const memory of [
        learnedMemoryRecord(characterId, personId, 'likes green tea', { kind: 'own', status: 'pending' }),
        learnedMemoryRecord(characterId, otherPersonId, 'likes green tea'),
        learnedMemoryRecord(otherCharacterId, personId, 'likes green tea'),
        learnedMemoryRecord(characterId, personId, 'likes green tea a lot'),
      ]) {
        expect((await store.learnedMemories.add(memory)).created).toBe(true);
      }
    });

    it('lets one of many concurrent adds of a fact create it, and answers every other with that one', async () => {
      const { characterId, personId } = await characterAndPerson();
      const added = await Promise.all(
        Array.from({ length: 12 }, (_, index) =>
          (index % 2 ? other : store).learnedMemories.add(learnedMemoryRecord(characterId, personId, index % 3 ? 'Has a dog named Rex.' : 'has a dog named rex')),
        ),
      );
      expect(added.filter((each) => each.created)).toHaveLength(1);
      expect(new Set(added.map((each) => each.memory.id)).size).toBe(1);
      expect(await store.learnedMemories.about(personId, { characterId })).toHaveLength(1);
    });

    it('is blocked by a rejected copy, never by a superseded one', async () => {
      const { characterId, ownerId, personId } = await characterAndPerson();
      const own = await store.learnedMemories.add(learnedMemoryRecord(characterId, ownerId, 'I grew up by the sea.', { kind: 'own', status: 'pending' }));
      expect(await store.learnedMemories.setStatus(own.memory.id, 'rejected', 2)).toBe(true);
      const proposedAgain = await other.learnedMemories.add(learnedMemoryRecord(characterId, ownerId, 'I grew up by the sea', { kind: 'own', status: 'pending' }));
      expect(proposedAgain.created).toBe(false);
      expect(proposedAgain.memory).toMatchObject({ id: own.memory.id, status: 'rejected' });

      const lives = await store.learnedMemories.add(learnedMemoryRecord(characterId, personId, 'Lives in Lyon.'));
      await store.learnedMemories.supersede(lives.memory.id, learnedMemoryRecord(characterId, personId, 'Lives in Paris.'), 3);
      const back = await other.learnedMemories.add(learnedMemoryRecord(characterId, personId, 'lives in lyon'));
      expect(back.created).toBe(true);
      expect(back.memory.id).not.toBe(lives.memory.id);
    });

    it('uses only active person memories, from the origins given, newest said first', async () => {
      const { characterId, ownerId, personId } = await characterAndPerson();
      const add = async (text: string, change: Partial<LearnedMemoryRecord>) =>
        (await store.learnedMemories.add(learnedMemoryRecord(characterId, personId, text, change))).memory;
      const privately = await add('Is a nurse.', { statedMicros: 10, origin: 'private' });
      const onServer = await add('Plays chess.', { statedMicros: 30, origin: 'server:guild-1' });
      const elsewhere = await add('Has two sisters.', { statedMicros: 20, origin: 'server:guild-2' });
      const replaced = await add('Is twenty.', { statedMicros: 5 });
      await store.learnedMemories.supersede(replaced.id, learnedMemoryRecord(characterId, personId, 'Is twenty-one.', { statedMicros: 1 }), 40);
      await store.learnedMemories.add(learnedMemoryRecord(characterId, ownerId, 'I am a nurse too.', { kind: 'own' }));
      const twentyOne = (await store.learnedMemories.about(personId)).find((memory) => memory.text === 'Is twenty-one.')!;

      expect(ids(await other.learnedMemories.usableAbout(characterId, personId))).toEqual([onServer.id, elsewhere.id, privately.id, twentyOne.id]);
      expect(ids(await other.learnedMemories.usableAbout(characterId, personId, ['private', 'server:guild-1']))).toEqual([onServer.id, privately.id, twentyOne.id]);
      expect(await other.learnedMemories.usableAbout(characterId, personId, ['conversation:none'])).toEqual([]);
      expect(await other.learnedMemories.usableAbout(characterId, personId, [])).toEqual([]);
      // The owner's words gave the character a memory of its own, not one about the owner.
      expect(await other.learnedMemories.usableAbout(characterId, ownerId)).toEqual([]);
      // What recall reads before each reply: the same memories, in the same order, with only what it needs.
      for (const origins of [undefined, ['private', 'server:guild-1'] as const, [] as const]) {
        const full = await other.learnedMemories.usableAbout(characterId, personId, origins);
        expect(await other.learnedMemories.recallable(characterId, personId, origins)).toEqual(
          full.map(({ id, subjectAccountId, text, importance, statedMicros, origin }) => ({ id, subjectAccountId, text, importance, statedMicros, origin })),
        );
      }
    });

    it('lists what every character, or one, learned about a person, and a character\'s own by status', async () => {
      const { characterId, ownerId, personId } = await characterAndPerson();
      const { characterId: secondCharacterId } = await characterAndPerson();
      const first = (await store.learnedMemories.add(learnedMemoryRecord(characterId, personId, 'Runs marathons.', { statedMicros: 10 }))).memory;
      const second = (await store.learnedMemories.add(learnedMemoryRecord(secondCharacterId, personId, 'Runs marathons.', { statedMicros: 20 }))).memory;
      const newer = await store.learnedMemories.supersede(first.id, learnedMemoryRecord(characterId, personId, 'Stopped running.', { statedMicros: 30 }), 31);
      const pending = (await store.learnedMemories.add(learnedMemoryRecord(characterId, ownerId, 'I fear heights.', { kind: 'own', status: 'pending', statedMicros: 40 }))).memory;
      const active = (await store.learnedMemories.add(learnedMemoryRecord(characterId, ownerId, 'I love rain.', { kind: 'own', statedMicros: 50 }))).memory;
      const rejected = (await store.learnedMemories.add(learnedMemoryRecord(characterId, ownerId, 'I hate cats.', { kind: 'own', status: 'rejected', statedMicros: 60 }))).memory;

      expect(ids(await other.learnedMemories.about(personId))).toEqual([newer.id, second.id, first.id]);
      expect(ids(await other.learnedMemories.about(personId, { characterId }))).toEqual([newer.id, first.id]);
      expect(ids(await other.learnedMemories.about(ownerId))).toEqual([]);
      expect(ids(await other.learnedMemories.own(characterId, ['pending']))).toEqual([pending.id]);
      expect(ids(await other.learnedMemories.own(characterId, ['active', 'pending', 'rejected']))).toEqual([rejected.id, active.id, pending.id]);
      expect(await other.learnedMemories.own(characterId, [])).toEqual([]);
      expect(await other.learnedMemories.own(secondCharacterId, ['active'])).toEqual([]);
    });

    it('supersedes once: the old memory kept with its time and successor, the replacement active', async () => {
      const { characterId, personId } = await characterAndPerson();
      const old = (await store.learnedMemories.add(learnedMemoryRecord(characterId, personId, 'Works at the bakery.', { messageIds: ['m-1', 'm-2'] }))).memory;
      const replacement = learnedMemoryRecord(characterId, personId, 'Works at the library.', { status: 'pending' });
      const stored = await store.learnedMemories.supersede(old.id, replacement, 777);
      expect(stored).toEqual({ ...replacement, status: 'active' });
      expect(await other.learnedMemories.get(old.id)).toEqual({ ...old, status: 'superseded', supersededMicros: 777, supersededBy: replacement.id, updatedMicros: 777 });
      expect(await other.learnedMemories.get(replacement.id)).toEqual(stored);

      const twice = await outcomes([other.learnedMemories.supersede(old.id, learnedMemoryRecord(characterId, personId, 'Works from home.'), 778)]);
      expect(twice.codes).toEqual(['NOT_FOUND']);
      const unknown = await outcomes([store.learnedMemories.supersede(randomUUID(), learnedMemoryRecord(characterId, personId, 'Is tall.'), 1)]);
      expect(unknown.codes).toEqual(['NOT_FOUND']);
      // Nothing of a refused supersession was kept.
      expect((await store.learnedMemories.about(personId)).map((memory) => memory.text).sort()).toEqual(['Works at the bakery.', 'Works at the library.']);
    });

    it('answers the fact already held when a replacement repeats it, and points the old memory there', async () => {
      const { characterId, personId } = await characterAndPerson();
      const held = (await store.learnedMemories.add(learnedMemoryRecord(characterId, personId, 'Owns a bicycle.'))).memory;
      const old = (await store.learnedMemories.add(learnedMemoryRecord(characterId, personId, 'Owns a car.'))).memory;
      const stored = await store.learnedMemories.supersede(old.id, learnedMemoryRecord(characterId, personId, 'owns a bicycle!'), 9);
      expect(stored).toEqual(held);
      expect(await store.learnedMemories.get(old.id)).toMatchObject({ status: 'superseded', supersededBy: held.id });
      expect(await store.learnedMemories.about(personId)).toHaveLength(2);
    });

    it('approves a proposed replacement: the approved memory it replaces superseded by it in the same step', async () => {
      const { characterId, ownerId } = await characterAndPerson();
      const own = (text: string, change: Partial<LearnedMemoryRecord> = {}) => learnedMemoryRecord(characterId, ownerId, text, { kind: 'own', status: 'pending', ...change });
      const cello = (await store.learnedMemories.add(own('I play the cello.'))).memory;
      expect(await other.learnedMemories.approve(cello.id, 10)).toMatchObject({ id: cello.id, status: 'active', updatedMicros: 10 });
      const violin = (await store.learnedMemories.add(own('I play the violin now.', { replaces: cello.id }))).memory;
      // Pending, it replaces nothing yet.
      expect(await other.learnedMemories.get(violin.id)).toMatchObject({ status: 'pending', replaces: cello.id });
      expect(await other.learnedMemories.get(cello.id)).toMatchObject({ status: 'active' });
      expect(await other.learnedMemories.approve(violin.id, 20)).toMatchObject({ id: violin.id, status: 'active', replaces: cello.id });
      expect(await store.learnedMemories.get(cello.id)).toMatchObject({ status: 'superseded', supersededMicros: 20, supersededBy: violin.id });
      expect(ids(await store.learnedMemories.own(characterId, ['active']))).toEqual([violin.id]);
      // A memory not there, or refused, is not approved.
      expect(await store.learnedMemories.approve(randomUUID(), 30)).toBeUndefined();
      const refused = (await store.learnedMemories.add(own('I hate music.', { replaces: violin.id }))).memory;
      await store.learnedMemories.setStatus(refused.id, 'rejected', 30);
      expect(await store.learnedMemories.approve(refused.id, 31)).toBeUndefined();
      expect(await store.learnedMemories.get(violin.id)).toMatchObject({ status: 'active' });
      // A replacement whose original was withdrawn meanwhile replaces nothing: the withdrawn one stays withdrawn.
      const piano = (await store.learnedMemories.add(own('I play the piano.', { replaces: violin.id }))).memory;
      await store.learnedMemories.setStatus(violin.id, 'rejected', 32);
      await store.learnedMemories.approve(piano.id, 33);
      expect(await store.learnedMemories.get(violin.id)).toMatchObject({ status: 'rejected', supersededBy: null });
    });

    it("keeps which memories a reply used until the reply, or the memory, is deleted", async () => {
      const { characterId, ownerId, personId } = await characterAndPerson();
      const conversation = await store.conversations.create(
        { id: randomUUID(), accountId: personId, characterId, createdMicros: 1, updatedMicros: 1, summary: null, summaryThroughPosition: null },
        personId,
      );
      const reply = async () =>
        (await store.conversations.append(conversation.id, { id: randomUUID(), content: 'Aye.', mimeType: 'text/plain', participantId: characterId, participantType: 'character', createdMicros: 2, file: null })).id;
      const learned = (await store.learnedMemories.add(learnedMemoryRecord(characterId, personId, 'Has a boat.'))).memory;
      const written = await store.memories.add(characterId, { id: randomUUID(), text: 'I am a captain.', createdMicros: 1 }, 100);
      const [first, second] = [await reply(), await reply()];
      await store.replyMemories.record(first, [learned.id, written.id, learned.id]);
      await other.replyMemories.record(second, [written.id, learned.id]);
      expect(await other.replyMemories.of(first)).toEqual([learned.id, written.id]);
      expect(await store.replyMemories.of(randomUUID())).toEqual([]);
      // A deleted memory is in no record any more, written or learned.
      await other.learnedMemories.deleteAbout(personId, { memoryId: learned.id });
      expect(await store.replyMemories.of(first)).toEqual([written.id]);
      expect(await store.memories.remove(characterId, written.id)).toBe(true);
      expect(await store.replyMemories.of(second)).toEqual([]);
      // A cleared conversation takes its replies' records along.
      const own = (await store.learnedMemories.add(learnedMemoryRecord(characterId, ownerId, 'I sail.', { kind: 'own' }))).memory;
      const third = await reply();
      await store.replyMemories.record(third, [own.id]);
      expect(await other.replyMemories.of(third)).toEqual([own.id]);
      await other.conversations.clear(conversation.id, 3);
      expect(await store.replyMemories.of(third)).toEqual([]);
    });

    it('sets a status, false for a memory not there, and refuses to revive a fact held again', async () => {
      const { characterId, ownerId, personId } = await characterAndPerson();
      const pending = (await store.learnedMemories.add(learnedMemoryRecord(characterId, ownerId, 'I paint.', { kind: 'own', status: 'pending' }))).memory;
      expect(await other.learnedMemories.setStatus(pending.id, 'active', 5)).toBe(true);
      expect(await store.learnedMemories.get(pending.id)).toEqual({ ...pending, status: 'active', updatedMicros: 5 });
      expect(await other.learnedMemories.setStatus(randomUUID(), 'active', 5)).toBe(false);

      const old = (await store.learnedMemories.add(learnedMemoryRecord(characterId, personId, 'Is single.'))).memory;
      await store.learnedMemories.supersede(old.id, learnedMemoryRecord(characterId, personId, 'Is married.'), 6);
      await store.learnedMemories.add(learnedMemoryRecord(characterId, personId, 'Is single.'));
      expect((await outcomes([store.learnedMemories.setStatus(old.id, 'active', 7)])).codes).toEqual(['CONFLICT']);
    });

    it('deletes for good one memory with those it replaced, a character\'s, or all about a person', async () => {
      const { characterId, ownerId, personId } = await characterAndPerson();
      const { characterId: secondCharacterId } = await characterAndPerson();
      const { personId: bystanderId } = await characterAndPerson();
      const add = async (character: string, person: string, text: string) => (await store.learnedMemories.add(learnedMemoryRecord(character, person, text))).memory;
      const oldest = await add(characterId, personId, 'Is 30.');
      const middle = await store.learnedMemories.supersede(oldest.id, learnedMemoryRecord(characterId, personId, 'Is 31.'), 2);
      const newest = await store.learnedMemories.supersede(middle.id, learnedMemoryRecord(characterId, personId, 'Is 32.'), 3);
      const kept = await add(characterId, personId, 'Likes jazz.');
      const bystander = await add(characterId, bystanderId, 'Likes jazz.');
      const own = (await store.learnedMemories.add(learnedMemoryRecord(characterId, ownerId, 'I like jazz.', { kind: 'own' }))).memory;

      // Only about this person: another's memory id removes nothing.
      expect(await other.learnedMemories.deleteAbout(personId, { memoryId: bystander.id })).toBe(0);
      expect(await other.learnedMemories.deleteAbout(personId, { memoryId: newest.id })).toBe(3);
      for (const gone of [oldest, middle, newest]) expect(await store.learnedMemories.get(gone.id)).toBeUndefined();
      expect(ids(await store.learnedMemories.about(personId))).toEqual([kept.id]);
      // The fact may be learned afresh: nothing of it is left.
      expect((await store.learnedMemories.add(learnedMemoryRecord(characterId, personId, 'Is 30.'))).created).toBe(true);

      const second = await add(secondCharacterId, personId, 'Likes jazz.');
      const superseded = await add(secondCharacterId, personId, 'Likes blues.');
      await store.learnedMemories.supersede(superseded.id, learnedMemoryRecord(secondCharacterId, personId, 'Likes soul.'), 4);
      expect(await other.learnedMemories.deleteAbout(personId, { characterId: secondCharacterId })).toBe(3);
      expect(await store.learnedMemories.get(second.id)).toBeUndefined();
      expect(await store.learnedMemories.get(superseded.id)).toBeUndefined();
      expect(await store.learnedMemories.about(personId)).toHaveLength(2);

      expect(await other.learnedMemories.deleteAbout(personId)).toBe(2);
      expect(await store.learnedMemories.about(personId)).toEqual([]);
      expect(await store.learnedMemories.get(kept.id)).toBeUndefined();
      // Others' memories and the character's own stay.
      expect(await store.learnedMemories.get(bystander.id)).toEqual(bystander);
      expect(await store.learnedMemories.get(own.id)).toEqual(own);
    });
  });
}
