import { type Insertable, type Kysely, type Selectable, sql } from 'kysely';
import { AppError, notFound } from '../../core/errors.js';
import { normaliseMemoryText } from '../../core/memory-text.js';
import type { LearnedMemoryRepository, RecallableMemory } from '../../core/repositories.js';
import type { LearnedMemoryKind, LearnedMemoryRecord, LearnedMemoryStatus, MemoryOrigin } from '../../core/records.js';
import { type SqlContext, atomic, fromJson, isUniqueViolation, toJson } from './sql-context.js';
import { SqlReplyMemoryRepository } from './reply-memory-repository.js';
import type { Database, LearnedMemoriesTable } from './schema.js';

/**
 * Learned memories. A fact is stored once: the partial unique index `learned_memories_once`
 * (character, subject, kind, normalised text, among rows not superseded) refuses a copy from
 * any process, and `add` inserts with that index as its ON CONFLICT target, so a copy is never
 * an error, only the answer of the row already there. Newest first means latest said
 * (`stated_micros`), then latest stored.
 */
export class SqlLearnedMemoryRepository implements LearnedMemoryRepository {
  constructor(private readonly context: SqlContext) {}

  add(memory: LearnedMemoryRecord): Promise<{ memory: LearnedMemoryRecord; created: boolean }> {
    return atomic(this.context.db, (db) => insertOnce(db, memory));
  }

  async get(memoryId: string): Promise<LearnedMemoryRecord | undefined> {
    const row = await this.context.db.selectFrom('learned_memories').selectAll().where('id', '=', memoryId).executeTakeFirst();
    return row && learnedMemoryRecord(row);
  }

  async usableAbout(characterId: string, subjectAccountId: string, origins?: readonly MemoryOrigin[]): Promise<LearnedMemoryRecord[]> {
    if (origins?.length === 0) return [];
    let query = this.#newestFirst()
      .where('character_id', '=', characterId)
      .where('subject_account_id', '=', subjectAccountId)
      .where('kind', '=', 'person' satisfies LearnedMemoryKind)
      .where('status', '=', 'active' satisfies LearnedMemoryStatus);
    if (origins) query = query.where('origin', 'in', origins);
    return (await query.execute()).map(learnedMemoryRecord);
  }

  async recallable(characterId: string, subjectAccountId: string, origins?: readonly MemoryOrigin[]): Promise<RecallableMemory[]> {
    if (origins?.length === 0) return [];
    let query = this.context.db
      .selectFrom('learned_memories')
      .select(['id', 'text', 'importance', 'stated_micros', 'origin'])
      .where('character_id', '=', characterId)
      .where('subject_account_id', '=', subjectAccountId)
      .where('kind', '=', 'person' satisfies LearnedMemoryKind)
      .where('status', '=', 'active' satisfies LearnedMemoryStatus)
      .orderBy('stated_micros', 'desc')
      .orderBy('position', 'desc');
    if (origins) query = query.where('origin', 'in', origins);
    const rows = await query.execute();
    return rows.map((row) => ({ id: row.id, subjectAccountId, text: row.text, importance: Number(row.importance), statedMicros: Number(row.stated_micros), origin: row.origin as MemoryOrigin }));
  }

  async about(subjectAccountId: string, options: { characterId?: string | undefined } = {}): Promise<LearnedMemoryRecord[]> {
    let query = this.#newestFirst()
      .where('subject_account_id', '=', subjectAccountId)
      .where('kind', '=', 'person' satisfies LearnedMemoryKind)
      .where('status', 'in', ['active', 'superseded'] satisfies LearnedMemoryStatus[]);
    if (options.characterId !== undefined) query = query.where('character_id', '=', options.characterId);
    return (await query.execute()).map(learnedMemoryRecord);
  }

