import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../src/core/errors.js';
import type { RepositoryStore } from '../../src/core/repositories.js';
import type { TransactionRecord } from '../../src/core/records.js';
import {
  characterRecord,
  hashKey,
  jobRecord,
  messageRecord,
  newAccountRecords,
  transactionRecord,
  uniqueUsername,
} from './repository-fixtures.js';

/** One database under test. `open` may be called many times: each store is a separate pool, as another process would hold. */
export interface RepositoryBackend {
  open(): Promise<RepositoryStore>;
  destroy(): Promise<void>;
}

/** Settles every promise and splits the outcomes, keeping the error codes. */
async function outcomes<T>(promises: Array<Promise<T>>): Promise<{ values: T[]; codes: string[] }> {
  const results = await Promise.allSettled(promises);
  const values: T[] = [];
  const codes: string[] = [];
  for (const result of results) {
    if (result.status === 'fulfilled') values.push(result.value);
    else codes.push(result.reason instanceof AppError ? result.reason.code : String(result.reason));
  }
  return { values, codes };
}

function signed(transaction: TransactionRecord): number {
  return transaction.type === 'debit' ? -transaction.amount : transaction.amount;
}

/**
 * The repository contract: every invariant the SQL adapters promise, run against each
 * dialect. Two stores on one database stand in for two processes (the multi-process test
 * does it with real processes).
 */
