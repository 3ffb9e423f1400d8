import type { Kysely, Selectable } from 'kysely';
import { ValidationError, notFound, notNewestReply } from '../../core/errors.js';
import type { MessageAlternative, NewStoredMessage, StoredMessage } from '../../core/repositories.js';
import type { FileReference, ParticipantType } from '../../core/records.js';
import { type SqlContext, atomic, forUpdate } from './sql-context.js';
import type { Database } from './schema.js';

type MessageRow = Selectable<Database['messages']>;

/**
 * A message's alternatives (swipes), kept in `message_alternatives` once a message has more than
 * one: a message with one is just its row. The row's `content` and `finish_reason` are always
 * the chosen alternative's, so every read of the history (the prompt, the summary, learning)
 * goes on from the chosen one without a join.
 */
export class SqlMessageAlternatives {
  constructor(private readonly context: SqlContext) {}

  /** The rows as messages, with the alternatives of those that have several, read in one statement. */
  async messages(db: Kysely<Database>, rows: readonly MessageRow[]): Promise<StoredMessage[]> {
    const several = rows.filter((row) => Number(row.swipe_count) > 1).map((row) => row.id);
    if (several.length === 0) return rows.map((row) => messageRecord(row));
    const found = await db.selectFrom('message_alternatives').selectAll().where('message_id', 'in', several).orderBy('alternative_index').execute();
    const byMessage = new Map<string, MessageAlternative[]>();
    for (const alternative of found) {
      const list = byMessage.get(alternative.message_id) ?? [];
      list.push(alternativeRecord(alternative));
      byMessage.set(alternative.message_id, list);
    }
    return rows.map((row) => messageRecord(row, byMessage.get(row.id)));
  }

  /** Inserts a message's alternatives when it comes with several (a greeting and its alternates). */
  async insert(db: Kysely<Database>, messageId: string, message: NewStoredMessage): Promise<void> {
    const alternatives = message.alternatives ?? [];
    if (alternatives.length < 2) return;
    await db
      .insertInto('message_alternatives')
      .values(alternatives.map((alternative, index) => ({ message_id: messageId, alternative_index: index, ...alternativeRow(alternative) })))
      .execute();
  }

  addAlternative(conversationId: string, messageId: string, alternative: MessageAlternative): Promise<StoredMessage> {
    return atomic(this.context.db, async (db) => {
      const row = await this.#newestReply(db, conversationId, messageId);
      const count = Number(row.swipe_count);
      // A message with one alternative has none stored: its row is the first, under its own id.
      if (count === 1) {
        await db
          .insertInto('message_alternatives')
          .values({ message_id: row.id, alternative_index: 0, id: row.id, content: row.content, finish_reason: row.finish_reason, created_micros: Number(row.created_micros) })
          .execute();
      }
      await db.insertInto('message_alternatives').values({ message_id: row.id, alternative_index: count, ...alternativeRow(alternative) }).execute();
      const updated = await db
        .updateTable('messages')
        .set({ swipe_count: count + 1, swipe_index: count, content: alternative.content, finish_reason: alternative.finishReason ?? null })
        .where('id', '=', row.id)
        .returningAll()
        .executeTakeFirstOrThrow();
      return (await this.messages(db, [updated]))[0]!;
    });
  }

  chooseAlternative(conversationId: string, messageId: string, index: number): Promise<StoredMessage> {
    return atomic(this.context.db, async (db) => {
      const row = await this.#newestReply(db, conversationId, messageId);
      const count = Number(row.swipe_count);
      if (!Number.isInteger(index) || index < 0 || index >= count) {
        throw ValidationError.field('index', `must be an integer from 0 to ${count - 1}: the message has ${count} alternative${count === 1 ? '' : 's'}`);
      }
      if (count === 1 || index === Number(row.swipe_index)) return (await this.messages(db, [row]))[0]!;
      const chosen = await db
        .selectFrom('message_alternatives')
        .selectAll()
        .where('message_id', '=', row.id)
        .where('alternative_index', '=', index)
        .executeTakeFirstOrThrow();
      const updated = await db
        .updateTable('messages')
        .set({ swipe_index: index, content: chosen.content, finish_reason: chosen.finish_reason })
        .where('id', '=', row.id)
        .returningAll()
        .executeTakeFirstOrThrow();
      return (await this.messages(db, [updated]))[0]!;
    });
  }