  async own(characterId: string, statuses: readonly LearnedMemoryStatus[]): Promise<LearnedMemoryRecord[]> {
    if (statuses.length === 0) return [];
    const rows = await this.#newestFirst()
      .where('character_id', '=', characterId)
      .where('kind', '=', 'own' satisfies LearnedMemoryKind)
      .where('status', 'in', statuses)
      .execute();
    return rows.map(learnedMemoryRecord);
  }

  /**
   * The old row is marked first, which frees its place in the unique index, so a replacement
   * may even say the same thing. When the replacement is a fact already held (not superseded),
   * the old one points to that one, which is answered instead: the fact is still stored once.
   */
  supersede(oldMemoryId: string, replacement: LearnedMemoryRecord, nowMicros: number): Promise<LearnedMemoryRecord> {
    return atomic(this.context.db, async (db) => {
      const marked = await db
        .updateTable('learned_memories')
        .set({ status: 'superseded', superseded_micros: nowMicros, superseded_by: replacement.id, updated_micros: nowMicros })
        .where('id', '=', oldMemoryId)
        .where('status', '<>', 'superseded')
        .executeTakeFirst();
      if (marked.numUpdatedRows === 0n) throw notFound('Memory', oldMemoryId);
      const { memory, created } = await insertOnce(db, { ...replacement, status: 'active', supersededMicros: null, supersededBy: null });
      if (!created) await db.updateTable('learned_memories').set({ superseded_by: memory.id }).where('id', '=', oldMemoryId).execute();
      return memory;
    });
  }

  /**
   * One transaction: the memory becomes active and the approved memory it replaces (if still
   * active) superseded by it, so the character never holds both, nor neither.
   */
  approve(memoryId: string, nowMicros: number): Promise<LearnedMemoryRecord | undefined> {
    return atomic(this.context.db, async (db) => {
      const row = await db
        .updateTable('learned_memories')
        .set({ status: 'active', updated_micros: nowMicros })
        .where('id', '=', memoryId)
        .where('status', 'in', ['pending', 'active'] satisfies LearnedMemoryStatus[])
        .returningAll()
        .executeTakeFirst();
      if (!row) return undefined;
      if (row.replaces !== null) {
        await db
          .updateTable('learned_memories')
          .set({ status: 'superseded', superseded_micros: nowMicros, superseded_by: memoryId, updated_micros: nowMicros })
          .where('id', '=', row.replaces)
          .where('character_id', '=', row.character_id)
          .where('kind', '=', row.kind)
          .where('status', '=', 'active' satisfies LearnedMemoryStatus)
          .execute();
      }
      return learnedMemoryRecord(row);
    });
  }

  async setStatus(memoryId: string, status: LearnedMemoryStatus, nowMicros: number): Promise<boolean> {
    try {
      const result = await this.context.db
        .updateTable('learned_memories')
        .set({ status, updated_micros: nowMicros })
        .where('id', '=', memoryId)
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    } catch (error) {
      // Only a superseded memory brought back can meet its own current copy.
      if (isUniqueViolation(error)) throw new AppError('CONFLICT', 'The same fact is already held; this one stays as it was.', { cause: error });
      throw error;
    }
  }

  /**
   * Person memories only, like `about`. One memory goes with the memories it replaced, and
   * theirs in turn (their `superseded_by` leads to it); the wider scopes hold those already.
   * The records of replies written with them go in the same transaction.
   */
  deleteAbout(subjectAccountId: string, filter: { memoryId?: string | undefined; characterId?: string | undefined } = {}): Promise<number> {
    return atomic(this.context.db, async (db) => {
      const inScope = () => {
        let query = db
          .deleteFrom('learned_memories')
          .where('subject_account_id', '=', subjectAccountId)
          .where('kind', '=', 'person' satisfies LearnedMemoryKind);
        if (filter.characterId !== undefined) query = query.where('character_id', '=', filter.characterId);
        return query;
      };
      if (filter.memoryId === undefined) {
        const gone = await inScope().returning('id').execute();
        await new SqlReplyMemoryRepository({ ...this.context, db }).forget(gone.map((row) => row.id));
        return gone.length;
      }
      let deleted = 0;
      // Each step deletes one generation, newest first; a chain is a handful of rows.
      let generation = [filter.memoryId];
      let link: 'id' | 'superseded_by' = 'id';
      while (generation.length > 0) {
        const gone = await inScope().where(link, 'in', generation).returning('id').execute();
        await new SqlReplyMemoryRepository({ ...this.context, db }).forget(gone.map((row) => row.id));
        deleted += gone.length;
        generation = gone.map((row) => row.id);
        link = 'superseded_by';
      }
      return deleted;
    });
  }

