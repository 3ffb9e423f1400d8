import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { RepositoryStore } from '../src/core/repositories.js';
import { openSqlStore } from '../src/store/sql/sql-store.js';
import { createTestDatabase } from '../test/store/postgres-database.js';
import { jobRecord, messageRecord, newAccountRecords, transactionRecord, uniqueUsername } from '../test/store/repository-fixtures.js';
import { round } from './stats.js';

/**
 * The SQL repositories alone, SQLite and PostgreSQL side by side: message appends (many
 * conversations at once, and one conversation in sequence), the conversation read (newest
 * 50), debits racing on one account, and job claims.
 *
 *   npm run bench -- store      (or alone: npx tsx bench/store.ts)
 *
 * Also: appends/s and claims/s from three processes on one database (the script forks itself
 * with `--child`).
 */

const perSecond = (count: number, started: number) => round(count / ((performance.now() - started) / 1000), 0);

async function measure(store: RepositoryStore) {
  const owner = newAccountRecords(uniqueUsername('bench'), 1_000_000);
  await store.accounts.create(owner);
  const openConversation = async () => {
    const id = crypto.randomUUID();
    await store.conversations.create(
      { id, accountId: owner.account.id, characterId: owner.character.id, createdMicros: 1, updatedMicros: 1, summary: null, summaryThroughPosition: null },
      owner.account.id,
    );
    return id;
  };

  const parallelConversations = 64;
  const perConversation = 100;
  const conversationIds = await Promise.all(Array.from({ length: parallelConversations }, openConversation));
  let started = performance.now();
  await Promise.all(
    conversationIds.map(async (conversationId) => {
      for (let index = 0; index < perConversation; index++) {
        await store.conversations.append(conversationId, messageRecord(owner.account.id, `Message ${index}: a line of ordinary chat.`));
      }
    }),
  );
  const appendsParallel = perSecond(parallelConversations * perConversation, started);

  const sequential = await openConversation();
  const sequentialCount = 2000;
  started = performance.now();
  for (let index = 0; index < sequentialCount; index++) {
    await store.conversations.append(sequential, messageRecord(owner.account.id, `Message ${index}: a line of ordinary chat.`));
  }
  const appendsSequential = perSecond(sequentialCount, started);

  const reads = 2000;
  started = performance.now();
  for (let index = 0; index < reads; index++) await store.conversations.messages(sequential, { newest: true, limit: 50 });
  const newest50Reads = perSecond(reads, started);

  const debits = 4000;
  const concurrency = 50;
  started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let index = 0; index < debits / concurrency; index++) {
        await store.ledger.debit(transactionRecord(owner.account.id, 'debit', 1, 'image'));
      }
    }),
  );
  const debitsOneAccount = perSecond(debits, started);
  const balanceAfter = await store.ledger.balance(owner.account.id);

  const jobCount = 1000;
  for (let index = 0; index < jobCount; index++) await store.jobs.create(jobRecord(owner.account.id));
  started = performance.now();
  let claimed = 0;
  await Promise.all(
    Array.from({ length: 8 }, async (_, worker) => {
      for (;;) {
        const claim = await store.jobs.claim({ workerId: `bench-${worker}`, types: ['IMAGE_INFERENCE'], nowMillis: Date.now(), leaseMs: 60_000 });
        if (!claim) return;
        await store.jobs.transition(claim.job.id, { id: crypto.randomUUID(), status: 'SUCCESS', createdMillis: Date.now() });
        await store.jobs.settle(claim.job.id);
        claimed += 1;
      }
    }),
  );
  const jobsClaimedAndSettled = perSecond(claimed, started);

  return {
    appendsPerSecond64Conversations: appendsParallel,
    appendsPerSecondOneConversation: appendsSequential,
    newest50ReadsPerSecond: newest50Reads,
    debitsPerSecond50ConcurrentOneAccount: debitsOneAccount,
    balanceCorrect: balanceAfter === 1_000_000 - debits,
    jobsClaimedRunSettledPerSecond8Workers: jobsClaimedAndSettled,
  };
}

type ChildCommand = { type: 'append'; accountId: string; conversationId: string; appends: number } | { type: 'claim' };

