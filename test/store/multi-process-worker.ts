import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppError } from '../../src/core/errors.js';
import type { JobType, LearnedMemoryRecord } from '../../src/core/records.js';
import { openSqlStore } from '../../src/store/sql/sql-store.js';
import { characterRecord, messageRecord, newAccountRecords, transactionRecord } from './repository-fixtures.js';

/**
 * One "service process" of the multi-process test, forked with an IPC channel. It opens the
 * store (migrating at the same moment as its siblings), then does what the parent asks and
 * answers with what it saw. Not a test file: the parent asserts.
 */

export type WorkerCommand =
  | { type: 'work'; accountId: string; conversationId: string; usernames: string[]; appends: number; debits: number }
  | { type: 'check-key'; keyHash: string }
  | { type: 'hold'; types: JobType[]; count: number; leaseMs: number }
  | { type: 'take-over'; types: JobType[]; count: number; leaseMs: number; deadlineMs: number }
  | { type: 'read-messages'; conversationId: string }
  | { type: 'append'; accountId: string; conversationId: string; content: string }
  | { type: 'append-at-once'; accountId: string; conversationId: string; count: number }
  | { type: 'change-token' }
  | { type: 'cast'; conversationId: string; characterIds: string[]; channelId: string; guildId: string; channelConversationId: string }
  | { type: 'learn'; conversationIds: string[]; throughPosition: number }
  | { type: 'add-memories'; memories: LearnedMemoryRecord[] }
  | { type: 'make-characters'; accountId: string; count: number; maxPerAccount: number };

const [url, name = 'worker'] = process.argv.slice(2);
if (!url) throw new Error('usage: multi-process-worker <store url> <name>');
const store = await openSqlStore(url, { poolSize: 6 });
const send = (message: unknown) => process.send?.(message);

process.on('message', (command: WorkerCommand) => {
  handle(command).then(
    (result) => send({ type: command.type, ok: true, result }),
    (error: unknown) => send({ type: command.type, ok: false, error: String(error) }),
  );
});
process.on('disconnect', () => {
  void store.close().finally(() => process.exit(0));
});
send({ type: 'ready', name });

