import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import type { RepositoryStore } from '../../../src/core/repositories.js';
import { jobRecord, newAccountRecords, transactionRecord, uniqueUsername } from '../repository-fixtures.js';
import type { ContractContext } from './contract-context.js';

/** Jobs (claims, leases, settling), face models, transactions, signals, Discord links, deliveries and facts. */
export function jobsAndTheRestContract(context: ContractContext): void {
  const { createAccount } = context;
  // The stores are opened in the suite's beforeAll; read them when a test runs.
  let store: RepositoryStore;
  let other: RepositoryStore;
  beforeEach(() => {
    store = context.store();
    other = context.other();
  });

  describe('jobs', () => {
    const types = ['IMAGE_INFERENCE', 'FACE_MODEL_TRAINING'] as const;
    /** Jobs of earlier tests stay unsettled in the queue; settle them so each test sees its own. */
    const drainQueue = async () => {
      for (;;) {
        const claimed = await store.jobs.claim({ workerId: 'drain', types, nowMillis: 4_000_000_000_000, leaseMs: 1 });
        if (!claimed) return;
        await store.jobs.transition(claimed.job.id, { id: randomUUID(), status: 'CANCELED', createdMillis: Date.now() });
        await store.jobs.settle(claimed.job.id);
      }
    };

    it('gives each job to exactly one of many concurrent claimers', async () => {
      await drainQueue();
      const { account } = await createAccount('jobs');
      const jobs = [];
      for (let index = 0; index < 5; index++) jobs.push(await store.jobs.create(jobRecord(account.id)));
      const now = Date.now();
      const claims = await Promise.all(
        Array.from({ length: 20 }, (_, index) =>
          (index % 2 ? other : store).jobs.claim({ workerId: `worker-${index}`, types, nowMillis: now, leaseMs: 60_000 }),
        ),
      );
      const claimed = claims.filter((claim) => claim !== undefined);
      expect(claimed.map((claim) => claim.job.id).sort()).toEqual(jobs.map((job) => job.id).sort());
      expect(new Set(claimed.map((claim) => claim.leaseOwner)).size).toBe(5);
      expect(await store.jobs.claim({ workerId: 'late', types, nowMillis: now, leaseMs: 60_000 })).toBeUndefined();
    });

    it('holds a type\'s limit over all claimers together, and frees a place when a lease ends', async () => {
      await drainQueue();
      const { account } = await createAccount('limits');
      const jobs = [];
      for (let index = 0; index < 5; index++) jobs.push(await store.jobs.create(jobRecord(account.id)));
      const training = await store.jobs.create(jobRecord(account.id, 'FACE_MODEL_TRAINING'));
      const now = Date.now();
      const limits = { IMAGE_INFERENCE: 2, FACE_MODEL_TRAINING: 1 };
      const claims = await Promise.all(
        Array.from({ length: 12 }, (_, index) =>
          (index % 2 ? other : store).jobs.claim({ workerId: `worker-${index}`, types: ['IMAGE_INFERENCE'], nowMillis: now, leaseMs: 60_000, limits }),
        ),
      );
      const claimed = claims.filter((claim) => claim !== undefined);
      expect(claimed).toHaveLength(2);
      // Another type has its own limit.
      expect((await other.jobs.claim({ workerId: 'trainer', types, nowMillis: now, leaseMs: 60_000, limits }))?.job.id).toBe(training.id);
      expect(await store.jobs.claim({ workerId: 'trainer-2', types, nowMillis: now, leaseMs: 60_000, limits })).toBeUndefined();
      // A released lease and an expired one each free a place.
      await store.jobs.releaseLease(claimed[0]!.job.id, claimed[0]!.leaseOwner);
      expect(await other.jobs.claim({ workerId: 'next', types: ['IMAGE_INFERENCE'], nowMillis: now, leaseMs: 60_000, limits })).toBeDefined();
      expect(await other.jobs.claim({ workerId: 'next-2', types: ['IMAGE_INFERENCE'], nowMillis: now, leaseMs: 60_000, limits })).toBeUndefined();
      expect(await store.jobs.claim({ workerId: 'later', types: ['IMAGE_INFERENCE'], nowMillis: now + 61_000, leaseMs: 60_000, limits })).toBeDefined();
      // Without limits, the rest go at once.
      const rest = await Promise.all([1, 2, 3].map((index) => store.jobs.claim({ workerId: `free-${index}`, types: ['IMAGE_INFERENCE'], nowMillis: now + 61_000, leaseMs: 60_000 })));
      expect(rest.filter((claim) => claim !== undefined).length).toBeGreaterThan(0);
    });

    it('counts jobs by type and status, and those waiting for a worker', async () => {
      await drainQueue();
      const before = await other.jobs.census();
      const { account } = await createAccount('census');
      await store.jobs.create(jobRecord(account.id));
      await store.jobs.create(jobRecord(account.id));
      await store.jobs.create(jobRecord(account.id, 'FACE_MODEL_TRAINING'));
      const claimed = await store.jobs.claim({ workerId: 'census', types: ['FACE_MODEL_TRAINING'], nowMillis: Date.now(), leaseMs: 60_000 });
      expect(claimed).toBeDefined();
      const after = await other.jobs.census();
      const count = (census: typeof after, type: string) => census.counts.filter((row) => row.type === type && row.status === 'CREATED').reduce((sum, row) => sum + row.count, 0);
      expect(count(after, 'IMAGE_INFERENCE') - count(before, 'IMAGE_INFERENCE')).toBe(2);
      expect(count(after, 'FACE_MODEL_TRAINING') - count(before, 'FACE_MODEL_TRAINING')).toBe(1);
      expect(after.waiting - before.waiting).toBe(2);
    });

    it('hands a job over when its lease expires, and the old holder can no longer renew it', async () => {
      await drainQueue();
      const { account } = await createAccount('lease');
      const job = await store.jobs.create(jobRecord(account.id, 'FACE_MODEL_TRAINING'));
      const start = Date.now();
      const first = await store.jobs.claim({ workerId: 'dies', types: ['FACE_MODEL_TRAINING'], nowMillis: start, leaseMs: 1_000 });
      expect(first).toMatchObject({ job: { id: job.id }, claims: 1, leaseExpiresMillis: start + 1_000 });
      expect(await other.jobs.claim({ workerId: 'survivor', types: ['IMAGE_INFERENCE'], nowMillis: start + 5_000, leaseMs: 1_000 })).toBeUndefined();
      expect(await other.jobs.claim({ workerId: 'survivor', types: ['FACE_MODEL_TRAINING'], nowMillis: start + 999, leaseMs: 1_000 })).toBeUndefined();
      expect(await store.jobs.renewLease(job.id, 'dies', start + 500, 1_000)).toBe(true);
      expect(await other.jobs.claim({ workerId: 'survivor', types, nowMillis: start + 1_200, leaseMs: 1_000 })).toBeUndefined();
      const second = await other.jobs.claim({ workerId: 'survivor', types, nowMillis: start + 1_500, leaseMs: 1_000 });
      expect(second).toMatchObject({ job: { id: job.id }, claims: 2, leaseOwner: 'survivor' });
      expect(await store.jobs.renewLease(job.id, 'dies', start + 1_600, 1_000)).toBe(false);
      await other.jobs.releaseLease(job.id, 'survivor');
      expect((await store.jobs.claim({ workerId: 'third', types, nowMillis: start + 1_600, leaseMs: 1_000 }))?.claims).toBe(3);
    });

    it('lets the first final status win, records history, and settles once', async () => {
      await drainQueue();
      const { account } = await createAccount('final');
      const job = await store.jobs.create(jobRecord(account.id));
      const running = await store.jobs.transition(job.id, { id: randomUUID(), status: 'IN_PROGRESS', createdMillis: Date.now() }, { startedMillis: 5 });
      expect(running).toMatchObject({ status: 'IN_PROGRESS', startedMillis: 5 });
      const finals = await Promise.all([
        store.jobs.transition(job.id, { id: randomUUID(), status: 'SUCCESS', createdMillis: Date.now() }),
        other.jobs.transition(job.id, { id: randomUUID(), status: 'CANCELED', createdMillis: Date.now() }),
        other.jobs.transition(job.id, { id: randomUUID(), status: 'FAILED', createdMillis: Date.now() }, { failure: { code: 'ENGINE_FAILED', message: 'x' } }),
      ]);
      const winners = finals.filter((result) => result !== undefined);
      expect(winners).toHaveLength(1);
      const final = await other.jobs.get(job.id);
      expect(final?.status).toBe(winners[0]!.status);
      expect(final?.statuses.map((entry) => entry.status)).toEqual([winners[0]!.status, 'IN_PROGRESS', 'CREATED']);
      // A final, unsettled job is claimed so that someone settles it.
      const claimed = await other.jobs.claim({ workerId: 'settler', types, nowMillis: Date.now(), leaseMs: 1_000 });
      expect(claimed?.job.id).toBe(job.id);
      const settles = await Promise.all([store.jobs.settle(job.id), other.jobs.settle(job.id), store.jobs.settle(job.id)]);
      expect(settles.filter(Boolean)).toHaveLength(1);
      expect(await store.jobs.claim({ workerId: 'after', types, nowMillis: Date.now() + 10_000, leaseMs: 1_000 })).toBeUndefined();
    });

    it('updates outputs with a function, lists charged jobs newest first and deletes uncharged ones', async () => {
      const { account } = await createAccount('list');
      const jobs = [];
      for (let index = 0; index < 3; index++) jobs.push(await store.jobs.create(jobRecord(account.id)));
      const uncharged = await store.jobs.create({ ...jobRecord(account.id), transactionId: null });
      const output = { name: 'image-1.png', key: 'k', mimeType: 'image/png', size: 3, createdMillis: 1, feedback: { like: null, feedback: null } };
      const updated = await other.jobs.update(jobs[0]!.id, (job) => ({ outputFiles: [...job.outputFiles, output], externalId: 'prediction-1' }));
      expect(updated).toMatchObject({ outputFiles: [output], externalId: 'prediction-1' });
      expect(await store.jobs.get(jobs[0]!.id)).toMatchObject({ outputFiles: [output], externalId: 'prediction-1' });
      const first = await store.jobs.listFor(account.id, { limit: 2 });
      expect(first.jobs.map((job) => job.id)).toEqual([jobs[2]!.id, jobs[1]!.id]);
      const second = await store.jobs.listFor(account.id, { limit: 2, cursor: first.nextCursor! });
      expect(second).toMatchObject({ jobs: [{ id: jobs[0]!.id }], nextCursor: null });
      expect(await store.jobs.deleteUncharged(jobs[0]!.id)).toBe(false);
      expect(await store.jobs.deleteUncharged(uncharged.id)).toBe(true);
      expect(await store.jobs.get(uncharged.id)).toBeUndefined();
      await drainQueue();
    });

    it('keeps face models of a character', async () => {
      const { character } = await createAccount('face');
      const model = { id: randomUUID(), characterId: character.id, jobId: randomUUID(), createdMillis: 1, status: 'IN_PROGRESS' as const, archive: null, triggerToken: null, failure: null };
      await store.faceModels.create(model);
      await other.faceModels.update({ ...model, status: 'SUCCESS', archive: { key: 'a.tar', mimeType: 'application/x-tar' }, triggerToken: '<s0><s1>' });
      expect(await store.faceModels.listFor(character.id)).toEqual([
        { ...model, status: 'SUCCESS', archive: { key: 'a.tar', mimeType: 'application/x-tar' }, triggerToken: '<s0><s1>' },
      ]);
    });
  });

  describe('transactions', () => {
    it('commits everything together or nothing', async () => {
      const records = newAccountRecords(uniqueUsername('atomic'), 10);
      await expect(
        store.transaction(async (repositories) => {
          await repositories.accounts.create(records);
          await repositories.ledger.debit(transactionRecord(records.account.id, 'debit', 4, 'image'));
          throw new Error('changed my mind');
        }),
      ).rejects.toThrow('changed my mind');
      expect(await other.accounts.get(records.account.id)).toBeUndefined();
      const balance = await store.transaction(async (repositories) => {
        await repositories.accounts.create(records);
        await repositories.ledger.debit(transactionRecord(records.account.id, 'debit', 4, 'image'));
        return repositories.ledger.balance(records.account.id);
      });
      expect(balance).toBe(6);
      expect(await other.ledger.balance(records.account.id)).toBe(6);
    });
  });

  describe('signals', () => {
    it('tells every store of a changed job, and of signals sent in a transaction only once it commits', async () => {
      const heard: string[] = [];
      const stop = other.onJobChanged((jobId) => heard.push(jobId));
      const waitFor = async (jobId: string) => {
        for (let waited = 0; waited < 5_000 && !heard.includes(jobId); waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
        return heard.includes(jobId);
      };
      try {
        const direct = randomUUID();
        await store.signals.jobChanged(direct);
        expect(await waitFor(direct)).toBe(true);
        const rolledBack = randomUUID();
        const committed = randomUUID();
        await store
          .transaction(async (repositories) => {
            await repositories.signals.jobChanged(rolledBack);
            throw new Error('undo');
          })
          .catch(() => undefined);
        await store.transaction((repositories) => repositories.signals.jobChanged(committed));
        expect(await waitFor(committed)).toBe(true);
        expect(heard).not.toContain(rolledBack);
      } finally {
        stop();
      }
    });
  });

  describe('Discord links, deliveries and facts', () => {
    it('keeps links, followers, DM choices and account bindings', async () => {
      const channelId = randomUUID();
      await store.discordLinks.link({ channelId, conversationId: randomUUID(), guildId: 'guild' });
      const conversationId = randomUUID();
      await store.discordLinks.link({ channelId, conversationId, guildId: null });
      expect(await other.discordLinks.forChannel(channelId)).toEqual({ channelId, conversationId, guildId: null });
      expect(await other.discordLinks.forConversation(conversationId)).toEqual({ channelId, conversationId, guildId: null });
      await store.discordLinks.setFollowing(channelId, 'u2', true);
      await store.discordLinks.setFollowing(channelId, 'u1', true);
      await store.discordLinks.setFollowing(channelId, 'u1', true);
      expect(await other.discordLinks.followers(channelId)).toEqual(['u1', 'u2']);
      await other.discordLinks.setFollowing(channelId, 'u2', false);
      expect(await store.discordLinks.followers(channelId)).toEqual(['u1']);
      const user = randomUUID();
      await store.discordLinks.chooseDmCharacter(user, 'c1');
      await store.discordLinks.chooseDmCharacter(user, 'c2');
      expect(await other.discordLinks.dmCharacter(user)).toBe('c2');
      await store.discordLinks.setDmConversation(user, 'c2', 'conversation-2');
      expect(await other.discordLinks.dmConversation(user, 'c2')).toBe('conversation-2');
      const [first, second] = [await createAccount('discord'), await createAccount('discord')];
      const bound = await Promise.all([store.discordLinks.bindAccount(user, first.account.id), other.discordLinks.bindAccount(user, second.account.id)]);
      expect(bound[0]).toBe(bound[1]);
      expect(await store.discordLinks.accountOf(user)).toBe(bound[0]);
    });

    it('keeps character channels: one conversation per channel, casts in order, listen, message authors', async () => {
      const [first, second] = [await createAccount('channel'), await createAccount('channel')];
      const now = Date.now();
      const conversation = async (owner: typeof first) =>
        (
          await store.conversations.create(
            { id: randomUUID(), accountId: owner.account.id, characterId: owner.character.id, createdMicros: now * 1000, updatedMicros: now * 1000, summary: null, summaryThroughPosition: null },
            owner.account.id,
          )
        ).id;
      const channelId = randomUUID();
      const guildId = randomUUID();
      expect(await store.discordChannels.get(channelId)).toBeUndefined();
      expect(await store.discordChannels.setListen(channelId, true)).toBe(false);
      // Two processes adding the first character at once: one conversation is kept, both characters.
      const [mine, theirs] = [await conversation(first), await conversation(second)];
      const added = await Promise.all([
        store.discordChannels.addCharacter({ channelId, guildId, conversationId: mine }, first.character.id, now),
        other.discordChannels.addCharacter({ channelId, guildId, conversationId: theirs }, second.character.id, now + 1),
      ]);
      const kept = (await other.discordChannels.get(channelId))!;
      expect([mine, theirs]).toContain(kept.conversationId);
      expect(added.map((channel) => channel.conversationId)).toEqual([kept.conversationId, kept.conversationId]);
      expect(kept).toMatchObject({ channelId, guildId, listen: false, characterIds: [first.character.id, second.character.id] });
      // Its conversation knows its server (learned memories are a server's there), and only its.
      expect(await other.discordChannels.guildOfConversation(kept.conversationId)).toBe(guildId);
      expect(await other.discordChannels.guildOfConversation(randomUUID())).toBeUndefined();
      await store.discordChannels.addCharacter({ channelId, guildId, conversationId: randomUUID() }, first.character.id, now + 5);
      expect((await store.discordChannels.get(channelId))?.characterIds).toEqual([first.character.id, second.character.id]);
      expect(await store.discordChannels.setListen(channelId, true)).toBe(true);
      expect((await other.discordChannels.get(channelId))?.listen).toBe(true);
      expect((await other.discordChannels.inGuild(guildId)).map((channel) => channel.channelId)).toEqual([channelId]);
      expect(await other.discordChannels.removeCharacter(channelId, first.character.id)).toBe(true);
      expect(await other.discordChannels.removeCharacter(channelId, first.character.id)).toBe(false);
      expect(await store.discordChannels.removeCharacter(channelId, second.character.id)).toBe(true);
      // With no character left the channel is off, but keeps its conversation for when one comes back.
      expect(await store.discordChannels.inGuild(guildId)).toEqual([]);
      expect((await store.discordChannels.get(channelId))?.conversationId).toBe(kept.conversationId);

      const messageIds = [randomUUID(), randomUUID()];
      await store.discordChannels.recordCharacterMessages(messageIds, second.character.id, now);
      await other.discordChannels.recordCharacterMessages(messageIds, second.character.id, now);
      expect(await other.discordChannels.characterOfMessage(messageIds[1]!)).toBe(second.character.id);
      expect(await other.discordChannels.characterOfMessage(randomUUID())).toBeUndefined();

      // Old records are forgotten in bounded batches, oldest first; newer ones stay.
      const old = [randomUUID(), randomUUID(), randomUUID()];
      for (const [index, messageId] of old.entries()) await store.discordChannels.recordCharacterMessages([messageId], second.character.id, now - 10_000 + index);
      expect(await other.discordChannels.forgetCharacterMessages(now - 1_000, 2)).toBe(2);
      expect(await store.discordChannels.characterOfMessage(old[0]!)).toBeUndefined();
      expect(await store.discordChannels.characterOfMessage(old[2]!)).toBe(second.character.id);
      expect(await store.discordChannels.forgetCharacterMessages(now - 1_000, 2)).toBe(1);
      expect(await store.discordChannels.forgetCharacterMessages(now - 1_000, 2)).toBe(0);
      expect(await other.discordChannels.characterOfMessage(messageIds[0]!)).toBe(second.character.id);

      // A reply's messages in order, found from the last (under its buttons), whether their authors were recorded already or not.
      const third = randomUUID();
      await store.discordChannels.recordReplyMessages([...messageIds, third], second.character.id, now);
      expect(await other.discordChannels.replyMessages(third)).toEqual([...messageIds, third]);
      expect(await other.discordChannels.characterOfMessage(third)).toBe(second.character.id);
      // A message that is not the last of a recorded reply, or was never recorded, is a reply of its own.
      expect(await other.discordChannels.replyMessages(messageIds[1]!)).toEqual([messageIds[1]]);
      const unknown = randomUUID();
      expect(await store.discordChannels.replyMessages(unknown)).toEqual([unknown]);
      // Recorded again as a shorter reply, the last message's reply is that one.
      await other.discordChannels.recordReplyMessages([messageIds[1]!, third], second.character.id, now);
      expect(await store.discordChannels.replyMessages(third)).toEqual([messageIds[1], third]);
    });

    it('keeps deliveries until removed once, oldest first', async () => {
      const deliveries = [randomUUID(), randomUUID()].map((jobId, index) => ({
        jobId,
        kind: 'image' as const,
        applicationId: 'app',
        interactionToken: 'token',
        tokenExpiresMillis: 1,
        channelId: 'channel',
        // The first in a guild, the second in a DM.
        guildId: index === 0 ? '1100000000000000000' : null,
        userId: 'user',
        title: 'a lighthouse',
      }));
      for (const delivery of deliveries) await store.jobDeliveries.add(delivery);
      const pending = await other.jobDeliveries.pending(1000);
      expect(pending.filter((each) => deliveries.some((delivery) => delivery.jobId === each.jobId))).toEqual(deliveries);
      const removals = await Promise.all([store.jobDeliveries.remove(deliveries[0]!.jobId), other.jobDeliveries.remove(deliveries[0]!.jobId)]);
      expect(removals.filter(Boolean)).toHaveLength(1);
      expect(await store.jobDeliveries.get(deliveries[0]!.jobId)).toBeUndefined();
      expect(await store.jobDeliveries.get(deliveries[1]!.jobId)).toEqual(deliveries[1]);
    });

    it('keeps facts as JSON values', async () => {
      const key = `model-cannot-see-images:${randomUUID()}`;
      expect(await store.facts.get(key)).toBeUndefined();
      await store.facts.set(key, { since: 1 });
      expect(await other.facts.get(key)).toEqual({ since: 1 });
      await other.facts.set(key, true);
      expect(await store.facts.get(key)).toBe(true);
      await store.facts.delete(key);
      expect(await other.facts.get(key)).toBeUndefined();
    });
  });
}