export function describeRepositories(name: string, createBackend: () => Promise<RepositoryBackend>): void {
  describe(`Repository contract: ${name}`, () => {
    let backend: RepositoryBackend;
    let store: RepositoryStore;
    let other: RepositoryStore;

    beforeAll(async () => {
      backend = await createBackend();
      store = await backend.open();
      other = await backend.open();
    });
    afterAll(async () => {
      await store?.close();
      await other?.close();
      await backend?.destroy();
    });

    const createAccount = async (prefix = 'user', balance = 100) => {
      const records = newAccountRecords(uniqueUsername(prefix), balance);
      await store.accounts.create(records);
      return records;
    };

    describe('accounts', () => {
      it('creates an account with its character, key and credit, found by any case of its username', async () => {
        const records = newAccountRecords(uniqueUsername('Mixed'), 25);
        await store.accounts.create(records);
        expect(await other.accounts.get(records.account.id)).toEqual(records.account);
        expect((await other.accounts.findByUsername(records.account.username.toUpperCase()))?.id).toBe(records.account.id);
        expect(await other.characters.get(records.character.id)).toEqual(records.character);
        expect((await other.accounts.findByApiKeyHash(records.apiKeyHash))?.id).toBe(records.account.id);
        expect(await other.ledger.balance(records.account.id)).toBe(25);
      });

      it('takes a username once regardless of case, under concurrent creates from two stores', async () => {
        const base = uniqueUsername('Race');
        const spellings = [base, base.toUpperCase(), base.toLowerCase()];
        const attempts = Array.from({ length: 24 }, (_, index) => newAccountRecords(spellings[index % 3]!, 10));
        const { values, codes } = await outcomes(attempts.map((records, index) => (index % 2 ? other : store).accounts.create(records)));
        expect(values).toHaveLength(1);
        expect(codes).toEqual(Array(23).fill('USERNAME_TAKEN'));
        // A refused create leaves nothing behind: no character, key or credit.
        for (const refused of attempts.filter((records) => records.account.id !== values[0]!.id)) {
          expect(await store.characters.get(refused.character.id)).toBeUndefined();
          expect(await store.accounts.findByApiKeyHash(refused.apiKeyHash)).toBeUndefined();
          expect(await store.ledger.transactions(refused.account.id)).toEqual([]);
        }
      });

      it('lists accounts in creation order, a page at a time', async () => {
        const created = [await createAccount('page'), await createAccount('page'), await createAccount('page')];
        const seen: string[] = [];
        let cursor: string | undefined;
        for (let guard = 0; guard < 1000; guard++) {
          const page = await store.accounts.list({ limit: 2, cursor });
          seen.push(...page.items.map((account) => account.id));
          if (page.nextCursor === null) break;
          cursor = page.nextCursor;
        }
        const ids = created.map((records) => records.account.id);
        expect(seen.filter((id) => ids.includes(id))).toEqual(ids);
      });

      it('updates an account but never its username', async () => {
        const records = await createAccount('update');
        await store.accounts.update({ ...records.account, username: 'ignored', isDisabled: true, tags: ['a', 'b'] });
        const read = await other.accounts.get(records.account.id);
        expect(read).toMatchObject({ username: records.account.username, isDisabled: true, tags: ['a', 'b'] });
      });

      it('revokes the old key at once for every store when a key is rotated', async () => {
        const records = await createAccount('rotate');
        expect((await other.accounts.findByApiKeyHash(records.apiKeyHash))?.id).toBe(records.account.id);
        const next = hashKey(`lk_${randomUUID()}`);
        await store.accounts.rotateApiKey(records.account.id, next, Date.now());
        expect(await other.accounts.findByApiKeyHash(records.apiKeyHash)).toBeUndefined();
        expect((await other.accounts.findByApiKeyHash(next))?.id).toBe(records.account.id);
      });
    });

    describe('ledger', () => {
      it('never overspends: 50 concurrent debits of 1 against 10 from two stores, exactly 10 succeed', async () => {
        const { account } = await createAccount('debits', 10);
        const debits = Array.from({ length: 50 }, (_, index) =>
          (index % 2 ? other : store).ledger.debit(transactionRecord(account.id, 'debit', 1, 'image', { reference: `job-${index}` })),
        );
        const { values, codes } = await outcomes(debits);
        expect(values).toHaveLength(10);
        expect(codes).toEqual(Array(40).fill('BALANCE_INSUFFICIENT'));
        expect(await store.ledger.balance(account.id)).toBe(0);
        const ledger = await other.ledger.transactions(account.id);
        expect(ledger.reduce((sum, transaction) => sum + signed(transaction), 0)).toBe(0);
        expect(ledger.filter((transaction) => transaction.type === 'debit')).toHaveLength(10);
      });

      it('refuses a debit above the balance with the balance in the details', async () => {
        const { account } = await createAccount('short', 3);
        const error = await store.ledger.debit(transactionRecord(account.id, 'debit', 5, 'training')).catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(AppError);
        expect(error).toMatchObject({ code: 'BALANCE_INSUFFICIENT', details: { balance: 3, required: 5 } });
        expect(await store.ledger.transactions(account.id)).toHaveLength(1);
      });

      it('refunds a debit once, however many refunds race', async () => {
        const { account } = await createAccount('refund', 10);
        const debit = await store.ledger.debit(transactionRecord(account.id, 'debit', 4, 'image', { reference: 'job-refund' }));
        expect((await other.ledger.debitFor(account.id, 'job-refund'))?.id).toBe(debit.id);
        const refunds = await Promise.all(
          Array.from({ length: 12 }, (_, index) =>
            (index % 2 ? other : store).ledger.refund(transactionRecord(account.id, 'refund', 4, 'failed', { refundOf: debit.id })),
          ),
        );
        expect(new Set(refunds.map((refund) => refund.id)).size).toBe(1);
        expect(await store.ledger.balance(account.id)).toBe(10);
        const ledger = await store.ledger.transactions(account.id);
        expect(ledger.map((transaction) => transaction.type)).toEqual(['credit', 'debit', 'refund']);
        expect(ledger.reduce((sum, transaction) => sum + signed(transaction), 0)).toBe(10);
      });

      it('refuses to refund what is not a debit, or does not exist', async () => {
        const { account, startingCredit } = await createAccount('norefund', 10);
        const credit = transactionRecord(account.id, 'refund', 1, 'x', { refundOf: startingCredit!.id });
        await expect(store.ledger.refund(credit)).rejects.toMatchObject({ code: 'CONFLICT' });
        await expect(store.ledger.refund({ ...credit, refundOf: randomUUID() })).rejects.toMatchObject({ code: 'NOT_FOUND' });
        await expect(store.ledger.credit(transactionRecord(account.id, 'credit', 0, 'zero'))).rejects.toMatchObject({ code: 'VALIDATION_FAILED' });
      });

      it('keeps the balance equal to the ledger under mixed concurrent credits, debits and refunds', async () => {
        const { account } = await createAccount('mixed', 20);
        const debits = await Promise.all(
          Array.from({ length: 10 }, () => store.ledger.debit(transactionRecord(account.id, 'debit', 2, 'image'))),
        );
        await Promise.all([
          ...debits.map((debit, index) => (index % 2 ? other : store).ledger.refund(transactionRecord(account.id, 'refund', 2, 'r', { refundOf: debit.id }))),
          ...Array.from({ length: 10 }, (_, index) => (index % 2 ? store : other).ledger.credit(transactionRecord(account.id, 'credit', 3, 'gift'))),
          ...Array.from({ length: 10 }, () => other.ledger.debit(transactionRecord(account.id, 'debit', 1, 'image')).catch(() => undefined)),
        ]);
        const ledger = await store.ledger.transactions(account.id);
        expect(await other.ledger.balance(account.id)).toBe(ledger.reduce((sum, transaction) => sum + signed(transaction), 0));
        expect(await store.ledger.balance(account.id)).toBeGreaterThanOrEqual(0);
      });
    });

    describe('conversations and messages', () => {
      const openConversation = async () => {
        const { account, character } = await createAccount('talker');
        const now = Date.now() * 1000;
        const conversation = await store.conversations.create(
          { id: randomUUID(), accountId: account.id, characterId: character.id, createdMicros: now, updatedMicros: now, summary: null, summaryThroughPosition: null },
          account.id,
        );
        return { account, character, conversation };
      };

      it('stores every concurrent append once, in one order every store agrees on', async () => {
        const { account, conversation } = await openConversation();
        const appended = await Promise.all(
          Array.from({ length: 100 }, (_, index) =>
            (index % 2 ? other : store).conversations.append(conversation.id, messageRecord(account.id, `message ${index}`)),
          ),
        );
        const fromStore = await store.conversations.messages(conversation.id);
        const fromOther = await other.conversations.messages(conversation.id);
        expect(fromStore).toHaveLength(100);
        expect(fromOther).toEqual(fromStore);
        expect(new Set(fromStore.map((message) => message.content)).size).toBe(100);
        const positions = fromStore.map((message) => message.position);
        expect(positions).toEqual([...positions].sort((left, right) => left - right));
        expect(new Set(positions).size).toBe(100);
        // Each append learned the position the readers see.
        const byId = new Map(fromStore.map((message) => [message.id, message.position]));
        for (const message of appended) expect(byId.get(message.id)).toBe(message.position);
        expect(await other.conversations.countMessages(conversation.id)).toBe(100);
      });

      it('reads ranges and the newest page oldest first', async () => {
        const { account, conversation } = await openConversation();
        for (let index = 0; index < 10; index++) await store.conversations.append(conversation.id, messageRecord(account.id, `m${index}`));
        const all = await store.conversations.messages(conversation.id);
        const newest = await store.conversations.messages(conversation.id, { newest: true, limit: 3 });
        expect(newest.map((message) => message.content)).toEqual(['m7', 'm8', 'm9']);
        const older = await store.conversations.messages(conversation.id, { beforePosition: newest[0]!.position, newest: true, limit: 3 });
        expect(older.map((message) => message.content)).toEqual(['m4', 'm5', 'm6']);
        const after = await store.conversations.messages(conversation.id, { afterPosition: all[1]!.position, limit: 2 });
        expect(after.map((message) => message.content)).toEqual(['m2', 'm3']);
        expect((await store.conversations.lastMessage(conversation.id))?.content).toBe('m9');
      });

      it('keeps the finish reason, hides superseded replies, and continues after a clear', async () => {
        const { account, character, conversation } = await openConversation();
        await store.conversations.append(conversation.id, messageRecord(account.id, 'hello'));
        const reply = await store.conversations.append(conversation.id, {
          ...messageRecord(character.id, 'first reply'),
          participantType: 'character',
          finishReason: 'length',
        });
        expect(reply.finishReason).toBe('length');
        expect(await other.conversations.supersede(reply.id, Date.now() * 1000)).toBe(true);
        expect(await other.conversations.supersede(reply.id, Date.now() * 1000)).toBe(false);
        const regenerated = await store.conversations.append(conversation.id, { ...messageRecord(character.id, 'second reply'), participantType: 'character', finishReason: 'stop' });
        expect((await store.conversations.messages(conversation.id)).map((message) => message.content)).toEqual(['hello', 'second reply']);
        const history = await store.conversations.messages(conversation.id, { includeSuperseded: true });
        expect(history.map((message) => [message.content, message.supersededMicros !== null])).toEqual([
          ['hello', false],
          ['first reply', true],
          ['second reply', false],
        ]);
        await store.conversations.setSummary(conversation.id, 'They said hello.', regenerated.position);
        expect(await other.conversations.get(conversation.id)).toMatchObject({ summary: 'They said hello.', summaryThroughPosition: regenerated.position });
        await store.conversations.clear(conversation.id, Date.now() * 1000);
        expect(await store.conversations.messages(conversation.id)).toEqual([]);
        expect(await store.conversations.get(conversation.id)).toMatchObject({ summary: null, summaryThroughPosition: null });
        const next = await store.conversations.append(conversation.id, messageRecord(account.id, 'again'));
        expect(next.position).toBeGreaterThan(regenerated.position);
      });

      it('adds speakers once, in the order they joined, and lists conversations newest first', async () => {
        const { account, conversation } = await openConversation();
        const guest = (await createAccount('guest')).account;
        const results = await Promise.all([
          store.conversations.addSpeaker(conversation.id, guest.id, 1),
          other.conversations.addSpeaker(conversation.id, guest.id, 2),
        ]);
        expect(results.filter(Boolean)).toHaveLength(1);
        expect(await other.conversations.speakers(conversation.id)).toEqual([account.id, guest.id]);
        const second = await store.conversations.create({ ...conversation, id: randomUUID() }, account.id);
        expect((await store.conversations.listFor(account.id)).map((each) => each.id)).toEqual([second.id, conversation.id]);
        expect((await store.conversations.listFor(guest.id)).map((each) => each.id)).toEqual([conversation.id]);
      });

      it('refuses a message for a conversation that does not exist', async () => {
        await expect(store.conversations.append(randomUUID(), messageRecord('nobody', 'x'))).rejects.toMatchObject({ code: 'NOT_FOUND' });
      });
    });

    describe('characters and memories', () => {
      it('finds own characters by substring and public ones by prefix, never private ones of others, at most the limit', async () => {
        const tag = randomUUID().slice(0, 6);
        const owner = await createAccount('owner');
        const stranger = await createAccount('stranger');
        const own = await store.characters.create(characterRecord(owner.account.id, `My ${tag} Friend`));
        await store.characters.create(characterRecord(stranger.account.id, `${tag} Secret`));
        const publicOnes = [];
        for (let index = 0; index < 5; index++) {
          publicOnes.push(await store.characters.create(characterRecord(stranger.account.id, `${tag.toUpperCase()} Public ${index}`, { isPublic: true })));
        }
        const found = await other.characters.search(tag, { accountId: owner.account.id, limit: 4 });
        expect(found.map((character) => character.id)).toEqual([own.id, ...publicOnes.slice(0, 3).map((character) => character.id)]);
        const all = await other.characters.search(tag, { accountId: owner.account.id, limit: 50 });
        expect(all).toHaveLength(6);
        expect(await store.characters.search('%', { accountId: owner.account.id, limit: 10 })).toEqual([]);
        const admin = await store.characters.search(tag, { accountId: null, limit: 50 });
        expect(admin).toHaveLength(6);
      });

      it('updates a character and its name in search', async () => {
        const owner = await createAccount('rename');
        const name = `Zed${randomUUID().slice(0, 6)}`;
        await store.characters.update({ ...owner.character, name, isPublic: true });
        const stranger = await createAccount('looker');
        expect((await other.characters.search(name.toLowerCase(), { accountId: stranger.account.id, limit: 5 })).map((each) => each.id)).toEqual([
          owner.character.id,
        ]);
      });

      it('holds at most the maximum of memories under concurrent adds', async () => {
        const { character } = await createAccount('memory');
        const adds = Array.from({ length: 12 }, (_, index) =>
          (index % 2 ? other : store).memories.add(character.id, { id: randomUUID(), text: `fact ${index}`, createdMicros: index }, 5),
        );
        const { values, codes } = await outcomes(adds);
        expect(values).toHaveLength(5);
        expect(codes).toEqual(Array(7).fill('CONFLICT'));
        const memories = await store.memories.list(character.id);
        expect(memories).toHaveLength(5);
        expect(await store.memories.remove(character.id, memories[0]!.id)).toBe(true);
        expect(await store.memories.remove(character.id, memories[0]!.id)).toBe(false);
      });
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

      it('keeps deliveries until removed once, oldest first', async () => {
        const deliveries = [randomUUID(), randomUUID()].map((jobId) => ({
          jobId,
          kind: 'image' as const,
          applicationId: 'app',
          interactionToken: 'token',
          tokenExpiresMillis: 1,
          channelId: 'channel',
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
  });
}
