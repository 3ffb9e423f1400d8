import { type Expression, type ExpressionBuilder, type Selectable, type SqlBool, type Updateable, sql } from 'kysely';
import { ValidationError } from '../../core/errors.js';
import type { MemoryBatchRepository } from '../../core/repositories.js';
import type { MemoryBatchRecord, MemoryBatchStatus } from '../../core/records.js';
import { type SqlContext, atomic } from './sql-context.js';
import type { Database, MemoryBatchesTable } from './schema.js';

/**
 * Where a conversation's first batch starts: the smallest position a message can have. A fixed
 * start (not the conversation's first message, which a slower append may still be committing
 * below) means two processes that read the same queue always start the same range, and the
 * unique (conversation_id, from_position) lets exactly one of them insert it.
 */
const firstPosition = 1;

/** `last_error` is our own words; longer is cut, so a runaway message cannot swell the row. */
const maxErrorLength = 1_000;

/**
 * The queue of messages to learn from, run like the job queue: a claimer reads the next due
 * batch (`FOR UPDATE SKIP LOCKED` on PostgreSQL, so concurrent claimers pass over each other's
 * rows; under the file's one write lock on SQLite), then takes the lease with an UPDATE that
 * re-checks the batch is still due. `attempts` counts claims, this one included, so a batch
 * whose worker died is counted too.
 */
export class SqlMemoryBatchRepository implements MemoryBatchRepository {
  constructor(private readonly context: SqlContext) {}

  enqueue(
    conversationId: string,
    throughPosition: number,
    batch: Pick<MemoryBatchRecord, 'id' | 'createdMicros' | 'runAfterMillis'>,
  ): Promise<MemoryBatchRecord | undefined> {
    return atomic(this.context.db, async (db) => {
      // Batches are consecutive, so the one that starts last ends last: the unique index finds it.
      const last = await db
        .selectFrom('memory_batches')
        .select('through_position')
        .where('conversation_id', '=', conversationId)
        .orderBy('from_position', 'desc')
        .limit(1)
        .executeTakeFirst();
      const fromPosition = last ? Number(last.through_position) + 1 : firstPosition;
      if (fromPosition > throughPosition) return undefined;
      const record: MemoryBatchRecord = {
        id: batch.id,
        conversationId,
        fromPosition,
        throughPosition,
        status: 'queued',
        attempts: 0,
        runAfterMillis: batch.runAfterMillis,
        leaseOwner: null,
        leaseUntilMillis: null,
        createdMicros: batch.createdMicros,
        lastError: null,
      };
      // A loser of the race inserts nothing and raises nothing, so a caller's transaction goes on.
      const inserted = await db
        .insertInto('memory_batches')
        .values({
          id: record.id,
          conversation_id: conversationId,
          from_position: fromPosition,
          through_position: throughPosition,
          status: record.status,
          run_after_millis: record.runAfterMillis,
          created_micros: record.createdMicros,
        })
        .onConflict((conflict) => conflict.columns(['conversation_id', 'from_position']).doNothing())
        .executeTakeFirst();
      return (inserted.numInsertedOrUpdatedRows ?? 0n) > 0n ? record : undefined;
    });
  }

  claim(options: { workerId: string; nowMillis: number; leaseMs: number }): Promise<MemoryBatchRecord | undefined> {
    const { workerId, nowMillis, leaseMs } = options;
    return atomic(this.context.db, async (db) => {
      let candidates = db
        .selectFrom('memory_batches')
        .select('id')
        // Written literally so PostgreSQL matches the partial index `WHERE status <> 'done'`.
        .where(sql<boolean>`status <> 'done'`)
        .where((where) => due(where, nowMillis))
        // A conversation's batches are learned in order: none while an earlier one is unfinished,
        // so a statement is never learned before one made ahead of it.
        .where(({ not, exists, selectFrom }) =>
          not(
            exists(
              selectFrom('memory_batches as earlier')
                .select(sql`1`.as('one'))
                .whereRef('earlier.conversation_id', '=', 'memory_batches.conversation_id')
                .where(sql<boolean>`earlier.status <> 'done'`)
                .whereRef('earlier.from_position', '<', 'memory_batches.from_position'),
            ),
          ),
        )
        .orderBy('run_after_millis')
        .orderBy('position')
        .limit(1);
      if (this.context.dialect === 'postgres') candidates = candidates.forUpdate().skipLocked();
      const candidate = await candidates.executeTakeFirst();
      if (!candidate) return undefined;
      const taken = await db
        .updateTable('memory_batches')
        .set({ status: 'running', lease_owner: workerId, lease_until_millis: nowMillis + leaseMs, attempts: sql`attempts + 1` })
        .where('id', '=', candidate.id)
        .where((where) => due(where, nowMillis))
        .returningAll()
        .executeTakeFirst();
      return taken && memoryBatchRecord(taken);
    });
  }

