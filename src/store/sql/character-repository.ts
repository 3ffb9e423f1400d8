import { type Insertable, type Selectable, sql } from 'kysely';
import { AppError, characterLimitReached, notFound } from '../../core/errors.js';
import type { CharacterListOptions, CharacterPage, CharacterRepository, MemoryRepository } from '../../core/repositories.js';
import { listCharacters } from './character-list.js';
import { type CharacterDefinition, type CharacterRecord, type MemoryRecord, emptyCharacterDefinition } from '../../core/records.js';
import { type SqlContext, atomic, forUpdate } from './sql-context.js';
import { SqlReplyMemoryRepository } from './reply-memory-repository.js';
import type { CharactersTable, Database } from './schema.js';

/** The largest code point: `prefix + this` is above every name that starts with `prefix`. */
export const afterEveryName = String.fromCodePoint(0x10ffff);

/**
 * Characters. Autocomplete never loads every character: an account's own are found through
 * the (account_id, name_lower) index, public ones by an index range on name_lower (byte order
 * in both dialects, see the migration), each query LIMITed.
 */
export class SqlCharacterRepository implements CharacterRepository {
  constructor(private readonly context: SqlContext) {}

  async create(character: CharacterRecord): Promise<CharacterRecord> {
    await this.context.db.insertInto('characters').values(characterRow(character)).execute();
    return character;
  }

  async get(characterId: string): Promise<CharacterRecord | undefined> {
    const row = await this.context.db.selectFrom('characters').selectAll().where('id', '=', characterId).executeTakeFirst();
    return row && characterRecord(row);
  }

  async hold(characterId: string): Promise<CharacterRecord | undefined> {
    // A share lock on PostgreSQL (an update waits for it, and it for an update in flight);
    // SQLite's transactions hold the file's one write lock already.
    const query = this.context.db.selectFrom('characters').selectAll().where('id', '=', characterId);
    const row = await (this.context.dialect === 'postgres' ? query.forShare() : query).executeTakeFirst();
    return row && characterRecord(row);
  }

  async update(character: CharacterRecord): Promise<CharacterRecord> {
    const { id, account_id, created_micros, ...fields } = characterRow(character);
    const result = await this.context.db.updateTable('characters').set(fields).where('id', '=', id).executeTakeFirst();
    if (result.numUpdatedRows === 0n) throw notFound('Character', id);
    return character;
  }

  async search(query: string, options: { accountId: string | null; limit: number }): Promise<CharacterRecord[]> {
    const needle = query.trim().toLowerCase();
    const limit = Math.max(0, Math.min(options.limit, 100));
    if (limit === 0) return [];
    const { db } = this.context;
    const own =
      options.accountId === null
        ? []
        : await db
            .selectFrom('characters')
            .selectAll()
            .where('account_id', '=', options.accountId)
            .where('deleted_micros', 'is', null)
            .where(sql<boolean>`name_lower like ${`%${escapeLike(needle)}%`} escape '\\'`)
            .orderBy('name_lower')
            .limit(limit)
            .execute();
    if (own.length >= limit) return own.map(characterRecord);
    let others = db
      .selectFrom('characters')
      .selectAll()
      .where('name_lower', '>=', needle)
      .where('name_lower', '<', needle + afterEveryName)
      .where('deleted_micros', 'is', null)
      .orderBy('name_lower')
      .limit(limit - own.length);
    if (options.accountId !== null) others = others.where('is_public', '=', 1).where('account_id', '<>', options.accountId);
    return [...own, ...(await others.execute())].map(characterRecord);
  }

  createWithin(character: CharacterRecord, maxPerAccount: number): Promise<CharacterRecord> {
    return atomic(this.context.db, async (db) => {
      // The account's row lock makes count-then-insert safe against a concurrent creation.
      const account = await forUpdate(this.context, db.selectFrom('accounts').select('id').where('id', '=', character.accountId)).executeTakeFirst();
      if (!account) throw notFound('Account', character.accountId);
      const { count } = await db
        .selectFrom('characters')
        .select((expression) => expression.fn.countAll<number>().as('count'))
        .where('account_id', '=', character.accountId)
        .where('deleted_micros', 'is', null)
        .executeTakeFirstOrThrow();
      if (Number(count) >= maxPerAccount) throw characterLimitReached(maxPerAccount);
      await db.insertInto('characters').values(characterRow(character)).execute();
      return character;
    });
  }

  list(options: CharacterListOptions): Promise<CharacterPage> {
    return listCharacters(this.context, options);
  }

  async countOwned(accountId: string): Promise<number> {
    const { count } = await this.context.db
      .selectFrom('characters')
      .select((expression) => expression.fn.countAll<number>().as('count'))
      .where('account_id', '=', accountId)
      .where('deleted_micros', 'is', null)
      .executeTakeFirstOrThrow();
    return Number(count);
  }

