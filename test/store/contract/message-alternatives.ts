import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import type { MessageAlternative, RepositoryStore } from '../../../src/core/repositories.js';
import { messageRecord } from '../repository-fixtures.js';
import { type ContractContext, outcomes } from './contract-context.js';

/** A character message's alternatives (swipes): none lost, the choice always within them, only on the newest reply. */
export function messageAlternativesContract(context: ContractContext): void {
  let store: RepositoryStore;
  let other: RepositoryStore;
  beforeEach(() => {
    store = context.store();
    other = context.other();
  });

  const alternative = (content: string): MessageAlternative => ({ id: randomUUID(), content, createdMicros: Date.now() * 1000 });

  /** A conversation with a person's message and a character's reply to it. */
  const conversationWithReply = async () => {
    const { account, character } = await context.createAccount('swiper');
    const now = Date.now() * 1000;
    const conversation = await store.conversations.create(
      { id: randomUUID(), accountId: account.id, characterId: character.id, createdMicros: now, updatedMicros: now, summary: null, summaryThroughPosition: null },
      account.id,
    );
    const question = await store.conversations.append(conversation.id, messageRecord(account.id, 'question'));
    const reply = await store.conversations.append(conversation.id, { ...messageRecord(character.id, 'answer 0'), participantType: 'character' });
    return { account, character, conversation, question, reply };
  };

  describe('message alternatives', () => {
    it('lists a message alone as its one alternative, under its own id', async () => {
      const { conversation, reply } = await conversationWithReply();
      const [, read] = await other.conversations.messages(conversation.id);
      expect(read).toMatchObject({ id: reply.id, chosenIndex: 0, alternatives: [{ id: reply.id, content: 'answer 0' }] });
    });

    it('adds alternatives and chooses among them; reads from any store go on from the chosen one', async () => {
      const { conversation, reply } = await conversationWithReply();
      const first = alternative('answer 1');
      await store.conversations.addAlternative(conversation.id, reply.id, first);
      const added = await other.conversations.addAlternative(conversation.id, reply.id, { ...alternative('answer 2'), finishReason: 'length' });
      expect(added).toMatchObject({ content: 'answer 2', finishReason: 'length', chosenIndex: 2 });
      expect(added.alternatives.map((each) => each.id)).toEqual([reply.id, first.id, added.alternatives[2]!.id]);
      const chosen = await store.conversations.chooseAlternative(conversation.id, reply.id, 1);
      expect(chosen).toMatchObject({ content: 'answer 1', chosenIndex: 1 });
      expect(chosen.finishReason).toBeUndefined();
      expect((await other.conversations.lastMessage(conversation.id))?.content).toBe('answer 1');
      const snapshot = await other.conversations.snapshot(conversation.id);
      expect(snapshot.newestRevision).toBe('3:1');
      expect(snapshot.messages[1]!.alternatives.map((each) => each.content)).toEqual(['answer 0', 'answer 1', 'answer 2']);
    });

    it('appends a message with several alternatives at once (a greeting and its alternates)', async () => {
      const { character, conversation } = await conversationWithReply();
      const alternatives = [alternative('Hello.'), alternative('Good evening.'), alternative('Oh, you again.')];
      const greeting = await store.conversations.append(conversation.id, {
        ...messageRecord(character.id, 'ignored: the chosen alternative is the text'),
        id: alternatives[0]!.id,
        participantType: 'character',
        alternatives,
        chosenIndex: 1,
      });
      expect(greeting).toMatchObject({ content: 'Good evening.', chosenIndex: 1 });
      expect(await other.conversations.lastMessage(conversation.id)).toEqual(greeting);
    });

    it('refuses an index out of range, an unknown message, and any message but the newest reply', async () => {
      const { account, conversation, question, reply } = await conversationWithReply();
      await store.conversations.addAlternative(conversation.id, reply.id, alternative('answer 1'));
      const refused = await outcomes([
        store.conversations.chooseAlternative(conversation.id, reply.id, 2),
        store.conversations.chooseAlternative(conversation.id, reply.id, -1),
        store.conversations.chooseAlternative(conversation.id, reply.id, 0.5),
        store.conversations.chooseAlternative(conversation.id, randomUUID(), 0),
        store.conversations.chooseAlternative(randomUUID(), reply.id, 0),
        store.conversations.chooseAlternative(conversation.id, question.id, 0),
        store.conversations.addAlternative(conversation.id, question.id, alternative('a person is not rewritten')),
      ]);
      expect(refused.codes).toEqual(['VALIDATION_FAILED', 'VALIDATION_FAILED', 'VALIDATION_FAILED', 'NOT_FOUND', 'NOT_FOUND', 'NOT_NEWEST_REPLY', 'NOT_NEWEST_REPLY']);
      await store.conversations.append(conversation.id, messageRecord(account.id, 'and then?'));
      const later = await outcomes([
        other.conversations.chooseAlternative(conversation.id, reply.id, 0),
        other.conversations.addAlternative(conversation.id, reply.id, alternative('too late')),
      ]);
      expect(later.codes).toEqual(['NOT_NEWEST_REPLY', 'NOT_NEWEST_REPLY']);
      expect((await store.conversations.messages(conversation.id))[1]).toMatchObject({ content: 'answer 1', chosenIndex: 1 });
    });

    it('loses no alternative and never chooses out of range when stores add and swipe at once', async () => {
      const { conversation, reply } = await conversationWithReply();
      const work = Array.from({ length: 24 }, (_, index) => {
        const each = index % 2 ? other : store;
        return index % 3 === 2 ? each.conversations.chooseAlternative(conversation.id, reply.id, 0) : each.conversations.addAlternative(conversation.id, reply.id, alternative(`answer ${index + 1}`));
      });
      const settled = await outcomes(work);
      expect(settled.codes).toEqual([]);
      const [, read] = await store.conversations.messages(conversation.id);
      // The first alternative, and one for every addition: each stored once, at its own index.
      expect(read!.alternatives).toHaveLength(1 + 16);
      expect(new Set(read!.alternatives.map((each) => each.content)).size).toBe(17);
      expect(read!.chosenIndex).toBeGreaterThanOrEqual(0);
      expect(read!.chosenIndex).toBeLessThan(17);
      expect(read!.content).toBe(read!.alternatives[read!.chosenIndex]!.content);
    });

    it('waits for an append in flight in another store, then refuses: the reply is no longer the newest', async () => {
      const { account, character, conversation, reply } = await conversationWithReply();
      const attempts = [
        (messageId: string) => other.conversations.addAlternative(conversation.id, messageId, alternative('too late')),
        (messageId: string) => other.conversations.chooseAlternative(conversation.id, messageId, 0),
      ];
      let newest = reply.id;
      for (const attempt of attempts) {
        await store.conversations.addAlternative(conversation.id, newest, alternative('answer 1'));
        let release!: () => void;
        const released = new Promise<void>((resolve) => (release = resolve));
        let inserted!: () => void;
        const inFlight = new Promise<void>((resolve) => (inserted = resolve));
        // A process that has inserted a person's message and not yet committed it.
        const append = store.transaction(async (repositories) => {
          await repositories.conversations.append(conversation.id, messageRecord(account.id, 'meanwhile'));
          inserted();
          await released;
        });
        await inFlight;
        const refused = outcomes([attempt(newest)]);
        // Long enough for the attempt to reach its check while the message is uncommitted.
        await new Promise((resolve) => setTimeout(resolve, 150));
        release();
        await append;
        expect((await refused).codes).toEqual(['NOT_NEWEST_REPLY']);
        const reread = (await other.conversations.messages(conversation.id)).find((message) => message.id === newest);
        expect(reread).toMatchObject({ content: 'answer 1', chosenIndex: 1 });
        expect(reread!.alternatives).toHaveLength(2);
        newest = (await store.conversations.append(conversation.id, { ...messageRecord(character.id, 'answer 0'), participantType: 'character' })).id;
      }
    });

    it('never adds or chooses an alternative once a later message is stored, racing appends from another store', async () => {
      const { account, character, conversation, reply } = await conversationWithReply();
      let newest = reply.id;
      for (let round = 0; round < 8; round += 1) {
        await store.conversations.addAlternative(conversation.id, newest, alternative(`round ${round} spare`));
        // What the reply was once the person's message was stored: nothing may change it after.
        const appendThenRead = (async () => {
          await store.conversations.append(conversation.id, messageRecord(account.id, `round ${round}`));
          return (await store.conversations.messages(conversation.id)).find((message) => message.id === newest)!;
        })();
        const racing = Array.from({ length: 6 }, (_, index) =>
          index % 2 ? other.conversations.chooseAlternative(conversation.id, newest, 0) : other.conversations.addAlternative(conversation.id, newest, alternative(`round ${round} racer ${index}`)),
        );
        const [seen, settled] = await Promise.all([appendThenRead, outcomes(racing)]);
        expect(settled.codes.every((code) => code === 'NOT_NEWEST_REPLY')).toBe(true);
        const final = (await other.conversations.messages(conversation.id)).find((message) => message.id === newest)!;
        expect({ count: final.alternatives.length, chosen: final.chosenIndex }).toEqual({ count: seen.alternatives.length, chosen: seen.chosenIndex });
        const next = await store.conversations.append(conversation.id, { ...messageRecord(character.id, `answer ${round}`), participantType: 'character' });
        newest = next.id;
      }
    });

    it('clears alternatives with their messages', async () => {
      const { conversation, reply } = await conversationWithReply();
      await store.conversations.addAlternative(conversation.id, reply.id, alternative('answer 1'));
      await store.conversations.clear(conversation.id, Date.now() * 1000);
      expect(await other.conversations.messages(conversation.id)).toEqual([]);
    });
  });
}