  #newestFirst() {
    return this.context.db.selectFrom('learned_memories').selectAll().orderBy('stated_micros', 'desc').orderBy('position', 'desc');
  }
}

/**
 * Inserts the memory unless the unique index already holds the fact; then answers that row.
 * The conflict target repeats the index's predicate word for word, as PostgreSQL needs to pick
 * a partial index. A row found at insert may be superseded before it is read back (another
 * process, between the two statements on PostgreSQL): then the insert is tried again, and the
 * place it left is free.
 */
async function insertOnce(db: Kysely<Database>, memory: LearnedMemoryRecord): Promise<{ memory: LearnedMemoryRecord; created: boolean }> {
  const row = learnedMemoryRow(memory);
  for (let attempt = 0; attempt < 3; attempt++) {
    const inserted = await db
      .insertInto('learned_memories')
      .values(row)
      .onConflict((conflict) =>
        conflict.columns(['character_id', 'subject_account_id', 'kind', 'normalised_text']).where(sql<boolean>`status <> 'superseded'`).doNothing(),
      )
      .executeTakeFirst();
    if ((inserted.numInsertedOrUpdatedRows ?? 0n) > 0n) return { memory, created: true };
    const existing = await db
      .selectFrom('learned_memories')
      .selectAll()
      .where('character_id', '=', row.character_id)
      .where('subject_account_id', '=', row.subject_account_id)
      .where('kind', '=', row.kind)
      .where('normalised_text', '=', row.normalised_text)
      .where(sql<boolean>`status <> 'superseded'`)
      .executeTakeFirst();
    if (existing) return { memory: learnedMemoryRecord(existing), created: false };
  }
  throw new AppError('CONFLICT', 'The same fact kept changing while it was being stored; try again.');
}

function learnedMemoryRow(memory: LearnedMemoryRecord): Insertable<LearnedMemoriesTable> {
  return {
    id: memory.id,
    character_id: memory.characterId,
    subject_account_id: memory.subjectAccountId,
    kind: memory.kind,
    text: memory.text,
    normalised_text: normaliseMemoryText(memory.text),
    status: memory.status,
    origin: memory.origin,
    conversation_id: memory.conversationId,
    message_ids: toJson(memory.messageIds),
    importance: memory.importance,
    stated_micros: memory.statedMicros,
    created_micros: memory.createdMicros,
    updated_micros: memory.updatedMicros,
    superseded_micros: memory.supersededMicros,
    superseded_by: memory.supersededBy,
    replaces: memory.replaces ?? null,
  };
}

function learnedMemoryRecord(row: Selectable<Database['learned_memories']>): LearnedMemoryRecord {
  return {
    id: row.id,
    characterId: row.character_id,
    subjectAccountId: row.subject_account_id,
    kind: row.kind as LearnedMemoryKind,
    text: row.text,
    status: row.status as LearnedMemoryStatus,
    origin: row.origin as MemoryOrigin,
    conversationId: row.conversation_id,
    messageIds: fromJson<string[]>(row.message_ids),
    importance: Number(row.importance),
    statedMicros: Number(row.stated_micros),
    createdMicros: Number(row.created_micros),
    updatedMicros: Number(row.updated_micros),
    supersededMicros: row.superseded_micros === null ? null : Number(row.superseded_micros),
    supersededBy: row.superseded_by,
    ...(row.replaces === null ? {} : { replaces: row.replaces }),
  };
}
