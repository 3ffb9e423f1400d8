import { type ChildProcess, fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RepositoryStore } from '../../src/core/repositories.js';
import type { TransactionRecord } from '../../src/core/records.js';
import { openSqlStore } from '../../src/store/sql/sql-store.js';
import type { WorkerCommand } from './multi-process-worker.js';
import { createTestDatabase } from './postgres-database.js';
import { hashKey, jobRecord, learnedMemoryRecord, messageRecord, newAccountRecords, transactionRecord, uniqueUsername } from './repository-fixtures.js';

const workerPath = fileURLToPath(new URL('./multi-process-worker.ts', import.meta.url));

/** A forked service process and a way to ask it things. */
class Worker {
  readonly process: ChildProcess;
  readonly ready: Promise<unknown>;

  constructor(url: string, readonly name: string) {
    this.process = fork(workerPath, [url, name], {
      execArgv: ['--import', 'tsx', '--disable-warning=ExperimentalWarning'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.ready = this.#next('ready');
  }

  async ask<T>(command: WorkerCommand): Promise<T> {
    const answer = this.#next(command.type);
    this.process.send(command);
    const reply = (await answer) as { ok: boolean; result?: T; error?: string };
    if (!reply.ok) throw new Error(`${this.name}: ${reply.error}`);
    return reply.result as T;
  }

  #next(type: string): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const onMessage = (message: { type?: string }) => {
        if (message.type !== type) return;
        this.process.off('message', onMessage);
        this.process.off('exit', onExit);
        resolve(message);
      };
      const onExit = (code: number | null) => reject(new Error(`${this.name} exited (${code}) before answering ${type}`));
      this.process.on('message', onMessage);
      this.process.once('exit', onExit);
    });
  }

  async stop(): Promise<void> {
    if (this.process.exitCode !== null || this.process.signalCode !== null) return;
    const exited = once(this.process, 'exit');
    this.process.disconnect();
    await exited;
  }
}

function sum(transactions: TransactionRecord[]): number {
  return transactions.reduce((total, transaction) => total + (transaction.type === 'debit' ? -transaction.amount : transaction.amount), 0);
}

/**
 * Service processes on one database, started at once (so they also migrate at once), then
 * made to race on every invariant; the parent reads the outcome from the database.
 */
