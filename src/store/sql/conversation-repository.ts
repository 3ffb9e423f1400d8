import { type Selectable, sql } from 'kysely';
import { notFound } from '../../core/errors.js';
import type {
  ConversationRepository,
  ConversationState,
  MessageAlternative,
  MessageRange,
  MessageSnapshot,
  NewStoredMessage,
  StoredConversation,
  StoredMessage,
} from '../../core/repositories.js';
import { accountRecord } from './account-repository.js';
import { characterRecord } from './character-repository.js';
import { PreparedQuery, type SqlContext, atomic, isForeignKeyViolation } from './sql-context.js';
import type { Database } from './schema.js';
import { SqlMessageAlternatives, messageRecord, revisionOf } from './message-alternatives.js';

/**
 * Conversations and their messages. A message's order is the identity column the database
 * gives at insert: one statement, no counter read and written back, so concurrent appends
 * from any number of processes are each stored once and every reader sees one order.
 */
export class SqlConversationRepository implements ConversationRepository {
  readonly #alternatives: SqlMessageAlternatives;

  constructor(private readonly context: SqlContext) {
    this.#alternatives = new SqlMessageAlternatives(context);
  }

  create(conversation: StoredConversation, firstSpeakerAccountId: string): Promise<StoredConversation> {
    return atomic(this.context.db, async (db) => {
      await db
        .insertInto('conversations')
        .values({
          id: conversation.id,
          account_id: conversation.accountId,
          character_id: conversation.characterId,
          created_micros: conversation.createdMicros,
          updated_micros: conversation.updatedMicros,
          summary: conversation.summary,
          summary_through_position: conversation.summaryThroughPosition,
        })
        .execute();
      await db
        .insertInto('conversation_speakers')
        .values({ conversation_id: conversation.id, account_id: firstSpeakerAccountId, joined_micros: conversation.createdMicros })
        .execute();
      await db
        .insertInto('conversation_characters')
        .values({ conversation_id: conversation.id, character_id: conversation.characterId, joined_micros: conversation.createdMicros })
        .execute();
      return conversation;
    });
  }

  async get(conversationId: string): Promise<StoredConversation | undefined> {
    const row = await this.context.db.selectFrom('conversations').selectAll().where('id', '=', conversationId).executeTakeFirst();
    return row && conversationRecord(row);
  }

  async listFor(accountId: string, page: { limit: number; cursor?: string | undefined }): Promise<{ conversations: StoredConversation[]; nextCursor: string | null }> {
    // The index on (account_id, position) serves the page: one more row says whether more follow.
    let query = this.context.db
      .selectFrom('conversation_speakers')
      .innerJoin('conversations', 'conversations.id', 'conversation_speakers.conversation_id')
      .selectAll('conversations')
      .select('conversation_speakers.position as speaker_position')
      .where('conversation_speakers.account_id', '=', accountId)
      .orderBy('conversation_speakers.position', 'desc')
      .limit(page.limit + 1);
    if (page.cursor !== undefined) query = query.where('conversation_speakers.position', '<', Number(page.cursor));
    const rows = await query.execute();
    const shown = rows.slice(0, page.limit);
    const last = shown.at(-1);
    return { conversations: shown.map(conversationRecord), nextCursor: rows.length > page.limit && last ? String(last.speaker_position) : null };
  }

  async speakers(conversationId: string): Promise<string[]> {
    const rows = await this.context.db
      .selectFrom('conversation_speakers')
      .select('account_id')
      .where('conversation_id', '=', conversationId)
      .orderBy('position')
      .execute();
    return rows.map((row) => row.account_id);
  }

  async addSpeaker(conversationId: string, accountId: string, joinedMicros: number): Promise<boolean> {
    const result = await this.context.db
      .insertInto('conversation_speakers')
      .values({ conversation_id: conversationId, account_id: accountId, joined_micros: joinedMicros })
      .onConflict((conflict) => conflict.columns(['conversation_id', 'account_id']).doNothing())
      .executeTakeFirst();
    return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
  }