/** A forked worker: opens the store, says ready, then appends or claims on command. */
async function child(url: string): Promise<void> {
  const store = await openSqlStore(url, { poolSize: 4 });
  process.on('message', async (command: ChildCommand) => {
    if (command.type === 'append') {
      await Promise.all(
        Array.from({ length: 8 }, async (_, lane) => {
          for (let index = lane; index < command.appends; index += 8) {
            await store.conversations.append(command.conversationId, messageRecord(command.accountId, `Message ${index}: a line of ordinary chat.`));
          }
        }),
      );
    } else {
      await Promise.all(
        Array.from({ length: 4 }, async (_, lane) => {
          for (;;) {
            const claim = await store.jobs.claim({ workerId: `${process.pid}-${lane}`, types: ['IMAGE_INFERENCE'], nowMillis: Date.now(), leaseMs: 60_000 });
            if (!claim) return;
            await store.jobs.transition(claim.job.id, { id: crypto.randomUUID(), status: 'SUCCESS', createdMillis: Date.now() });
            await store.jobs.settle(claim.job.id);
          }
        }),
      );
    }
    process.send?.('done');
  });
  process.on('disconnect', () => void store.close().finally(() => process.exit(0)));
  process.send?.('ready');
}

async function measureProcesses(url: string, processCount: number) {
  const store = await openSqlStore(url);
  const owner = newAccountRecords(uniqueUsername('multi'), 0);
  await store.accounts.create(owner);
  const conversationId = crypto.randomUUID();
  await store.conversations.create(
    { id: conversationId, accountId: owner.account.id, characterId: owner.character.id, createdMicros: 1, updatedMicros: 1, summary: null, summaryThroughPosition: null },
    owner.account.id,
  );
  const jobs = 1000;
  for (let index = 0; index < jobs; index++) await store.jobs.create(jobRecord(owner.account.id));
  const children: ChildProcess[] = Array.from({ length: processCount }, () =>
    fork(new URL(import.meta.url).pathname, ['--child', url], { execArgv: ['--import', 'tsx', '--disable-warning=ExperimentalWarning'] }),
  );
  await Promise.all(children.map((each) => once(each, 'message')));
  const phase = async (command: ChildCommand) => {
    const started = performance.now();
    const done = Promise.all(children.map((each) => once(each, 'message')));
    for (const each of children) each.send(command);
    await done;
    return (performance.now() - started) / 1000;
  };
  const appendsEach = 2000;
  const appendSeconds = await phase({ type: 'append', accountId: owner.account.id, conversationId, appends: appendsEach });
  const claimSeconds = await phase({ type: 'claim' });
  const stored = await store.conversations.countMessages(conversationId);
  const settled = (await store.jobs.listFor(owner.account.id, { limit: jobs })).jobs.filter((job) => job.status === 'SUCCESS').length;
  for (const each of children) each.disconnect();
  await Promise.all(children.map((each) => once(each, 'exit')));
  await store.close();
  return {
    processes: processCount,
    appendsPerSecond: round((appendsEach * processCount) / appendSeconds, 0),
    jobsClaimedRunSettledPerSecond: round(jobs / claimSeconds, 0),
    everyMessageStored: stored === appendsEach * processCount,
    everyJobDone: settled === jobs,
  };
}

if (process.argv[2] === '--child') {
  await child(process.argv[3]!);
} else if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(JSON.stringify({ node: process.version, cpus: os.cpus().length, results: await benchmarkStore() }, null, 2));
}

/** Both dialects side by side, then three processes on each. */
export async function benchmarkStore(): Promise<Record<string, unknown>> {
  const directory = await mkdtemp(path.join(os.tmpdir(), 'likeness-bench-store-'));
  const postgres = await createTestDatabase();
  try {
    const results: Record<string, unknown> = {};
    for (const [name, url] of [
      ['sqlite', `sqlite://${path.join(directory, 'store.db')}`],
      ['postgres', postgres.url],
    ] as const) {
      const store = await openSqlStore(url);
      try {
        results[name] = await measure(store);
      } finally {
        await store.close();
      }
    }
    results.threeProcesses = {
      sqlite: await measureProcesses(`sqlite://${path.join(directory, 'multi.db')}`, 3),
      postgres: await measureProcesses(postgres.url, 3),
    };
    console.error('store', results);
    return results;
  } finally {
    await postgres.drop();
    await rm(directory, { recursive: true, force: true });
  }
}