async function handle(command: WorkerCommand): Promise<unknown> {
  switch (command.type) {
    case 'work': {
      const append = async () => {
        // One writer appends in sequence, so its own messages must keep their order.
        for (let index = 0; index < command.appends; index++) {
          await store.conversations.append(command.conversationId, messageRecord(command.accountId, `${name}:${index}`));
        }
      };
      const debit = async () => {
        const outcomes = await Promise.allSettled(
          Array.from({ length: command.debits }, () => store.ledger.debit(transactionRecord(command.accountId, 'debit', 1, 'image'))),
        );
        const refused = outcomes.filter((outcome) => outcome.status === 'rejected');
        if (refused.some((outcome) => !(outcome.reason instanceof AppError && outcome.reason.code === 'BALANCE_INSUFFICIENT'))) {
          throw new Error('a debit failed for another reason than the balance');
        }
        return outcomes.length - refused.length;
      };
      const createUsernames = async () => {
        const created: string[] = [];
        await Promise.all(
          command.usernames.map(async (username) => {
            try {
              await store.accounts.create(newAccountRecords(username, 5));
              created.push(username.toLowerCase());
            } catch (error) {
              if (!(error instanceof AppError && error.code === 'USERNAME_TAKEN')) throw error;
            }
          }),
        );
        return created;
      };
      const claimJobs = async () => {
        const claimed: string[] = [];
        for (;;) {
          const claim = await store.jobs.claim({ workerId: name, types: ['IMAGE_INFERENCE'], nowMillis: Date.now(), leaseMs: 60_000 });
          if (!claim) return claimed;
          claimed.push(claim.job.id);
          await store.jobs.transition(claim.job.id, { id: randomUUID(), status: 'SUCCESS', createdMillis: Date.now() });
          if (!(await store.jobs.settle(claim.job.id))) throw new Error(`job ${claim.job.id} was settled by someone else`);
        }
      };
      const [, debited, created, claimed] = await Promise.all([append(), debit(), createUsernames(), claimJobs()]);
      return { debited, created, claimed };
    }
    case 'check-key':
      return (await store.accounts.keyHolder(command.keyHash))?.accountId ?? null;
    case 'hold': {
      const held: string[] = [];
      while (held.length < command.count) {
        const claim = await store.jobs.claim({ workerId: name, types: command.types, nowMillis: Date.now(), leaseMs: command.leaseMs });
        if (!claim) break;
        await store.jobs.transition(claim.job.id, { id: randomUUID(), status: 'IN_PROGRESS', createdMillis: Date.now() }, { startedMillis: Date.now() });
        held.push(claim.job.id);
      }
      return held;
    }
    case 'take-over': {
      // What a surviving process's runner does: claim expired leases, then fail and refund.
      const finished: Array<{ jobId: string; claims: number }> = [];
      const deadline = Date.now() + command.deadlineMs;
      while (finished.length < command.count && Date.now() < deadline) {
        const claim = await store.jobs.claim({ workerId: name, types: command.types, nowMillis: Date.now(), leaseMs: command.leaseMs });
        if (!claim) {
          await sleep(100);
          continue;
        }
        const job = await store.jobs.transition(
          claim.job.id,
          { id: randomUUID(), status: 'FAILED', createdMillis: Date.now() },
          { failure: { code: 'ENGINE_FAILED', message: 'The process running it stopped.' } },
        );
        if (job?.transactionId) {
          await store.ledger.refund(transactionRecord(job.accountId, 'refund', 1, 'job failed', { refundOf: job.transactionId }));
        }
        await store.jobs.settle(claim.job.id);
        await store.signals.jobChanged(claim.job.id);
        finished.push({ jobId: claim.job.id, claims: claim.claims });
      }
      return finished;
    }
    case 'make-characters': {
      // Every process makes characters for one account at once, under one limit.
      const made = await Promise.allSettled(
        Array.from({ length: command.count }, (_, index) => store.characters.createWithin(characterRecord(command.accountId, `${name} ${index}`), command.maxPerAccount)),
      );
      const refused = made.filter((outcome) => outcome.status === 'rejected');
      if (refused.some((outcome) => !(outcome.reason instanceof AppError && outcome.reason.code === 'CHARACTER_LIMIT_REACHED'))) {
        throw new Error('a creation failed for another reason than the limit');
      }
      return made.length - refused.length;
    }
    case 'cast': {
      // Every process puts every character in one scene and one channel's cast at once.
      const added = await Promise.all(command.characterIds.map((id) => store.conversations.addCharacter(command.conversationId, id, Date.now() * 1000)));
      const channels = await Promise.all(
        command.characterIds.map((id) =>
          store.discordChannels.addCharacter({ channelId: command.channelId, guildId: command.guildId, conversationId: command.channelConversationId }, id, Date.now()),
        ),
      );
      return { added: added.filter(Boolean).length, channelConversations: [...new Set(channels.map((channel) => channel.conversationId))] };
    }
    case 'learn': {
      // What the memory runner does: queue each conversation's new messages, then work the
      // queue until it is empty, every batch completed by whoever holds its lease.
      const queued = await Promise.all(
        command.conversationIds.map((conversationId) =>
          store.memoryBatches.enqueue(conversationId, command.throughPosition, { id: randomUUID(), createdMicros: Date.now() * 1000, runAfterMillis: 0 }),
        ),
      );
      const completed: string[] = [];
      const work = async () => {
        for (;;) {
          const batch = await store.memoryBatches.claim({ workerId: name, nowMillis: Date.now(), leaseMs: 60_000 });
          if (!batch) return;
          if (!(await store.memoryBatches.complete(batch.id, name))) throw new Error(`batch ${batch.id} was taken from ${name}`);
          completed.push(batch.id);
        }
      };
      // Several claimers in this process too, as several runners on the pool would be.
      await Promise.all([work(), work(), work()]);
      return { queued: queued.flatMap((batch) => (batch ? [batch.id] : [])), completed };
    }
    case 'add-memories': {
      const added = await Promise.all(command.memories.map((memory) => store.learnedMemories.add(memory)));
      return added.map(({ memory, created }) => ({ id: memory.id, created }));
    }
    case 'read-messages':
      return (await store.conversations.messages(command.conversationId)).map((message) => message.id);
    case 'append':
      return (await store.conversations.append(command.conversationId, messageRecord(command.accountId, command.content))).id;
    case 'append-at-once': {
      // What a process does with many chats at once: each message takes its time from this
      // process's clock when it is made, then waits its turn for the pool and the database.
      const appended = await Promise.all(
        Array.from({ length: command.count }, (_, index) => store.conversations.append(command.conversationId, messageRecord(command.accountId, `${name}:${index}`))),
      );
      return appended.map((message) => message.id);
    }
    case 'change-token':
      return (await store.changeToken()) ?? null;
  }
}