  async removeSpeaker(conversationId: string, accountId: string): Promise<boolean> {
    const result = await this.context.db.deleteFrom('conversation_speakers').where('conversation_id', '=', conversationId).where('account_id', '=', accountId).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  async characters(conversationId: string): Promise<string[]> {
    const rows = await this.context.db
      .selectFrom('conversation_characters')
      .select('character_id')
      .where('conversation_id', '=', conversationId)
      .orderBy('position')
      .execute();
    return rows.map((row) => row.character_id);
  }

  async addCharacter(conversationId: string, characterId: string, joinedMicros: number): Promise<boolean> {
    try {
      const result = await this.context.db
        .insertInto('conversation_characters')
        .values({ conversation_id: conversationId, character_id: characterId, joined_micros: joinedMicros })
        .onConflict((conflict) => conflict.columns(['conversation_id', 'character_id']).doNothing())
        .executeTakeFirst();
      return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
    } catch (error) {
      if (isForeignKeyViolation(error)) throw notFound('Conversation or character', `${conversationId}/${characterId}`);
      throw error;
    }
  }

  async removeCharacter(conversationId: string, characterId: string): Promise<boolean> {
    const result = await this.context.db
      .deleteFrom('conversation_characters')
      .where('conversation_id', '=', conversationId)
      .where('character_id', '=', characterId)
      .executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  /**
   * Appends after every message before it, at a `created` time no earlier than theirs: clocks
   * of several processes (or one process's appends finishing out of turn) would otherwise give
   * the order and the times read two different stories. The time is the later of the message's
   * own and the conversation's newest, read in the INSERT itself. On SQLite that one statement
   * holds the file's write lock; on PostgreSQL appends hold the conversation's row
   * `FOR NO KEY UPDATE` in turn (the foreign-key checks of other inserts, `FOR KEY SHARE`, do not
   * wait for it), so each INSERT's snapshot, taken after the lock, sees the one before.
   */
  append(conversationId: string, message: NewStoredMessage): Promise<StoredMessage> {
    const alternatives = message.alternatives ?? [];
    if (alternatives.length < 2 && this.context.dialect !== 'postgres') return this.#insert(this.context.db, conversationId, message);
    return atomic(this.context.db, async (db) => {
      if (this.context.dialect === 'postgres') {
        await db.selectFrom('conversations').select('id').where('id', '=', conversationId).forNoKeyUpdate().executeTakeFirst();
      }
      return this.#insert(db, conversationId, message);
    });
  }

  addAlternative(conversationId: string, messageId: string, alternative: MessageAlternative): Promise<StoredMessage> {
    return this.#alternatives.addAlternative(conversationId, messageId, alternative);
  }

  chooseAlternative(conversationId: string, messageId: string, index: number): Promise<StoredMessage> {
    return this.#alternatives.chooseAlternative(conversationId, messageId, index);
  }

  async #insert(db: SqlContext['db'], conversationId: string, message: NewStoredMessage): Promise<StoredMessage> {
    const alternatives = message.alternatives ?? [];
    const several = alternatives.length > 1;
    const chosenIndex = several ? (message.chosenIndex ?? 0) : 0;
    // With several alternatives the row holds the chosen one's text, as after any swipe.
    const chosen = several ? alternatives[chosenIndex] : undefined;
    if (several && !chosen) throw new RangeError(`chosenIndex ${chosenIndex} is outside the ${alternatives.length} alternatives`);
    const content = chosen?.content ?? message.content;
    const finishReason = chosen ? chosen.finishReason : message.finishReason;
    try {
      const row = await db
        .insertInto('messages')
        .values({
          id: message.id,
          conversation_id: conversationId,
          content,
          mime_type: message.mimeType,
          participant_id: message.participantId,
          participant_type: message.participantType,
          created_micros: this.#notBeforeNewest(db, conversationId, message.createdMicros),
          file_key: message.file?.key ?? null,
          file_mime_type: message.file?.mimeType ?? null,
          file_width: message.file?.width ?? null,
          file_height: message.file?.height ?? null,
          finish_reason: finishReason ?? null,
          swipe_count: several ? alternatives.length : 1,
          swipe_index: chosenIndex,
          is_greeting: message.greeting ? 1 : 0,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      await this.#alternatives.insert(db, message.id, message);
      return messageRecord(row, several ? alternatives : undefined);
    } catch (error) {
      if (isForeignKeyViolation(error)) throw notFound('Conversation', conversationId);
      throw error;
    }
  }

  /** The later of `createdMicros` and the conversation's newest message's time, as SQL. */
  #notBeforeNewest(db: SqlContext['db'], conversationId: string, createdMicros: number) {
    const newest = db
      .selectFrom('messages')
      .select('created_micros')
      .where('conversation_id', '=', conversationId)
      .orderBy('position', 'desc')
      .limit(1);
    return this.context.dialect === 'postgres'
      ? sql<number>`greatest(cast(${createdMicros} as bigint), coalesce((${newest}), 0))`
      : sql<number>`max(${createdMicros}, coalesce((${newest}), 0))`;
  }

  async state(conversationId: string): Promise<ConversationState | undefined> {
    const [[row], speakers, characters] = await Promise.all([
      conversationWithCharacter.run(this.context, conversationId),
      speakerAccounts.run(this.context, conversationId),
      sceneCharacters.run(this.context, conversationId),
    ]);
    if (!row) return undefined;
    return {
      conversation: conversationRecord({
        id: conversationId,
        account_id: row.conversation_account_id,
        character_id: row.id,
        created_micros: row.conversation_created_micros,
        updated_micros: row.conversation_updated_micros,
        summary: row.conversation_summary,
        summary_through_position: row.conversation_summary_through_position,
      }),
      character: characterRecord(row),
      speakers: speakers.map(accountRecord),
      characters: characters.map(characterRecord),
      lastPosition: row.last_position === null || row.last_position === undefined ? null : Number(row.last_position),
      newestRevision: row.last_position === null || row.last_position === undefined ? null : revisionOf({ swipe_count: row.last_swipe_count ?? 1, swipe_index: row.last_swipe_index ?? 0 }),
    };
  }

  async snapshot(conversationId: string): Promise<MessageSnapshot> {
    const rows = await this.context.db.selectFrom('messages').selectAll().where('conversation_id', '=', conversationId).orderBy('position').execute();
    const last = rows.at(-1);
    // The alternatives come from a second read, cut to what each row counts: the list agrees with the rows.
    return {
      lastPosition: last === undefined ? null : Number(last.position),
      newestRevision: revisionOf(last),
      messages: await this.#alternatives.messages(this.context.db, rows),
    };
  }

  async messages(conversationId: string, range: MessageRange = {}): Promise<StoredMessage[]> {
    let query = this.context.db.selectFrom('messages').selectAll().where('conversation_id', '=', conversationId);
    if (range.afterPosition !== undefined) query = query.where('position', '>', range.afterPosition);
    if (range.beforePosition !== undefined) query = query.where('position', '<', range.beforePosition);
    query = query.orderBy('position', range.newest ? 'desc' : 'asc');
    if (range.limit !== undefined) query = query.limit(range.limit);
    const rows = await query.execute();
    return this.#alternatives.messages(this.context.db, range.newest ? rows.reverse() : rows);
  }

  async lastMessage(conversationId: string): Promise<StoredMessage | undefined> {
    const [last] = await this.messages(conversationId, { newest: true, limit: 1 });
    return last;
  }

  async countMessages(conversationId: string): Promise<number> {
    const { count } = await this.context.db
      .selectFrom('messages')
      .select((expression) => expression.fn.countAll<number>().as('count'))
      .where('conversation_id', '=', conversationId)
      .executeTakeFirstOrThrow();
    return Number(count);
  }

  clear(conversationId: string, updatedMicros: number): Promise<void> {
    return atomic(this.context.db, async (db) => {
      await db.deleteFrom('messages').where('conversation_id', '=', conversationId).execute();
      await db
        .updateTable('conversations')
        .set({ updated_micros: updatedMicros, summary: null, summary_through_position: null })
        .where('id', '=', conversationId)
        .execute();
    });
  }

  async setSummary(conversationId: string, summary: string | null, throughPosition: number | null): Promise<void> {
    const result = await this.context.db
      .updateTable('conversations')
      .set({ summary, summary_through_position: throughPosition })
      .where('id', '=', conversationId)
      .executeTakeFirst();
    if (result.numUpdatedRows === 0n) throw notFound('Conversation', conversationId);
  }
}

/**
 * The conversation read's two queries, prepared once (see `PreparedQuery`): the conversation
 * with its character and newest position, and its speakers' accounts in the order they joined.
 */
const conversationWithCharacter = new PreparedQuery(1, (db, conversationId) =>
  db
    .selectFrom('conversations')
    .innerJoin('characters', 'characters.id', 'conversations.character_id')
    .selectAll('characters')
    .select([
      'conversations.account_id as conversation_account_id',
      'conversations.created_micros as conversation_created_micros',
      'conversations.updated_micros as conversation_updated_micros',
      'conversations.summary as conversation_summary',
      'conversations.summary_through_position as conversation_summary_through_position',
    ])
    .select((expression) =>
      // The newest row by the (conversation_id, position) index: one step, not a scan.
      expression
        .selectFrom('messages')
        .select('messages.position')
        .whereRef('messages.conversation_id', '=', 'conversations.id')
        .orderBy('messages.position', 'desc')
        .limit(1)
        .as('last_position'),
    )
    // Its alternatives and choice, which a swipe changes while the position stays.
    .select((expression) =>
      expression.selectFrom('messages').select('messages.swipe_count').whereRef('messages.conversation_id', '=', 'conversations.id').orderBy('messages.position', 'desc').limit(1).as('last_swipe_count'),
    )
    .select((expression) =>
      expression.selectFrom('messages').select('messages.swipe_index').whereRef('messages.conversation_id', '=', 'conversations.id').orderBy('messages.position', 'desc').limit(1).as('last_swipe_index'),
    )
    .where('conversations.id', '=', conversationId),
);

const speakerAccounts = new PreparedQuery(1, (db, conversationId) =>
  db
    .selectFrom('conversation_speakers')
    .innerJoin('accounts', 'accounts.id', 'conversation_speakers.account_id')
    .selectAll('accounts')
    .where('conversation_speakers.conversation_id', '=', conversationId)
    .orderBy('conversation_speakers.position'),
);

const sceneCharacters = new PreparedQuery(1, (db, conversationId) =>
  db
    .selectFrom('conversation_characters')
    .innerJoin('characters', 'characters.id', 'conversation_characters.character_id')
    .selectAll('characters')
    .where('conversation_characters.conversation_id', '=', conversationId)
    .orderBy('conversation_characters.position'),
);

function conversationRecord(row: Selectable<Database['conversations']>): StoredConversation {
  return {
    id: row.id,
    accountId: row.account_id,
    characterId: row.character_id,
    createdMicros: Number(row.created_micros),
    updatedMicros: Number(row.updated_micros),
    summary: row.summary,
    summaryThroughPosition: row.summary_through_position === null ? null : Number(row.summary_through_position),
  };
}