  purge(characterId: string, deletedMicros: number): Promise<string[]> {
    return atomic(this.context.db, async (db) => {
      const row = await forUpdate(this.context, db.selectFrom('characters').selectAll().where('id', '=', characterId)).executeTakeFirst();
      if (!row) throw notFound('Character', characterId);
      const faceArchives = await db.selectFrom('face_models').select('archive_key').where('character_id', '=', characterId).execute();
      // Which replies used its memories goes with them, as when a memory is deleted alone.
      for (const table of ['memories', 'learned_memories'] as const) {
        await db
          .deleteFrom('reply_memories')
          .where('memory_id', 'in', db.selectFrom(table).select('id').where('character_id', '=', characterId))
          .execute();
      }
      for (const table of ownedByCharacter) await db.deleteFrom(table).where('character_id', '=', characterId).execute();
      await db
        .updateTable('characters')
        .set({
          description: '',
          personality_summary: '',
          is_public: 0,
          avatar_key: null,
          avatar_mime_type: null,
          tts_voice_id: null,
          definition: '{}',
          lorebook_settings: '{}',
          lorebook_revision: sql`lorebook_revision + 1`,
          deleted_micros: deletedMicros,
          updated_micros: deletedMicros,
        })
        .where('id', '=', characterId)
        .execute();
      const keys = [row.avatar_key, ...faceArchives.map((face) => face.archive_key)].filter((key): key is string => key !== null);
      return [...new Set(keys)];
    });
  }
}

/**
 * What a deleted character takes with it. Conversations, their messages and scene places stay:
 * people's words are theirs, and the character is shown there as deleted.
 */
const ownedByCharacter = [
  'memory_batch_parts',
  'memories',
  'learned_memories',
  'memory_spending',
  'lorebook_entries',
  'face_models',
  'discord_channel_characters',
  'discord_dm_characters',
  'discord_dm_conversations',
] as const;

/** A character's memories, in the order they were written. */
export class SqlMemoryRepository implements MemoryRepository {
  constructor(private readonly context: SqlContext) {}

  async list(characterId: string): Promise<MemoryRecord[]> {
    const rows = await this.context.db
      .selectFrom('memories')
      .select(['id', 'text', 'created_micros'])
      .where('character_id', '=', characterId)
      .orderBy('position')
      .execute();
    return rows.map((row) => ({ id: row.id, text: row.text, createdMicros: Number(row.created_micros) }));
  }

  add(characterId: string, memory: MemoryRecord, maxCount: number): Promise<MemoryRecord> {
    return atomic(this.context.db, async (db) => {
      // The character's row lock makes count-then-insert safe against a concurrent add.
      const character = await forUpdate(this.context, db.selectFrom('characters').select('id').where('id', '=', characterId)).executeTakeFirst();
      if (!character) throw notFound('Character', characterId);
      const { count } = await db
        .selectFrom('memories')
        .select((expression) => expression.fn.countAll<number>().as('count'))
        .where('character_id', '=', characterId)
        .executeTakeFirstOrThrow();
      if (Number(count) >= maxCount) {
        throw new AppError('CONFLICT', `A character holds at most ${maxCount} memories; forget some first.`);
      }
      await db
        .insertInto('memories')
        .values({ id: memory.id, character_id: characterId, text: memory.text, created_micros: memory.createdMicros })
        .execute();
      return memory;
    });
  }

  /** With the records of replies written with it, in one transaction. */
  remove(characterId: string, memoryId: string): Promise<boolean> {
    return atomic(this.context.db, async (db) => {
      const result = await db.deleteFrom('memories').where('character_id', '=', characterId).where('id', '=', memoryId).executeTakeFirst();
      if (result.numDeletedRows === 0n) return false;
      await new SqlReplyMemoryRepository({ ...this.context, db }).forget([memoryId]);
      return true;
    });
  }
}

export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (character) => `\\${character}`);
}

export function characterRow(character: CharacterRecord): Insertable<CharactersTable> {
  return {
    id: character.id,
    account_id: character.accountId,
    name: character.name,
    name_lower: character.name.toLowerCase(),
    description: character.description,
    personality_summary: character.personalitySummary,
    is_public: character.isPublic ? 1 : 0,
    avatar_key: character.avatar?.key ?? null,
    avatar_mime_type: character.avatar?.mimeType ?? null,
    tts_voice_id: character.ttsVoiceId,
    created_micros: character.createdMicros,
    updated_micros: character.updatedMicros,
    definition: JSON.stringify(character.definition),
    deleted_micros: character.deletedMicros,
  };
}

export function characterRecord(row: Selectable<Database['characters']>): CharacterRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    description: row.description,
    personalitySummary: row.personality_summary,
    isPublic: row.is_public === 1,
    avatar: row.avatar_key === null ? null : { key: row.avatar_key, mimeType: row.avatar_mime_type ?? 'application/octet-stream' },
    ttsVoiceId: row.tts_voice_id,
    createdMicros: Number(row.created_micros),
    updatedMicros: Number(row.updated_micros),
    definition: parseDefinition(row.definition),
    deletedMicros: row.deleted_micros === null ? null : Number(row.deleted_micros),
    lorebookRevision: Number(row.lorebook_revision),
  };
}

/** Rows from before definitions (`'{}'`) and fields added later read as the empty definition's. */
function parseDefinition(json: string): CharacterDefinition {
  return { ...emptyCharacterDefinition, ...(JSON.parse(json) as Partial<CharacterDefinition>) };
}