function describeMultiProcess(name: string, processCount: number, createDatabase: () => Promise<{ url: string; drop(): Promise<void> }>): void {
  describe(`${processCount} processes on one ${name} database`, () => {
    let database: { url: string; drop(): Promise<void> };
    let workers: Worker[] = [];
    let store: RepositoryStore;

    beforeAll(async () => {
      database = await createDatabase();
      workers = Array.from({ length: processCount }, (_, index) => new Worker(database.url, `process-${index}`));
      await Promise.all(workers.map((worker) => worker.ready));
      store = await openSqlStore(database.url);
    });
    afterAll(async () => {
      await Promise.all(workers.map((worker) => worker.stop()));
      await store?.close();
      await database?.drop();
    });

    /** A new account and a conversation of its own, made through the parent's store. */
    const ownerWithConversation = async (prefix: string, balance: number) => {
      const owner = newAccountRecords(uniqueUsername(prefix), balance);
      await store.accounts.create(owner);
      const conversationId = randomUUID();
      await store.conversations.create(
        { id: conversationId, accountId: owner.account.id, characterId: owner.character.id, createdMicros: 1, updatedMicros: 1, summary: null, summaryThroughPosition: null },
        owner.account.id,
      );
      return { owner, conversationId };
    };

    it('holds every invariant while all processes append, debit, create usernames and claim jobs at once', async () => {
      const { owner, conversationId } = await ownerWithConversation('owner', 60);
      const jobs = [];
      for (let index = 0; index < 30; index++) jobs.push(await store.jobs.create(jobRecord(owner.account.id)));
      const names = Array.from({ length: 5 }, () => uniqueUsername('Shared'));
      const appends = 100;
      const debits = 50;

      const results = await Promise.all(
        workers.map((worker, index) =>
          worker.ask<{ debited: number; created: string[]; claimed: string[] }>({
            type: 'work',
            accountId: owner.account.id,
            conversationId,
            // Each process spells the names its own way: uniqueness must ignore case.
            usernames: names.map((username) => (index % 2 ? username.toUpperCase() : username.toLowerCase())),
            appends,
            debits,
          }),
        ),
      );

      // Messages: none lost or doubled, one order seen by every process, each writer's order kept.
      const messages = await store.conversations.messages(conversationId);
      expect(messages).toHaveLength(appends * processCount);
      expect(new Set(messages.map((message) => message.content)).size).toBe(appends * processCount);
      const orders = await Promise.all(workers.map((worker) => worker.ask<string[]>({ type: 'read-messages', conversationId })));
      for (const order of orders) expect(order).toEqual(messages.map((message) => message.id));
      for (const worker of workers) {
        const own = messages.filter((message) => message.content.startsWith(`${worker.name}:`)).map((message) => message.content);
        expect(own).toEqual(Array.from({ length: appends }, (_, index) => `${worker.name}:${index}`));
      }

      // Ledger: exactly the balance was spent, and the balance is the ledger's sum.
      expect(results.reduce((total, result) => total + result.debited, 0)).toBe(60);
      expect(await store.ledger.balance(owner.account.id)).toBe(0);
      expect(sum(await store.ledger.transactions(owner.account.id))).toBe(0);

      // Usernames: each taken exactly once across the processes, whatever the case.
      const created = results.flatMap((result) => result.created).sort();
      expect(created).toEqual(names.map((username) => username.toLowerCase()).sort());

      // Jobs: each claimed by exactly one process, once.
      const claimed = results.flatMap((result) => result.claimed).sort();
      expect(claimed).toEqual(jobs.map((job) => job.id).sort());
      for (const job of jobs) expect(await store.jobs.get(job.id)).toMatchObject({ status: 'SUCCESS', settled: true });
    });

    it('reads messages appended by many chats at once in every process oldest first, their created times in that order too', async () => {
      const { owner, conversationId } = await ownerWithConversation('chatty', 0);
      for (let round = 0; round < 3; round++) {
        await Promise.all(workers.map((worker) => worker.ask<string[]>({ type: 'append-at-once', accountId: owner.account.id, conversationId, count: 12 })));
      }
      const messages = await store.conversations.messages(conversationId);
      expect(messages).toHaveLength(3 * 12 * processCount);
      const times = messages.map((message) => message.createdMicros);
      expect(times).toEqual([...times].sort((left, right) => left - right));
    });

    it('puts each character into a scene and a channel cast once, whichever processes add it at once', async () => {
      const { owner, conversationId } = await ownerWithConversation('scene', 0);
      const others: string[] = [];
      for (let index = 0; index < 4; index++) {
        const other = newAccountRecords(uniqueUsername('cast'), 0);
        await store.accounts.create(other);
        others.push(other.character.id);
      }
      // Each process offers its own conversation for the channel: exactly one is kept, for all.
      const channelConversations: string[] = [];
      for (let index = 0; index < processCount; index++) channelConversations.push((await ownerWithConversation('channel', 0)).conversationId);
      const channelId = randomUUID();
      const results = await Promise.all(
        workers.map((worker, index) =>
          worker.ask<{ added: number; channelConversations: string[] }>({
            type: 'cast',
            conversationId,
            characterIds: others,
            channelId,
            guildId: 'guild',
            channelConversationId: channelConversations[index]!,
          }),
        ),
      );
      expect(results.reduce((total, result) => total + result.added, 0)).toBe(others.length);
      expect(await store.conversations.characters(conversationId)).toEqual(expect.arrayContaining([owner.character.id, ...others]));
      expect(await store.conversations.characters(conversationId)).toHaveLength(others.length + 1);
      const channel = (await store.discordChannels.get(channelId))!;
      expect(new Set(results.flatMap((result) => result.channelConversations))).toEqual(new Set([channel.conversationId]));
      expect(channelConversations).toContain(channel.conversationId);
      expect([...channel.characterIds].sort()).toEqual([...others].sort());
    });

    it('never lets an account pass its character limit, whichever processes make characters at once', async () => {
      const { owner } = await ownerWithConversation('caster', 0);
      const made = await Promise.all(workers.map((worker) => worker.ask<number>({ type: 'make-characters', accountId: owner.account.id, count: 6, maxPerAccount: 7 })));
      // The account's own character counts: six more fit, however many processes try.
      expect(made.reduce((total, count) => total + count, 0)).toBe(6);
      const page = await store.characters.list({ accountId: owner.account.id, limit: 50 });
      expect(page.characters).toHaveLength(7);
    });

    it('queues each conversation\'s messages once and completes each memory batch exactly once across processes', async () => {
      const conversationIds: string[] = [];
      for (let index = 0; index < 12; index++) conversationIds.push((await ownerWithConversation('learner', 0)).conversationId);
      const results = await Promise.all(
        workers.map((worker) => worker.ask<{ queued: string[]; completed: string[] }>({ type: 'learn', conversationIds, throughPosition: 50 })),
      );
      const queued = results.flatMap((result) => result.queued);
      const completed = results.flatMap((result) => result.completed);
      expect(queued).toHaveLength(conversationIds.length);
      expect([...completed].sort()).toEqual([...queued].sort());
      for (const batchId of queued) expect(await store.memoryBatches.get(batchId)).toMatchObject({ status: 'done', attempts: 1 });
      // Every range was queued: nothing is left to queue, in any process.
      for (const conversationId of conversationIds) {
        expect(await store.memoryBatches.enqueue(conversationId, 50, { id: randomUUID(), createdMicros: 1, runAfterMillis: 0 })).toBeUndefined();
      }
    });

    it('stores a fact once when every process learns it at once, however each spells it', async () => {
      const { owner } = await ownerWithConversation('rememberer', 0);
      const person = newAccountRecords(uniqueUsername('remembered'), 0);
      await store.accounts.create(person);
      const spellings = ['Has a cat named Miso.', 'has a cat named miso', 'HAS A CAT NAMED MISO!', ' has  a cat named Miso ?'];
      const results = await Promise.all(
        workers.map((worker) =>
          worker.ask<Array<{ id: string; created: boolean }>>({
            type: 'add-memories',
            memories: spellings.map((text) => learnedMemoryRecord(owner.character.id, person.account.id, text)),
          }),
        ),
      );
      const answers = results.flat();
      expect(answers.filter((answer) => answer.created)).toHaveLength(1);
      expect(new Set(answers.map((answer) => answer.id)).size).toBe(1);
      const stored = await store.learnedMemories.about(person.account.id);
      expect(stored.map((memory) => memory.id)).toEqual([answers[0]!.id]);
    });

    it('revokes a rotated key in every process at once', async () => {
      const records = newAccountRecords(uniqueUsername('keys'), 0);
      await store.accounts.create(records);
      const seen = await Promise.all(workers.map((worker) => worker.ask<string | null>({ type: 'check-key', keyHash: records.apiKeyHash })));
      expect(seen).toEqual(workers.map(() => records.account.id));
      const next = hashKey(`lk_${randomUUID()}`);
      await store.accounts.rotateApiKey(records.account.id, next, Date.now());
      const old = await Promise.all(workers.map((worker) => worker.ask<string | null>({ type: 'check-key', keyHash: records.apiKeyHash })));
      expect(old).toEqual(workers.map(() => null));
      const fresh = await Promise.all(workers.map((worker) => worker.ask<string | null>({ type: 'check-key', keyHash: next })));
      expect(fresh).toEqual(workers.map(() => records.account.id));
    });

    it("moves every process's change token with any process's commit, and on SQLite only then", async () => {
      const { owner, conversationId } = await ownerWithConversation('tokens', 0);
      const [writer, reader] = workers as [Worker, Worker];
      const tokens = () => Promise.all([store.changeToken(), reader.ask<string | null>({ type: 'change-token' })]);
      const before = await tokens();
      expect(before.every((token) => typeof token === 'string')).toBe(true);
      // Reads change nothing. (PostgreSQL's token is the server's snapshot: any transaction on
      // the server moves it, and other tests run beside this one, so only SQLite is asked this.)
      if (name !== 'PostgreSQL') {
        await reader.ask({ type: 'read-messages', conversationId });
        await store.conversations.messages(conversationId);
        expect(await tokens()).toEqual(before);
      }
      // Another process's commit moves both; so does one's own.
      await writer.ask({ type: 'append', accountId: owner.account.id, conversationId, content: 'from the writer' });
      const afterOther = await tokens();
      expect(afterOther[0]).not.toBe(before[0]);
      expect(afterOther[1]).not.toBe(before[1]);
      await store.conversations.append(conversationId, messageRecord(owner.account.id, 'from the parent'));
      const afterOwn = await tokens();
      expect(afterOwn[0]).not.toBe(afterOther[0]);
      expect(afterOwn[1]).not.toBe(afterOther[1]);
      if (name !== 'PostgreSQL') expect(await tokens()).toEqual(afterOwn);
    });

    it('finishes and refunds the jobs of a process killed with SIGKILL once their lease expires', async () => {
      const payer = newAccountRecords(uniqueUsername('payer'), 10);
      await store.accounts.create(payer);
      const jobs = [];
      for (let index = 0; index < 3; index++) {
        const job = jobRecord(payer.account.id, 'FACE_MODEL_TRAINING');
        const debit = await store.ledger.debit(transactionRecord(payer.account.id, 'debit', 2, 'training', { reference: job.id }));
        jobs.push(await store.jobs.create({ ...job, transactionId: debit.id }));
      }
      expect(await store.ledger.balance(payer.account.id)).toBe(4);
      const [victim, survivor] = workers as [Worker, Worker];
      const held = await victim.ask<string[]>({ type: 'hold', types: ['FACE_MODEL_TRAINING'], count: 3, leaseMs: 1_500 });
      expect(held.sort()).toEqual(jobs.map((job) => job.id).sort());
      victim.process.kill('SIGKILL');
      await once(victim.process, 'exit');
      const heard = new Set<string>();
      const stopListening = store.onJobChanged((jobId) => heard.add(jobId));
      const finished = await survivor.ask<Array<{ jobId: string; claims: number }>>({
        type: 'take-over',
        types: ['FACE_MODEL_TRAINING'],
        count: 3,
        leaseMs: 10_000,
        deadlineMs: 15_000,
      });
      expect(finished.map((each) => each.jobId).sort()).toEqual(jobs.map((job) => job.id).sort());
      expect(finished.every((each) => each.claims === 2)).toBe(true);
      // The parent hears, from another process, that each job changed.
      for (let waited = 0; waited < 5_000 && heard.size < 3; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
      stopListening();
      expect([...heard].sort()).toEqual(jobs.map((job) => job.id).sort());
      for (const job of jobs) {
        expect(await store.jobs.get(job.id)).toMatchObject({ status: 'FAILED', settled: true });
      }
      expect(await store.ledger.balance(payer.account.id)).toBe(10);
      const ledger = await store.ledger.transactions(payer.account.id);
      expect(ledger.filter((transaction) => transaction.type === 'refund')).toHaveLength(3);
      expect(sum(ledger)).toBe(10);
    });
  });
}

describeMultiProcess('PostgreSQL', 3, createTestDatabase);

describeMultiProcess('SQLite (WAL) file', 3, async () => {
  const directory = await mkdtemp(path.join(os.tmpdir(), 'likeness-multi-'));
  return { url: `sqlite://${path.join(directory, 'store.db')}`, drop: () => rm(directory, { recursive: true, force: true }) };
});