  /**
   * The message's row, only while it is a character's message with nothing after it; the
   * conversation's row is held until the transaction ends, so "nothing after it" stays true
   * until this commits.
   *
   * On PostgreSQL an append holds the conversation's row `FOR NO KEY UPDATE` until it commits:
   * `FOR UPDATE` here waits for every append in flight (and they for this), and after the wait
   * the next statement sees what they wrote. The positions stay the identity column's. The
   * message's own row alone would not do: under READ COMMITTED an append committing between the
   * check and this commit went unseen. SQLite's transactions hold the file's one write lock.
   */
  async #newestReply(db: Kysely<Database>, conversationId: string, messageId: string): Promise<MessageRow> {
    const context = { ...this.context, db };
    const conversation = await forUpdate(context, db.selectFrom('conversations').select('id').where('id', '=', conversationId)).executeTakeFirst();
    if (!conversation) throw notFound('Message', messageId);
    const row = await db.selectFrom('messages').selectAll().where('id', '=', messageId).where('conversation_id', '=', conversationId).executeTakeFirst();
    if (!row) throw notFound('Message', messageId);
    const later = await db.selectFrom('messages').select('id').where('conversation_id', '=', conversationId).where('position', '>', row.position).limit(1).executeTakeFirst();
    if (later || row.participant_type !== 'character') throw notNewestReply(messageId);
    return row;
  }
}

/** `count:chosen` of a message, which changes with a swipe or a regeneration while its position stays. */
export function revisionOf(row: { swipe_count: number | string; swipe_index: number | string } | undefined): string | null {
  return row === undefined ? null : `${Number(row.swipe_count)}:${Number(row.swipe_index)}`;
}

/**
 * A row as a message. Alternatives added after the row was read (another process, between two
 * reads) are left out, so the list always agrees with the row's count and choice; when they
 * are not all there (cleared meanwhile), the row alone stands for its message.
 */
export function messageRecord(row: MessageRow, stored?: readonly MessageAlternative[]): StoredMessage {
  const count = Number(row.swipe_count);
  const own: MessageAlternative = {
    id: row.id,
    content: row.content,
    ...(row.finish_reason === null ? {} : { finishReason: row.finish_reason }),
    createdMicros: Number(row.created_micros),
  };
  const alternatives = stored !== undefined && stored.length >= count ? stored.slice(0, count) : [own];
  return {
    id: row.id,
    conversationId: row.conversation_id,
    position: Number(row.position),
    content: row.content,
    mimeType: row.mime_type,
    participantId: row.participant_id,
    participantType: row.participant_type as ParticipantType,
    createdMicros: Number(row.created_micros),
    file: row.file_key === null ? null : fileReference(row),
    ...(row.finish_reason === null ? {} : { finishReason: row.finish_reason }),
    ...(Number(row.is_greeting) === 1 ? { greeting: true as const } : {}),
    alternatives,
    chosenIndex: alternatives.length === 1 ? 0 : Number(row.swipe_index),
  };
}

function alternativeRecord(row: Selectable<Database['message_alternatives']>): MessageAlternative {
  return {
    id: row.id,
    content: row.content,
    ...(row.finish_reason === null ? {} : { finishReason: row.finish_reason }),
    createdMicros: Number(row.created_micros),
  };
}

function alternativeRow(alternative: MessageAlternative) {
  return { id: alternative.id, content: alternative.content, finish_reason: alternative.finishReason ?? null, created_micros: alternative.createdMicros };
}

function fileReference(row: MessageRow): FileReference {
  return {
    key: row.file_key ?? '',
    mimeType: row.file_mime_type ?? 'application/octet-stream',
    ...(row.file_width === null ? {} : { width: Number(row.file_width) }),
    ...(row.file_height === null ? {} : { height: Number(row.file_height) }),
  };
}