  complete(batchId: string, workerId: string): Promise<boolean> {
    return this.#release(batchId, workerId, { status: 'done' });
  }

  retry(batchId: string, workerId: string, runAfterMillis: number, error: string): Promise<boolean> {
    return this.#release(batchId, workerId, { status: 'queued', run_after_millis: runAfterMillis, last_error: error.slice(0, maxErrorLength) });
  }

  /** Ends a running batch's lease with `change`, only for the worker that holds it. */
  async #release(batchId: string, workerId: string, change: Updateable<MemoryBatchesTable>): Promise<boolean> {
    const result = await this.context.db
      .updateTable('memory_batches')
      .set({ ...change, lease_owner: null, lease_until_millis: null })
      .where('id', '=', batchId)
      .where('status', '=', 'running')
      .where('lease_owner', '=', workerId)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async renew(batchId: string, workerId: string, nowMillis: number, leaseMs: number): Promise<boolean> {
    const result = await this.context.db
      .updateTable('memory_batches')
      .set({ lease_until_millis: nowMillis + leaseMs })
      .where((where) => held(where, batchId, workerId, nowMillis))
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async doneCharacters(batchId: string): Promise<string[]> {
    const rows = await this.context.db.selectFrom('memory_batch_parts').select('character_id').where('batch_id', '=', batchId).execute();
    return rows.map((row) => row.character_id);
  }

  /**
   * The lease is checked by an UPDATE of the batch's row, which holds that row until the caller's
   * transaction ends (PostgreSQL; SQLite's one write lock does it there): a claimer taking an
   * expired lease over waits for the commit, and then finds this character done.
   */
  finishCharacter(batchId: string, characterId: string, workerId: string, nowMillis: number, nowMicros: number): Promise<boolean> {
    return atomic(this.context.db, async (db) => {
      const touched = await db
        .updateTable('memory_batches')
        .set({ lease_owner: workerId })
        .where((where) => held(where, batchId, workerId, nowMillis))
        .executeTakeFirst();
      if (touched.numUpdatedRows === 0n) return false;
      const inserted = await db
        .insertInto('memory_batch_parts')
        .values({ batch_id: batchId, character_id: characterId, done_micros: nowMicros })
        .onConflict((conflict) => conflict.columns(['batch_id', 'character_id']).doNothing())
        .executeTakeFirst();
      return (inserted.numInsertedOrUpdatedRows ?? 0n) > 0n;
    });
  }

  /**
   * A conversation's newest batch stays, done or not: `enqueue` starts the next one after it.
   * Older done ones go (their parts with them), a bounded number per call.
   */
  async pruneDone(createdBeforeMicros: number, limit = 500): Promise<number> {
    const doomed = await this.context.db
      .selectFrom('memory_batches')
      .select('id')
      .where('status', '=', 'done' satisfies MemoryBatchStatus)
      .where('created_micros', '<', createdBeforeMicros)
      .where(({ exists, selectFrom }) =>
        exists(
          selectFrom('memory_batches as later')
            .select(sql`1`.as('one'))
            .whereRef('later.conversation_id', '=', 'memory_batches.conversation_id')
            .whereRef('later.from_position', '>', 'memory_batches.from_position'),
        ),
      )
      .limit(limit)
      .execute();
    if (doomed.length === 0) return 0;
    const result = await this.context.db
      .deleteFrom('memory_batches')
      .where(
        'id',
        'in',
        doomed.map((row) => row.id),
      )
      .where('status', '=', 'done' satisfies MemoryBatchStatus)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  async markUnlearned(messageId: string, characterIds?: readonly string[]): Promise<void> {
    if (characterIds === undefined) {
      await this.context.db.insertInto('unlearned_messages').values({ message_id: messageId }).onConflict((conflict) => conflict.column('message_id').doNothing()).execute();
      return;
    }
    if (characterIds.length === 0) return;
    await this.context.db
      .insertInto('unlearned_message_characters')
      .values([...new Set(characterIds)].map((characterId) => ({ message_id: messageId, character_id: characterId })))
      .onConflict((conflict) => conflict.columns(['message_id', 'character_id']).doNothing())
      .execute();
  }

  async unlearnedBy(messageIds: readonly string[]): Promise<Map<string, Set<string>>> {
    const found = new Map<string, Set<string>>();
    for (let start = 0; start < messageIds.length; start += 500) {
      const rows = await this.context.db
        .selectFrom('unlearned_message_characters')
        .select(['message_id', 'character_id'])
        .where('message_id', 'in', messageIds.slice(start, start + 500))
        .execute();
      for (const row of rows) found.set(row.message_id, (found.get(row.message_id) ?? new Set()).add(row.character_id));
    }
    return found;
  }

  async unlearned(messageIds: readonly string[]): Promise<Set<string>> {
    const found = new Set<string>();
    for (let start = 0; start < messageIds.length; start += 500) {
      const rows = await this.context.db.selectFrom('unlearned_messages').select('message_id').where('message_id', 'in', messageIds.slice(start, start + 500)).execute();
      for (const row of rows) found.add(row.message_id);
    }
    return found;
  }

  async get(batchId: string): Promise<MemoryBatchRecord | undefined> {
    const row = await this.context.db.selectFrom('memory_batches').selectAll().where('id', '=', batchId).executeTakeFirst();
    return row && memoryBatchRecord(row);
  }

  /**
   * One statement: the first spend of a day inserts the row, a later one adds to it only where
   * the sum stays within `limit`. PostgreSQL row-locks the day's row and re-checks the sum after
   * a concurrent spend commits; SQLite runs it under its one write lock.
   */
  async spend(characterId: string, day: string, tokens: number, limit: number): Promise<boolean> {
    if (!Number.isSafeInteger(tokens) || tokens < 0) throw ValidationError.field('tokens', 'must be a whole number, zero or more');
    if (tokens > limit) return false;
    const result = await this.context.db
      .insertInto('memory_spending')
      .values({ character_id: characterId, day, tokens })
      .onConflict((conflict) =>
        conflict
          .columns(['character_id', 'day'])
          .doUpdateSet({ tokens: sql`memory_spending.tokens + excluded.tokens` })
          .where(sql<boolean>`memory_spending.tokens + excluded.tokens <= ${limit}`),
      )
      .executeTakeFirst();
    return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
  }
}

/** Running under `workerId`'s lease, not yet run out at `nowMillis`. */
function held(where: ExpressionBuilder<Database, 'memory_batches'>, batchId: string, workerId: string, nowMillis: number): Expression<SqlBool> {
  return where.and([
    where('id', '=', batchId),
    where('status', '=', 'running' satisfies MemoryBatchStatus),
    where('lease_owner', '=', workerId),
    where('lease_until_millis', '>', nowMillis),
  ]);
}

/** Queued and due, or running with its lease run out. */
function due(where: ExpressionBuilder<Database, 'memory_batches'>, nowMillis: number): Expression<SqlBool> {
  return where.or([
    where.and([where('status', '=', 'queued' satisfies MemoryBatchStatus), where('run_after_millis', '<=', nowMillis)]),
    where.and([where('status', '=', 'running' satisfies MemoryBatchStatus), where('lease_until_millis', '<', nowMillis)]),
  ]);
}

function memoryBatchRecord(row: Selectable<Database['memory_batches']>): MemoryBatchRecord {
  return {
    id: row.id,
    conversationId: row.conversation_id,
    fromPosition: Number(row.from_position),
    throughPosition: Number(row.through_position),
    status: row.status as MemoryBatchStatus,
    attempts: Number(row.attempts),
    runAfterMillis: Number(row.run_after_millis),
    leaseOwner: row.lease_owner,
    leaseUntilMillis: row.lease_until_millis === null ? null : Number(row.lease_until_millis),
    createdMicros: Number(row.created_micros),
    lastError: row.last_error,
  };
}
