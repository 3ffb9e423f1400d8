import { type Kysely, sql } from 'kysely';
import { AppError, notFound } from '../../core/errors.js';
import { type Lorebook, type LorebookEntry, type LorebookSettings, defaultLorebookSettings } from '../../core/lorebook/lorebook.js';
import type { LorebookRepository } from '../../core/repositories.js';
import type { Database } from './schema.js';
import { type SqlContext, atomic, forUpdate } from './sql-context.js';

/**
 * Lorebooks: the settings as one JSON column of the character's row, each entry a row holding
 * its fields as JSON (nothing queries inside an entry: activation reads the whole book).
 */
export class SqlLorebookRepository implements LorebookRepository {
  constructor(private readonly context: SqlContext) {}

  async get(characterId: string): Promise<Lorebook> {
    const { db } = this.context;
    const [character, rows] = await Promise.all([
      db.selectFrom('characters').select('lorebook_settings').where('id', '=', characterId).executeTakeFirst(),
      db.selectFrom('lorebook_entries').select(['id', 'entry']).where('character_id', '=', characterId).orderBy('position').execute(),
    ]);
    return {
      settings: { ...defaultLorebookSettings, ...(JSON.parse(character?.lorebook_settings ?? '{}') as Partial<LorebookSettings>) },
      entries: rows.map((row) => ({ ...(JSON.parse(row.entry) as Omit<LorebookEntry, 'id'>), id: row.id })),
    };
  }

  async lock(characterId: string): Promise<void> {
    // The character's row (PostgreSQL); SQLite's transactions hold the file's one write lock already.
    const row = await forUpdate(this.context, this.context.db.selectFrom('characters').select('id').where('id', '=', characterId)).executeTakeFirst();
    if (!row) throw notFound('Character', characterId);
  }

  async setSettings(characterId: string, settings: LorebookSettings): Promise<void> {
    const result = await this.context.db
      .updateTable('characters')
      .set({ lorebook_settings: JSON.stringify(settings), lorebook_revision: nextRevision })
      .where('id', '=', characterId)
      .executeTakeFirst();
    if (result.numUpdatedRows === 0n) throw notFound('Character', characterId);
  }

  addEntry(characterId: string, entry: LorebookEntry, maxEntries: number): Promise<LorebookEntry> {
    return atomic(this.context.db, async (db) => {
      // The character's row lock makes count-then-insert safe against a concurrent add.
      const character = await forUpdate(this.context, db.selectFrom('characters').select('id').where('id', '=', characterId)).executeTakeFirst();
      if (!character) throw notFound('Character', characterId);
      const { count } = await db
        .selectFrom('lorebook_entries')
        .select((expression) => expression.fn.countAll<number>().as('count'))
        .where('character_id', '=', characterId)
        .executeTakeFirstOrThrow();
      if (Number(count) >= maxEntries) {
        throw new AppError('CONFLICT', `A lorebook holds at most ${maxEntries} entries; delete some first.`, { details: { limit: maxEntries } });
      }
      await db.insertInto('lorebook_entries').values(entryRow(characterId, entry)).execute();
      await bump(db, characterId);
      return entry;
    });
  }

  updateEntry(characterId: string, entry: LorebookEntry): Promise<LorebookEntry> {
    return atomic(this.context.db, async (db) => {
      const result = await db
        .updateTable('lorebook_entries')
        .set({ entry: entryRow(characterId, entry).entry })
        .where('character_id', '=', characterId)
        .where('id', '=', entry.id)
        .executeTakeFirst();
      if (result.numUpdatedRows === 0n) throw notFound('Lorebook entry', entry.id);
      await bump(db, characterId);
      return entry;
    });
  }

  removeEntry(characterId: string, entryId: string): Promise<boolean> {
    return atomic(this.context.db, async (db) => {
      const result = await db.deleteFrom('lorebook_entries').where('character_id', '=', characterId).where('id', '=', entryId).executeTakeFirst();
      if (result.numDeletedRows === 0n) return false;
      await bump(db, characterId);
      return true;
    });
  }

  async recordUse(messageId: string, alternativeId: string, entryIds: readonly string[]): Promise<void> {
    const unique = [...new Set(entryIds)];
    if (unique.length === 0) return;
    await this.context.db
      .insertInto('reply_lorebook_entries')
      .values(unique.map((entryId) => ({ message_id: messageId, alternative_id: alternativeId, entry_id: entryId })))
      .onConflict((conflict) => conflict.columns(['message_id', 'alternative_id', 'entry_id']).doNothing())
      .execute();
  }

  async usedBy(messageId: string, alternativeId: string): Promise<string[]> {
    const rows = await this.context.db
      .selectFrom('reply_lorebook_entries')
      .select('entry_id')
      .where('message_id', '=', messageId)
      .where('alternative_id', '=', alternativeId)
      .orderBy('position')
      .execute();
    return rows.map((row) => row.entry_id);
  }

  replace(characterId: string, lorebook: Lorebook): Promise<void> {
    return atomic(this.context.db, async (db) => {
      const result = await db
        .updateTable('characters')
        .set({ lorebook_settings: JSON.stringify(lorebook.settings), lorebook_revision: nextRevision })
        .where('id', '=', characterId)
        .executeTakeFirst();
      if (result.numUpdatedRows === 0n) throw notFound('Character', characterId);
      await db.deleteFrom('lorebook_entries').where('character_id', '=', characterId).execute();
      // In the entries' order, so positions (and the book's order) follow it; a hundred rows a
      // statement, with the event loop served between: a card's 2,000 entries one statement
      // each held it for a quarter of a second.
      for (let start = 0; start < lorebook.entries.length; start += insertBatch) {
        if (start > 0) await new Promise((resolve) => setImmediate(resolve));
        const rows = lorebook.entries.slice(start, start + insertBatch).map((entry) => entryRow(characterId, entry));
        await db.insertInto('lorebook_entries').values(rows).execute();
      }
    });
  }
}

/** Entries a statement inserts: three parameters each, far within either database's limit. */
const insertBatch = 100;

/** The next revision, computed by the database in the writing transaction. */
const nextRevision = sql<number>`lorebook_revision + 1`;

/** Moves the character's lorebook revision: any prompt holding the book parsed at the old one reads it again. */
async function bump(db: Kysely<Database>, characterId: string): Promise<void> {
  await db.updateTable('characters').set({ lorebook_revision: nextRevision }).where('id', '=', characterId).execute();
}

function entryRow(characterId: string, entry: LorebookEntry) {
  const { id, ...fields } = entry;
  return { id, character_id: characterId, entry: JSON.stringify(fields) };
}
