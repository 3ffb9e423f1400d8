import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import type { RepositoryStore } from '../../../src/core/repositories.js';
import { learnedMemoryRecord } from '../repository-fixtures.js';
import type { ContractContext } from './contract-context.js';

/** The queue of messages to learn from (consecutive ranges, one holder per batch) and the daily spending limit. */
export function memoryBatchesContract(context: ContractContext): void {
  const { createAccount } = context;
  let store: RepositoryStore;
  let other: RepositoryStore;
  beforeEach(() => {
    store = context.store();
    other = context.other();
  });

  const openConversation = async () => {
    const { account, character } = await createAccount('learner');
    const conversation = await store.conversations.create(
      { id: randomUUID(), accountId: account.id, characterId: character.id, createdMicros: 1, updatedMicros: 1, summary: null, summaryThroughPosition: null },
      account.id,
    );
    return { conversationId: conversation.id, characterId: character.id, accountId: account.id };
  };
  const batch = (runAfterMillis = 0) => ({ id: randomUUID(), createdMicros: Date.now() * 1000, runAfterMillis });
  /** Batches of earlier tests stay in the one queue; finish them so each test sees its own. */
  const drainQueue = async () => {
    for (;;) {
      const claimed = await store.memoryBatches.claim({ workerId: 'drain', nowMillis: 4_000_000_000_000, leaseMs: 1 });
      if (!claimed) return;
      await store.memoryBatches.complete(claimed.id, 'drain');
    }
  };

  describe('memory batches', () => {
    it('queues consecutive ranges per conversation, and nothing when nothing is new', async () => {
      const { conversationId } = await openConversation();
      const { conversationId: neighbourId } = await openConversation();
      const first = await store.memoryBatches.enqueue(conversationId, 40, batch(5));
      expect(first).toMatchObject({ conversationId, fromPosition: 1, throughPosition: 40, status: 'queued', attempts: 0, runAfterMillis: 5, leaseOwner: null, lastError: null });
      expect(await other.memoryBatches.get(first!.id)).toEqual(first);
      expect(await other.memoryBatches.enqueue(conversationId, 55, batch())).toMatchObject({ fromPosition: 41, throughPosition: 55 });
      expect(await store.memoryBatches.enqueue(conversationId, 55, batch())).toBeUndefined();
      expect(await store.memoryBatches.enqueue(conversationId, 50, batch())).toBeUndefined();
      expect(await store.memoryBatches.enqueue(neighbourId, 0, batch())).toBeUndefined();
      expect(await store.memoryBatches.enqueue(neighbourId, 50, batch())).toMatchObject({ fromPosition: 1, throughPosition: 50 });
      expect(await store.memoryBatches.get(randomUUID())).toBeUndefined();
    });

    it('makes one batch of concurrent enqueues of the same messages, and never overlapping ones', async () => {
      const { conversationId } = await openConversation();
      const made = await Promise.all(Array.from({ length: 8 }, (_, index) => (index % 2 ? other : store).memoryBatches.enqueue(conversationId, 30, batch())));
      expect(made.filter((each) => each !== undefined)).toHaveLength(1);
      // Each asks for more: whichever order they run in, the ranges made follow each other.
      const next = await Promise.all(Array.from({ length: 8 }, (_, index) => (index % 2 ? other : store).memoryBatches.enqueue(conversationId, 31 + index, batch())));
      const queued = next.filter((each) => each !== undefined).sort((left, right) => left.fromPosition - right.fromPosition);
      expect(queued.length).toBeGreaterThan(0);
      let expectedFrom = 31;
      for (const each of queued) {
        expect(each.fromPosition).toBe(expectedFrom);
        expect(each.throughPosition).toBeGreaterThanOrEqual(each.fromPosition);
        expectedFrom = each.throughPosition + 1;
      }
      expect(expectedFrom).toBeLessThanOrEqual(39);
    });

    it('claims due batches by due time then age, each by one of many concurrent claimers', async () => {
      await drainQueue();
      const now = Date.now();
      const conversations = await Promise.all([1, 2, 3, 4].map(() => openConversation()));
      const later = (await store.memoryBatches.enqueue(conversations[0]!.conversationId, 10, batch(now - 1_000)))!;
      const sooner = (await store.memoryBatches.enqueue(conversations[1]!.conversationId, 10, batch(now - 2_000)))!;
      const sameTime = (await store.memoryBatches.enqueue(conversations[2]!.conversationId, 10, batch(now - 1_000)))!;
      const notYet = (await store.memoryBatches.enqueue(conversations[3]!.conversationId, 10, batch(now + 60_000)))!;

      const claims = await Promise.all(
        Array.from({ length: 10 }, (_, index) => (index % 2 ? other : store).memoryBatches.claim({ workerId: `worker-${index}`, nowMillis: now, leaseMs: 30_000 })),
      );
      const claimed = claims.filter((claim) => claim !== undefined);
      expect(claimed.map((claim) => claim.id).sort()).toEqual([later.id, sooner.id, sameTime.id].sort());
      expect(new Set(claimed.map((claim) => claim.leaseOwner)).size).toBe(3);
      for (const claim of claimed) expect(claim).toMatchObject({ status: 'running', attempts: 1, leaseUntilMillis: now + 30_000 });
      expect(await store.memoryBatches.get(notYet.id)).toMatchObject({ status: 'queued', leaseOwner: null });

      // One claimer at a time sees the order: by due time, then by age.
      await drainQueue();
      const first = (await store.memoryBatches.enqueue(conversations[0]!.conversationId, 20, batch(now - 1_000)))!;
      const second = (await store.memoryBatches.enqueue(conversations[1]!.conversationId, 20, batch(now - 1_000)))!;
      const earliest = (await store.memoryBatches.enqueue(conversations[2]!.conversationId, 20, batch(now - 5_000)))!;
      const order = [];
      for (let index = 0; index < 3; index++) order.push((await other.memoryBatches.claim({ workerId: 'one', nowMillis: now, leaseMs: 30_000 }))?.id);
      expect(order).toEqual([earliest.id, first.id, second.id]);
      expect(await other.memoryBatches.claim({ workerId: 'one', nowMillis: now, leaseMs: 30_000 })).toBeUndefined();
    });

    it("learns a conversation's batches in order: none is claimed while an earlier one is unfinished", async () => {
      await drainQueue();
      const { conversationId } = await openConversation();
      const first = await store.memoryBatches.enqueue(conversationId, 10, batch(0));
      const second = await store.memoryBatches.enqueue(conversationId, 20, batch(0));
      const claimed = await store.memoryBatches.claim({ workerId: 'a', nowMillis: 1_000, leaseMs: 60_000 });
      expect(claimed?.id).toBe(first!.id);
      // The second waits for the first, even with another worker free.
      expect(await other.memoryBatches.claim({ workerId: 'b', nowMillis: 1_000, leaseMs: 60_000 })).toBeUndefined();
      // A retried first still comes before it.
      await store.memoryBatches.retry(first!.id, 'a', 2_000, 'engine down');
      expect(await other.memoryBatches.claim({ workerId: 'b', nowMillis: 1_500, leaseMs: 60_000 })).toBeUndefined();
      const again = await other.memoryBatches.claim({ workerId: 'b', nowMillis: 2_000, leaseMs: 60_000 });
      expect(again?.id).toBe(first!.id);
      await other.memoryBatches.complete(first!.id, 'b');
      expect((await store.memoryBatches.claim({ workerId: 'a', nowMillis: 2_000, leaseMs: 60_000 }))?.id).toBe(second!.id);
      await store.memoryBatches.complete(second!.id, 'a');
    });

    it('completes or retries only under a lease still held, and lets an expired lease be taken over', async () => {
      await drainQueue();
      const now = Date.now();
      const { conversationId } = await openConversation();
      const queued = (await store.memoryBatches.enqueue(conversationId, 10, batch(now)))!;
      const held = (await store.memoryBatches.claim({ workerId: 'first', nowMillis: now, leaseMs: 1_000 }))!;
      expect(held.id).toBe(queued.id);
      // Held and not run out: nobody else gets it.
      expect(await other.memoryBatches.claim({ workerId: 'second', nowMillis: now + 1_000, leaseMs: 1_000 })).toBeUndefined();
      expect(await other.memoryBatches.complete(held.id, 'second')).toBe(false);
      expect(await other.memoryBatches.retry(held.id, 'second', now, 'not mine')).toBe(false);

      // The first worker fails; the batch waits until its new due time, attempts counted.
      expect(await store.memoryBatches.retry(held.id, 'first', now + 5_000, 'The chat model timed out.')).toBe(true);
      expect(await other.memoryBatches.get(held.id)).toMatchObject({ status: 'queued', attempts: 1, runAfterMillis: now + 5_000, leaseOwner: null, leaseUntilMillis: null, lastError: 'The chat model timed out.' });
      expect(await store.memoryBatches.retry(held.id, 'first', now, 'again')).toBe(false);
      expect(await other.memoryBatches.claim({ workerId: 'second', nowMillis: now + 4_999, leaseMs: 1_000 })).toBeUndefined();
      const retried = (await other.memoryBatches.claim({ workerId: 'second', nowMillis: now + 5_000, leaseMs: 1_000 }))!;
      expect(retried).toMatchObject({ id: held.id, attempts: 2, leaseOwner: 'second' });

      // Its worker stalls past the lease: a third takes it over, and the stalled one's word counts no more.
      expect(await store.memoryBatches.claim({ workerId: 'third', nowMillis: now + 6_000, leaseMs: 1_000 })).toBeUndefined();
      const takenOver = (await store.memoryBatches.claim({ workerId: 'third', nowMillis: now + 6_001, leaseMs: 1_000 }))!;
      expect(takenOver).toMatchObject({ id: held.id, attempts: 3, leaseOwner: 'third', leaseUntilMillis: now + 7_001 });
      expect(await other.memoryBatches.complete(held.id, 'second')).toBe(false);
      expect(await store.memoryBatches.complete(held.id, 'third')).toBe(true);
      expect(await other.memoryBatches.get(held.id)).toMatchObject({ status: 'done', leaseOwner: null, leaseUntilMillis: null });
      expect(await store.memoryBatches.complete(held.id, 'third')).toBe(false);
      // Done is done, however late the clock.
      expect(await store.memoryBatches.claim({ workerId: 'late', nowMillis: 4_000_000_000_000, leaseMs: 1 })).toBeUndefined();
    });

    it('renews a lease only for the worker that still holds it, before it runs out', async () => {
      await drainQueue();
      const now = Date.now();
      const { conversationId } = await openConversation();
      const queued = (await store.memoryBatches.enqueue(conversationId, 10, batch(now)))!;
      await store.memoryBatches.claim({ workerId: 'first', nowMillis: now, leaseMs: 1_000 });
      expect(await other.memoryBatches.renew(queued.id, 'second', now + 500, 1_000)).toBe(false);
      expect(await other.memoryBatches.renew(queued.id, 'first', now + 900, 1_000)).toBe(true);
      // Renewed: past the first lease's end, nobody takes it over.
      expect(await other.memoryBatches.claim({ workerId: 'second', nowMillis: now + 1_500, leaseMs: 1_000 })).toBeUndefined();
      // Run out: too late to renew, and another worker takes it.
      expect(await store.memoryBatches.renew(queued.id, 'first', now + 1_900, 1_000)).toBe(false);
      expect(await other.memoryBatches.claim({ workerId: 'second', nowMillis: now + 2_000, leaseMs: 1_000 })).toMatchObject({ id: queued.id, leaseOwner: 'second' });
      await other.memoryBatches.complete(queued.id, 'second');
    });

    it("records each character's part of a batch done once, under the lease, with that part's facts in one transaction", async () => {
      await drainQueue();
      const now = Date.now();
      const { conversationId, characterId, accountId } = await openConversation();
      const { characterId: secondCharacterId } = await openConversation();
      const queued = (await store.memoryBatches.enqueue(conversationId, 10, batch(now)))!;
      await store.memoryBatches.claim({ workerId: 'first', nowMillis: now, leaseMs: 1_000 });
      expect(await store.memoryBatches.doneCharacters(queued.id)).toEqual([]);
      expect(await store.memoryBatches.finishCharacter(queued.id, characterId, 'first', now + 10, 1)).toBe(true);
      expect(await other.memoryBatches.finishCharacter(queued.id, characterId, 'first', now + 20, 2)).toBe(false);
      expect(await other.memoryBatches.finishCharacter(queued.id, secondCharacterId, 'second', now + 20, 2)).toBe(false);
      expect(await other.memoryBatches.doneCharacters(queued.id)).toEqual([characterId]);

      // A worker whose lease ran out stores nothing of its part, however its transaction began.
      const lateFact = learnedMemoryRecord(secondCharacterId, accountId, 'Stored by a worker that lost its lease.');
      await expect(
        store.transaction(async (repositories) => {
          await repositories.learnedMemories.add(lateFact);
          if (!(await repositories.memoryBatches.finishCharacter(queued.id, secondCharacterId, 'first', now + 1_000, 3))) throw new Error('lease lost');
        }),
      ).rejects.toThrow('lease lost');
      expect(await other.learnedMemories.get(lateFact.id)).toBeUndefined();

      // Taken over: the new holder's retry sees the first part done and finishes the second.
      const retried = (await other.memoryBatches.claim({ workerId: 'second', nowMillis: now + 1_001, leaseMs: 1_000 }))!;
      expect(retried.id).toBe(queued.id);
      expect(await other.memoryBatches.doneCharacters(queued.id)).toEqual([characterId]);
      const fact = learnedMemoryRecord(secondCharacterId, accountId, 'Stored with its part.');
      await other.transaction(async (repositories) => {
        expect(await repositories.memoryBatches.finishCharacter(queued.id, secondCharacterId, 'second', now + 1_100, 4)).toBe(true);
        await repositories.learnedMemories.add(fact);
      });
      expect(await store.learnedMemories.get(fact.id)).toMatchObject({ text: 'Stored with its part.' });
      expect((await store.memoryBatches.doneCharacters(queued.id)).sort()).toEqual([characterId, secondCharacterId].sort());
      await other.memoryBatches.complete(queued.id, 'second');
    });

    it('lets no worker take over a batch while its holder is storing a part: it finds the part done after', async () => {
      await drainQueue();
      const now = Date.now();
      const { conversationId, characterId, accountId } = await openConversation();
      const queued = (await store.memoryBatches.enqueue(conversationId, 10, batch(now)))!;
      await store.memoryBatches.claim({ workerId: 'first', nowMillis: now, leaseMs: 1_000 });
      let release = () => {};
      const gate = new Promise<void>((resolve) => (release = resolve));
      let finished = () => {};
      const finishedPart = new Promise<void>((resolve) => (finished = resolve));
      const fact = learnedMemoryRecord(characterId, accountId, 'Stored while another worker waited.');
      const storing = store.transaction(async (repositories) => {
        expect(await repositories.memoryBatches.finishCharacter(queued.id, characterId, 'first', now + 900, 1)).toBe(true);
        await repositories.learnedMemories.add(fact);
        finished();
        await gate;
      });
      await finishedPart;
      // The lease runs out meanwhile by the other worker's clock: it waits (SQLite) or passes over the row (PostgreSQL).
      const takeover = other.memoryBatches.claim({ workerId: 'second', nowMillis: now + 2_000, leaseMs: 1_000 });
      await new Promise((resolve) => setTimeout(resolve, 50));
      release();
      await storing;
      const taken = (await takeover) ?? (await other.memoryBatches.claim({ workerId: 'second', nowMillis: now + 2_000, leaseMs: 1_000 }));
      expect(taken).toMatchObject({ id: queued.id, leaseOwner: 'second' });
      expect(await other.memoryBatches.doneCharacters(queued.id)).toEqual([characterId]);
      expect(await other.learnedMemories.get(fact.id)).toMatchObject({ text: 'Stored while another worker waited.' });
      await other.memoryBatches.complete(queued.id, 'second');
    });

    it("prunes old done batches but each conversation's newest, so the next batch still starts after it", async () => {
      await drainQueue();
      const { conversationId } = await openConversation();
      const { conversationId: loneId } = await openConversation();
      const old = { id: '', createdMicros: 1_000, runAfterMillis: 0 };
      const first = (await store.memoryBatches.enqueue(conversationId, 10, { ...old, id: randomUUID() }))!;
      const second = (await store.memoryBatches.enqueue(conversationId, 20, { ...old, id: randomUUID() }))!;
      const lone = (await store.memoryBatches.enqueue(loneId, 5, { ...old, id: randomUUID() }))!;
      const recent = (await store.memoryBatches.enqueue(loneId, 9, { id: randomUUID(), createdMicros: 9_000, runAfterMillis: 0 }))!;
      const unfinished = (await store.memoryBatches.enqueue(conversationId, 30, { ...old, id: randomUUID() }))!;
      for (const each of [first, second, lone, recent]) {
        const claimed = (await store.memoryBatches.claim({ workerId: 'w', nowMillis: 1, leaseMs: 1_000 }))!;
        expect(claimed.id).toBe(each.id);
        await store.memoryBatches.complete(each.id, 'w');
      }
      expect(await other.memoryBatches.pruneDone(5_000)).toBe(3);
      // Done and old with a later one: gone. The unfinished one, and the newest done one, stay.
      expect(await store.memoryBatches.get(first.id)).toBeUndefined();
      expect(await store.memoryBatches.get(second.id)).toBeUndefined();
      expect(await store.memoryBatches.get(lone.id)).toBeUndefined();
      expect(await store.memoryBatches.get(unfinished.id)).toMatchObject({ status: 'queued' });
      expect(await store.memoryBatches.get(recent.id)).toMatchObject({ status: 'done' });
      // The conversation whose batches are all done goes on where it left off, not from its first message.
      await store.memoryBatches.pruneDone(10_000);
      expect(await store.memoryBatches.get(recent.id)).toMatchObject({ status: 'done' });
      expect(await store.memoryBatches.enqueue(loneId, 12, batch())).toMatchObject({ fromPosition: 10, throughPosition: 12 });
      expect(await store.memoryBatches.enqueue(conversationId, 35, batch())).toMatchObject({ fromPosition: 31 });
    });

    it('keeps which messages nothing is learned from, until they are deleted', async () => {
      const { conversationId, accountId } = await openConversation();
      const append = async () => (await store.conversations.append(conversationId, { id: randomUUID(), content: 'hi', mimeType: 'text/plain', participantId: accountId, participantType: 'account', createdMicros: 1, file: null })).id;
      const [kept, said] = [await append(), await append()];
      await store.memoryBatches.markUnlearned(kept);
      await other.memoryBatches.markUnlearned(kept);
      expect(await other.memoryBatches.unlearned([kept, said, randomUUID()])).toEqual(new Set([kept]));
      expect(await other.memoryBatches.unlearned([])).toEqual(new Set());
      await store.conversations.clear(conversationId, 2);
      expect(await other.memoryBatches.unlearned([kept])).toEqual(new Set());
    });

    it('keeps which characters learn nothing from a message, apart from the messages nothing is learned from', async () => {
      const { conversationId, accountId, characterId } = await openConversation();
      const append = async () => (await store.conversations.append(conversationId, { id: randomUUID(), content: 'hi', mimeType: 'text/plain', participantId: accountId, participantType: 'account', createdMicros: 1, file: null })).id;
      const [some, none] = [await append(), await append()];
      await store.memoryBatches.markUnlearned(some, [characterId, 'another-character', characterId]);
      await other.memoryBatches.markUnlearned(some, [characterId]);
      await store.memoryBatches.markUnlearned(none, []);
      expect(await other.memoryBatches.unlearnedBy([some, none, randomUUID()])).toEqual(new Map([[some, new Set([characterId, 'another-character'])]]));
      expect(await other.memoryBatches.unlearned([some, none])).toEqual(new Set());
      await store.conversations.clear(conversationId, 2);
      expect(await other.memoryBatches.unlearnedBy([some])).toEqual(new Map());
    });

    it('spends tokens per character and day only within the limit, across concurrent spenders', async () => {
      const { characterId } = await openConversation();
      const { characterId: otherCharacterId } = await openConversation();
      expect(await store.memoryBatches.spend(characterId, '2026-11-26', 600, 1_000)).toBe(true);
      expect(await other.memoryBatches.spend(characterId, '2026-11-26', 401, 1_000)).toBe(false);
      expect(await other.memoryBatches.spend(characterId, '2026-11-26', 400, 1_000)).toBe(true);
      expect(await store.memoryBatches.spend(characterId, '2026-11-26', 1, 1_000)).toBe(false);
      expect(await store.memoryBatches.spend(characterId, '2026-11-26', 0, 1_000)).toBe(true);
      // Another day or another character starts from nothing; a first spend is held to the limit too.
      expect(await store.memoryBatches.spend(characterId, '2026-11-27', 1_001, 1_000)).toBe(false);
      expect(await store.memoryBatches.spend(characterId, '2026-11-27', 1_000, 1_000)).toBe(true);

      const spends = await Promise.all(
        Array.from({ length: 20 }, (_, index) => (index % 2 ? other : store).memoryBatches.spend(otherCharacterId, '2026-11-26', 10, 100)),
      );
      expect(spends.filter(Boolean)).toHaveLength(10);
      expect(await store.memoryBatches.spend(otherCharacterId, '2026-11-26', 1, 100)).toBe(false);
    });
  });
}
