import { messageAlternatives } from './message-alternatives-migration.js';
import { type ColumnDefinitionBuilder, type CreateTableBuilder, type Kysely, type Migration, Migrator, sql } from 'kysely';

export type SqlDialectName = 'sqlite' | 'postgres';

/** Any PostgreSQL advisory lock key of ours; "likeness" in ASCII, so it is easy to spot in pg_locks. */
const migrationLockKey = 0x6c696b656e657373n;

/**
 * Brings the schema to the latest version. Safe when several processes start at once:
 * on PostgreSQL the whole run holds a session advisory lock (Kysely's own lock covers only
 * its transaction, not the creation of its bookkeeping tables); on SQLite the whole run is
 * one `BEGIN IMMEDIATE` transaction holding the file's write lock, and the version is read
 * under it. Running it again is a no-op.
 */
export async function migrateToLatest(db: Kysely<unknown>, dialect: SqlDialectName): Promise<void> {
  const migrations = migrationsFor(dialect);
  const run = async (connection: Kysely<unknown>): Promise<void> => {
    // Unordered: branches add migrations side by side (0015, 0016 and 0017 were written at once),
    // so a database may have run a later one before an earlier one reaches it; each stands alone.
    const migrator = new Migrator({ db: connection, provider: { getMigrations: async () => migrations }, allowUnorderedMigrations: true });
    const { error } = await migrator.migrateToLatest();
    if (error) throw error;
  };
  // Kysely runs SQLite migrations outside a transaction (no transactional DDL assumed), and
  // SQLite has it: one BEGIN IMMEDIATE around the whole run is the lock between processes.
  if (dialect === 'sqlite') {
    return db.connection().execute(async (connection) => {
      await sql`BEGIN IMMEDIATE`.execute(connection);
      try {
        await run(connection);
        await sql`COMMIT`.execute(connection);
      } catch (error) {
        await sql`ROLLBACK`.execute(connection);
        throw error;
      }
    });
  }
  await db.connection().execute(async (connection) => {
    await sql`select pg_advisory_lock(${migrationLockKey})`.execute(connection);
    try {
      await run(connection);
    } finally {
      await sql`select pg_advisory_unlock(${migrationLockKey})`.execute(connection);
    }
  });
}

/** The ordered migrations; never edit a shipped one, add the next. */
function migrationsFor(dialect: SqlDialectName): Record<string, Migration> {
  /** An identity column: never reused, even after deletes (AUTOINCREMENT on SQLite). */
  const position = <T extends string>(table: CreateTableBuilder<T, never>) =>
    dialect === 'sqlite'
      ? table.addColumn('position', 'integer', (column) => column.primaryKey().autoIncrement())
      : table.addColumn('position', 'bigint', (column) => column.primaryKey().generatedAlwaysAsIdentity());
  /** Byte order, so `>= prefix and < prefix || U+FFFF` is an index range in both dialects. */
  const byteOrderedText = dialect === 'sqlite' ? sql`text` : sql`text collate "C"`;
  const notNull = (column: ColumnDefinitionBuilder) => column.notNull();
  /** A field of the JSON text in column `value`, as text. */
  const jsonText = (field: string) => (dialect === 'sqlite' ? `json_extract(value, '$.${field}')` : `(value::jsonb ->> '${field}')`);

  return {
    '0001-initial': {
      async up(db: Kysely<unknown>) {
        await position(db.schema.createTable('accounts'))
          .addColumn('id', 'text', (column) => column.notNull().unique())
          .addColumn('username', 'text', notNull)
          .addColumn('created_millis', 'bigint', notNull)
          .addColumn('is_verified', 'integer', notNull)
          .addColumn('is_disabled', 'integer', notNull)
          .addColumn('is_subscribed', 'integer', notNull)
          .addColumn('date_of_birth', 'text')
          .addColumn('referred_by_account_id', 'text')
          .addColumn('tags', 'text', notNull)
          .addColumn('character_id', 'text', notNull)
          .addColumn('profile_picture_url', 'text')
          .addColumn('balance', 'bigint', (column) => column.notNull().defaultTo(0))
          .execute();
        await db.schema.createIndex('accounts_username_lower').unique().on('accounts').expression(sql`lower(username)`).execute();

        await db.schema
          .createTable('api_keys')
          .addColumn('key_hash', 'text', (column) => column.primaryKey())
          .addColumn('account_id', 'text', (column) => column.notNull().references('accounts.id').onDelete('cascade'))
          .addColumn('created_millis', 'bigint', notNull)
          .execute();
        await db.schema.createIndex('api_keys_account').on('api_keys').column('account_id').execute();

        await db.schema
          .createTable('characters')
          .addColumn('id', 'text', (column) => column.primaryKey())
          .addColumn('account_id', 'text', (column) => column.notNull().references('accounts.id').onDelete('cascade'))
          .addColumn('name', 'text', notNull)
          .addColumn('name_lower', byteOrderedText, notNull)
          .addColumn('description', 'text', notNull)
          .addColumn('personality_summary', 'text', notNull)
          .addColumn('is_public', 'integer', notNull)
          .addColumn('avatar_key', 'text')
          .addColumn('avatar_mime_type', 'text')
          .addColumn('tts_voice_id', 'text')
          .addColumn('created_micros', 'bigint', notNull)
          .addColumn('updated_micros', 'bigint', notNull)
          .execute();
        await db.schema.createIndex('characters_account_name').on('characters').columns(['account_id', 'name_lower']).execute();
        await db.schema.createIndex('characters_public_name').on('characters').columns(['is_public', 'name_lower']).execute();
        await db.schema.createIndex('characters_name').on('characters').column('name_lower').execute();

        await position(db.schema.createTable('memories'))
          .addColumn('id', 'text', (column) => column.notNull().unique())
          .addColumn('character_id', 'text', (column) => column.notNull().references('characters.id').onDelete('cascade'))
          .addColumn('text', 'text', notNull)
          .addColumn('created_micros', 'bigint', notNull)
          .execute();
        await db.schema.createIndex('memories_character').on('memories').columns(['character_id', 'position']).execute();

        await db.schema
          .createTable('conversations')
          .addColumn('id', 'text', (column) => column.primaryKey())
          .addColumn('account_id', 'text', (column) => column.notNull().references('accounts.id').onDelete('cascade'))
          .addColumn('character_id', 'text', notNull)
          .addColumn('created_micros', 'bigint', notNull)
          .addColumn('updated_micros', 'bigint', notNull)
          .addColumn('summary', 'text')
          .addColumn('summary_through_position', 'bigint')
          .execute();

        await position(db.schema.createTable('conversation_speakers'))
          .addColumn('conversation_id', 'text', (column) => column.notNull().references('conversations.id').onDelete('cascade'))
          .addColumn('account_id', 'text', (column) => column.notNull().references('accounts.id').onDelete('cascade'))
          .addColumn('joined_micros', 'bigint', notNull)
          .addUniqueConstraint('conversation_speakers_once', ['conversation_id', 'account_id'])
          .execute();
        await db.schema.createIndex('conversation_speakers_account').on('conversation_speakers').columns(['account_id', 'position']).execute();

        await position(db.schema.createTable('messages'))
          .addColumn('id', 'text', (column) => column.notNull().unique())
          .addColumn('conversation_id', 'text', (column) => column.notNull().references('conversations.id').onDelete('cascade'))
          .addColumn('content', 'text', notNull)
          .addColumn('mime_type', 'text', notNull)
          .addColumn('participant_id', 'text', notNull)
          .addColumn('participant_type', 'text', notNull)
          .addColumn('created_micros', 'bigint', notNull)
          .addColumn('file_key', 'text')
          .addColumn('file_mime_type', 'text')
          .addColumn('finish_reason', 'text')
          .addColumn('superseded_micros', 'bigint')
          .execute();
        await db.schema.createIndex('messages_conversation').on('messages').columns(['conversation_id', 'position']).execute();

        await position(db.schema.createTable('ledger_transactions'))
          .addColumn('id', 'text', (column) => column.notNull().unique())
          .addColumn('account_id', 'text', (column) => column.notNull().references('accounts.id').onDelete('cascade'))
          .addColumn('type', 'text', notNull)
          .addColumn('amount', 'bigint', notNull)
          .addColumn('reason', 'text', notNull)
          .addColumn('created_millis', 'bigint', notNull)
          .addColumn('refund_of', 'text', (column) => column.unique())
          .addColumn('reference', 'text')
          .execute();
        await db.schema.createIndex('ledger_account').on('ledger_transactions').columns(['account_id', 'position']).execute();
        await db.schema.createIndex('ledger_reference').on('ledger_transactions').columns(['account_id', 'reference']).execute();

        await position(db.schema.createTable('jobs'))
          .addColumn('id', 'text', (column) => column.notNull().unique())
          .addColumn('account_id', 'text', (column) => column.notNull().references('accounts.id').onDelete('cascade'))
          .addColumn('client_id', 'text')
          .addColumn('created_millis', 'bigint', notNull)
          .addColumn('type', 'text', notNull)
          .addColumn('payload', 'text', notNull)
          .addColumn('face_model', 'text')
          .addColumn('photos', 'text')
          .addColumn('status', 'text', notNull)
          .addColumn('output_files', 'text', notNull)
          .addColumn('transaction_id', 'text')
          .addColumn('external_id', 'text')
          .addColumn('started_millis', 'bigint')
          .addColumn('failure', 'text')
          .addColumn('settled', 'integer', notNull)
          .addColumn('lease_owner', 'text')
          .addColumn('lease_expires_millis', 'bigint')
          .addColumn('claims', 'integer', (column) => column.notNull().defaultTo(0))
          .execute();
        await db.schema.createIndex('jobs_account').on('jobs').columns(['account_id', 'position']).execute();
        // The work queue: only unsettled jobs are in this index, so it stays as small as the backlog.
        await db.schema.createIndex('jobs_unsettled').on('jobs').column('position').where(sql.ref('settled'), '=', 0).execute();

        await position(db.schema.createTable('job_statuses'))
          .addColumn('id', 'text', (column) => column.notNull().unique())
          .addColumn('job_id', 'text', (column) => column.notNull().references('jobs.id').onDelete('cascade'))
          .addColumn('status', 'text', notNull)
          .addColumn('created_millis', 'bigint', notNull)
          .execute();
        await db.schema.createIndex('job_statuses_job').on('job_statuses').columns(['job_id', 'position']).execute();

        await db.schema
          .createTable('face_models')
          .addColumn('id', 'text', (column) => column.primaryKey())
          .addColumn('character_id', 'text', (column) => column.notNull().references('characters.id').onDelete('cascade'))
          .addColumn('job_id', 'text', notNull)
          .addColumn('created_millis', 'bigint', notNull)
          .addColumn('status', 'text', notNull)
          .addColumn('archive_key', 'text')
          .addColumn('archive_mime_type', 'text')
          .addColumn('trigger_token', 'text')
          .addColumn('failure', 'text')
          .execute();
        await db.schema.createIndex('face_models_character').on('face_models').columns(['character_id', 'created_millis']).execute();

        await db.schema
          .createTable('discord_channel_links')
          .addColumn('channel_id', 'text', (column) => column.primaryKey())
          .addColumn('conversation_id', 'text', (column) => column.notNull().unique())
          .addColumn('guild_id', 'text')
          .execute();
        await db.schema
          .createTable('discord_voice_followers')
          .addColumn('channel_id', 'text', notNull)
          .addColumn('discord_user_id', 'text', notNull)
          .addPrimaryKeyConstraint('discord_voice_followers_key', ['channel_id', 'discord_user_id'])
          .execute();
        await db.schema
          .createTable('discord_dm_characters')
          .addColumn('discord_user_id', 'text', (column) => column.primaryKey())
          .addColumn('character_id', 'text', notNull)
          .execute();
        await db.schema
          .createTable('discord_dm_conversations')
          .addColumn('discord_user_id', 'text', notNull)
          .addColumn('character_id', 'text', notNull)
          .addColumn('conversation_id', 'text', notNull)
          .addPrimaryKeyConstraint('discord_dm_conversations_key', ['discord_user_id', 'character_id'])
          .execute();
        await db.schema
          .createTable('discord_users')
          .addColumn('discord_user_id', 'text', (column) => column.primaryKey())
          .addColumn('account_id', 'text', (column) => column.notNull().references('accounts.id').onDelete('cascade'))
          .execute();

        await position(db.schema.createTable('job_deliveries'))
          .addColumn('job_id', 'text', (column) => column.notNull().unique())
          .addColumn('kind', 'text', notNull)
          .addColumn('application_id', 'text', notNull)
          .addColumn('interaction_token', 'text', notNull)
          .addColumn('token_expires_millis', 'bigint', notNull)
          .addColumn('channel_id', 'text', notNull)
          .addColumn('user_id', 'text', notNull)
          .addColumn('title', 'text', notNull)
          .execute();

        await db.schema
          .createTable('facts')
          .addColumn('key', 'text', (column) => column.primaryKey())
          .addColumn('value', 'text', notNull)
          .execute();
      },
    },
    '0002-job-signals': {
      // PostgreSQL signals with NOTIFY; SQLite has no such channel, so processes poll a log.
      async up(db: Kysely<unknown>) {
        if (dialect !== 'sqlite') return;
        await position(db.schema.createTable('job_signals'))
          .addColumn('job_id', 'text', notNull)
          .addColumn('created_millis', 'bigint', notNull)
          .execute();
      },
    },
    '0003-message-image-size': {
      // An image message's pixel size counts its tokens in the prompt; it is known at ingest.
      async up(db: Kysely<unknown>) {
        await db.schema.alterTable('messages').addColumn('file_width', 'integer').execute();
        await db.schema.alterTable('messages').addColumn('file_height', 'integer').execute();
      },
    },
    '0004-delivery-guild': {
      // A sharded bot delivers a job from the shard holding its guild; older rows (null) go to shard 0.
      async up(db: Kysely<unknown>) {
        await db.schema.alterTable('job_deliveries').addColumn('guild_id', 'text').execute();
      },
    },
    '0005-conversation-characters': {
      // Scenes: several characters in one conversation. The conversation's own character stays
      // the one it is with (the default answerer) and is back-filled as each one's first.
      async up(db: Kysely<unknown>) {
        await position(db.schema.createTable('conversation_characters'))
          .addColumn('conversation_id', 'text', (column) => column.notNull().references('conversations.id').onDelete('cascade'))
          .addColumn('character_id', 'text', (column) => column.notNull().references('characters.id').onDelete('cascade'))
          .addColumn('joined_micros', 'bigint', notNull)
          .addUniqueConstraint('conversation_characters_once', ['conversation_id', 'character_id'])
          .execute();
        // Conversations whose character is gone (no foreign key held it) get no row: the read never found them.
        await sql`insert into conversation_characters (conversation_id, character_id, joined_micros)
          select conversations.id, conversations.character_id, conversations.created_micros
          from conversations inner join characters on characters.id = conversations.character_id
          order by conversations.created_micros`.execute(db);
      },
    },
    '0006-discord-character-channels': {
      // Server channels where characters speak (/channel characters), and which character wrote
      // which of the bot's Discord messages, so a reply to one is answered by that character.
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('discord_character_channels')
          .addColumn('channel_id', 'text', (column) => column.primaryKey())
          .addColumn('guild_id', 'text', notNull)
          .addColumn('conversation_id', 'text', (column) => column.notNull().references('conversations.id').onDelete('cascade'))
          .addColumn('listen', 'integer', (column) => column.notNull().defaultTo(0))
          .execute();
        await db.schema.createIndex('discord_character_channels_guild').on('discord_character_channels').column('guild_id').execute();
        await db.schema
          .createTable('discord_channel_characters')
          .addColumn('channel_id', 'text', (column) => column.notNull().references('discord_character_channels.channel_id').onDelete('cascade'))
          .addColumn('character_id', 'text', (column) => column.notNull().references('characters.id').onDelete('cascade'))
          .addColumn('added_millis', 'bigint', notNull)
          .addPrimaryKeyConstraint('discord_channel_characters_key', ['channel_id', 'character_id'])
          .execute();
        await db.schema
          .createTable('discord_character_messages')
          .addColumn('message_id', 'text', (column) => column.primaryKey())
          .addColumn('character_id', 'text', (column) => column.notNull().references('characters.id').onDelete('cascade'))
          .addColumn('created_millis', 'bigint', notNull)
          .execute();
      },
    },
    '0007-discord-voice-replies': {
      // `/voice replies on`: a row per conversation answered by voice message; none is off.
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('discord_voice_replies')
          .addColumn('conversation_id', 'text', (column) => column.primaryKey())
          .execute();
      },
    },
    '0008-discord-character-messages-age': {
      // Who wrote which bot message is forgotten after a while (see `forgetCharacterMessages`).
      async up(db: Kysely<unknown>) {
        await db.schema.createIndex('discord_character_messages_created').on('discord_character_messages').column('created_millis').execute();
      },
    },
    '0009-learned-memories': {
      // Issue 21: what characters learn from conversations, the queue of messages to learn
      // from, and what learning spent per character and day.
      async up(db: Kysely<unknown>) {
        await position(db.schema.createTable('learned_memories'))
          .addColumn('id', 'text', (column) => column.notNull().unique())
          .addColumn('character_id', 'text', (column) => column.notNull().references('characters.id').onDelete('cascade'))
          .addColumn('subject_account_id', 'text', (column) => column.notNull().references('accounts.id').onDelete('cascade'))
          .addColumn('kind', 'text', notNull)
          .addColumn('text', 'text', notNull)
          .addColumn('normalised_text', 'text', notNull)
          .addColumn('status', 'text', notNull)
          .addColumn('origin', 'text', notNull)
          .addColumn('conversation_id', 'text', notNull)
          .addColumn('message_ids', 'text', notNull)
          .addColumn('importance', 'integer', notNull)
          .addColumn('stated_micros', 'bigint', notNull)
          .addColumn('created_micros', 'bigint', notNull)
          .addColumn('updated_micros', 'bigint', notNull)
          .addColumn('superseded_micros', 'bigint')
          .addColumn('superseded_by', 'text')
          .execute();
        // One fact once: the index itself refuses a second copy, from any process. Superseded
        // rows stay for the record and leave their place free. `add` names this predicate, word
        // for word, as its ON CONFLICT target.
        await db.schema
          .createIndex('learned_memories_once')
          .unique()
          .on('learned_memories')
          .columns(['character_id', 'subject_account_id', 'kind', 'normalised_text'])
          .where(sql<boolean>`status <> 'superseded'`)
          .execute();
        await db.schema.createIndex('learned_memories_subject').on('learned_memories').columns(['subject_account_id', 'character_id', 'stated_micros']).execute();
        await db.schema.createIndex('learned_memories_character').on('learned_memories').columns(['character_id', 'kind', 'status', 'stated_micros']).execute();

        await position(db.schema.createTable('memory_batches'))
          .addColumn('id', 'text', (column) => column.notNull().unique())
          .addColumn('conversation_id', 'text', (column) => column.notNull().references('conversations.id').onDelete('cascade'))
          .addColumn('from_position', 'bigint', notNull)
          .addColumn('through_position', 'bigint', notNull)
          .addColumn('status', 'text', notNull)
          .addColumn('attempts', 'integer', (column) => column.notNull().defaultTo(0))
          .addColumn('run_after_millis', 'bigint', notNull)
          .addColumn('lease_owner', 'text')
          .addColumn('lease_until_millis', 'bigint')
          .addColumn('created_micros', 'bigint', notNull)
          .addColumn('last_error', 'text')
          // Two processes that read the same last batch start the same range: one insert wins.
          .addUniqueConstraint('memory_batches_from', ['conversation_id', 'from_position'])
          .execute();
        // The queue: done batches leave this index, so it stays as small as the backlog.
        await db.schema
          .createIndex('memory_batches_due')
          .on('memory_batches')
          .columns(['run_after_millis', 'position'])
          .where(sql<boolean>`status <> 'done'`)
          .execute();

        await db.schema
          .createTable('memory_spending')
          .addColumn('character_id', 'text', (column) => column.notNull().references('characters.id').onDelete('cascade'))
          .addColumn('day', 'text', notNull)
          .addColumn('tokens', 'bigint', notNull)
          .addPrimaryKeyConstraint('memory_spending_key', ['character_id', 'day'])
          .execute();
      },
    },
    '0010-learning-progress-and-records': {
      // Issue 21's mends: a batch's progress per character (a retry runs only the characters
      // not yet done), what a pending own memory would replace, the memories each reply used
      // as rows that go with the reply (and with a deleted memory), and the messages nothing
      // is learned from.
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('memory_batch_parts')
          .addColumn('batch_id', 'text', (column) => column.notNull().references('memory_batches.id').onDelete('cascade'))
          .addColumn('character_id', 'text', (column) => column.notNull().references('characters.id').onDelete('cascade'))
          .addColumn('done_micros', 'bigint', notNull)
          .addPrimaryKeyConstraint('memory_batch_parts_key', ['batch_id', 'character_id'])
          .execute();

        await db.schema.alterTable('learned_memories').addColumn('replaces', 'text').execute();

        await position(db.schema.createTable('reply_memories'))
          .addColumn('message_id', 'text', (column) => column.notNull().references('messages.id').onDelete('cascade'))
          // Each alternative of a reply (a swipe, issue 22) was written with its own memories.
          .addColumn('alternative_id', 'text', notNull)
          .addColumn('memory_id', 'text', notNull)
          .addUniqueConstraint('reply_memories_once', ['message_id', 'alternative_id', 'memory_id'])
          .execute();
        await db.schema.createIndex('reply_memories_memory').on('reply_memories').column('memory_id').execute();
        // The records kept so far as facts (`reply-memories:<message id>`, a JSON list of ids) move
        // here; those of messages already gone are dropped.
        const { rows } = await sql<{ key: string; value: string }>`select key, value from facts where key like 'reply-memories:%'`.execute(db);
        for (const row of rows) {
          const messageId = row.key.slice('reply-memories:'.length);
          const memoryIds = [...new Set(JSON.parse(row.value) as string[])];
          for (const memoryId of memoryIds) {
            await sql`insert into reply_memories (message_id, alternative_id, memory_id) select id, id, ${memoryId} from messages where id = ${messageId}`.execute(db);
          }
        }
        await sql`delete from facts where key like 'reply-memories:%'`.execute(db);

        await db.schema
          .createTable('unlearned_messages')
          .addColumn('message_id', 'text', (column) => column.notNull().primaryKey().references('messages.id').onDelete('cascade'))
          .execute();
      },
    },
    '0011-many-characters': {
      // Issue 22: many characters per account, what character cards define beyond the seed's
      // fields (one JSON document: nothing queries inside it), a lorebook per character, and
      // deleted characters kept as a name so conversations that had them still read.
      async up(db: Kysely<unknown>) {
        await db.schema.alterTable('characters').addColumn('definition', 'text', (column) => column.notNull().defaultTo('{}')).execute();
        await db.schema.alterTable('characters').addColumn('lorebook_settings', 'text', (column) => column.notNull().defaultTo('{}')).execute();
        await db.schema.alterTable('characters').addColumn('deleted_micros', 'bigint').execute();
        // Moved by every write to the book, in its transaction: a prompt reads it with the
        // character and reuses the book it parsed while it stays the same.
        await db.schema.alterTable('characters').addColumn('lorebook_revision', 'integer', (column) => column.notNull().defaultTo(0)).execute();
        await position(db.schema.createTable('lorebook_entries'))
          .addColumn('id', 'text', (column) => column.notNull().unique())
          .addColumn('character_id', 'text', (column) => column.notNull().references('characters.id').onDelete('cascade'))
          .addColumn('entry', 'text', notNull)
          .execute();
        await db.schema.createIndex('lorebook_entries_character').on('lorebook_entries').columns(['character_id', 'position']).execute();
        // Which entries each reply (each alternative of it) was written with; they go with the reply.
        await position(db.schema.createTable('reply_lorebook_entries'))
          .addColumn('message_id', 'text', (column) => column.notNull().references('messages.id').onDelete('cascade'))
          .addColumn('alternative_id', 'text', notNull)
          .addColumn('entry_id', 'text', notNull)
          .addUniqueConstraint('reply_lorebook_entries_once', ['message_id', 'alternative_id', 'entry_id'])
          .execute();
        // A deleted character's files are removed only when nothing else holds them (files are
        // content-addressed: two characters imported from one card share an avatar).
        await db.schema.createIndex('characters_avatar').on('characters').column('avatar_key').where(sql.ref('avatar_key'), 'is not', null).execute();
        await db.schema.createIndex('messages_file').on('messages').column('file_key').where(sql.ref('file_key'), 'is not', null).execute();
        await db.schema.createIndex('face_models_archive').on('face_models').column('archive_key').where(sql.ref('archive_key'), 'is not', null).execute();
      },
    },
    '0012-message-alternatives': {
      // Issue 22: a character's message keeps its alternatives (swipes); see the function.
      up: messageAlternatives,
    },
    '0013-voice-listening': {
      // Issue 23: where managers forbade characters to listen in voice calls, each server's turn
      // thresholds, and who opted out of being heard: in the database, so every shard obeys it
      // and a restart forgets none of it.
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('discord_voice_guilds')
          .addColumn('guild_id', 'text', (column) => column.primaryKey())
          .addColumn('listening', 'integer', (column) => column.notNull().defaultTo(1))
          .addColumn('silence_ms', 'integer')
          .addColumn('minimum_speech_ms', 'integer')
          .execute();
        await db.schema
          .createTable('discord_voice_forbidden_channels')
          .addColumn('channel_id', 'text', (column) => column.primaryKey())
          .addColumn('guild_id', 'text', notNull)
          .execute();
        await db.schema.createIndex('discord_voice_forbidden_channels_guild').on('discord_voice_forbidden_channels').column('guild_id').execute();
        await db.schema
          .createTable('discord_voice_ignored_users')
          .addColumn('discord_user_id', 'text', (column) => column.primaryKey())
          .execute();
      },
    },
    '0014-file-releases-and-reply-parts': {
      // Two leftovers of issue 22's review. Files a deleted character let go of are removed by a
      // sweep once a grace period has passed, not at once: files are content-addressed, so an
      // import of the same image can be told the file is there milliseconds before a deletion
      // removes it; a release here is renewed whenever the same bytes are stored again.
      // And which Discord messages carry one reply, in order, so a swipe shows the whole
      // alternative over all of them, not in the message under the buttons alone.
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('file_releases')
          .addColumn('file_key', 'text', (column) => column.primaryKey())
          // Whose image jobs may hold the file (an output made an avatar): the one scan the sweep narrows.
          .addColumn('account_id', 'text', notNull)
          .addColumn('released_micros', 'bigint', notNull)
          .execute();
        await db.schema.createIndex('file_releases_due').on('file_releases').column('released_micros').execute();
        // The message under the reply's buttons (its last), and this message's place in the reply.
        await db.schema.alterTable('discord_character_messages').addColumn('reply_message_id', 'text').execute();
        await db.schema.alterTable('discord_character_messages').addColumn('part', 'integer').execute();
        await db.schema
          .createIndex('discord_character_messages_reply')
          .on('discord_character_messages')
          .column('reply_message_id')
          .where(sql.ref('reply_message_id'), 'is not', null)
          .execute();
      },
    },
    '0015-conversation-invitations': {
      // Issue 28: a person joins a conversation only by themselves (writing in its thread, through
      // the bot) or by accepting an invitation; a speaker invites, and waits for them.
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('conversation_invitations')
          .addColumn('conversation_id', 'text', (column) => column.notNull().references('conversations.id').onDelete('cascade'))
          .addColumn('account_id', 'text', (column) => column.notNull().references('accounts.id').onDelete('cascade'))
          .addColumn('invited_by_account_id', 'text', (column) => column.notNull().references('accounts.id').onDelete('cascade'))
          .addColumn('created_micros', 'bigint', notNull)
          .addPrimaryKeyConstraint('conversation_invitations_key', ['conversation_id', 'account_id'])
          .execute();
        await db.schema.createIndex('conversation_invitations_account').on('conversation_invitations').columns(['account_id', 'created_micros']).execute();
      },
    },
    '0016-speech-audio': {
      // Issue 28, item 4: spoken audio was indexed in `facts` and kept forever. Each now has a
      // row with its size and when it was last asked for, so the sweep keeps the cache within
      // SPEECH_CACHE_RETENTION_DAYS and SPEECH_CACHE_MAX_MEGABYTES; a row holds its file.
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('speech_audio')
          .addColumn('hash', 'text', (column) => column.primaryKey())
          .addColumn('file_key', 'text', notNull)
          .addColumn('mime_type', 'text', notNull)
          .addColumn('bytes', 'bigint', notNull)
          .addColumn('account_id', 'text', notNull)
          .addColumn('used_micros', 'bigint', notNull)
          .execute();
        await db.schema.createIndex('speech_audio_used').on('speech_audio').column('used_micros').execute();
        await db.schema.createIndex('speech_audio_file').on('speech_audio').column('file_key').execute();
        // What was spoken before: asked for now, as far as retention goes; '' as no one's
        // (the release of its file then looks at every account's image jobs).
        await sql`insert into speech_audio (hash, file_key, mime_type, bytes, account_id, used_micros)
          select substr(key, 8), ${sql.raw(jsonText('key'))}, ${sql.raw(jsonText('mimeType'))}, cast(${sql.raw(jsonText('size'))} as bigint), '', ${Date.now() * 1000}
          from facts where key like 'speech:%'`.execute(db);
        await sql`delete from facts where key like 'speech:%'`.execute(db);
      },
    },
    '0017-learning-per-person': {
      // Issue 28: what learning keeps per person and character. The messages a person said while
      // learning was off for one character of a conversation (off for all: unlearned_messages);
      // once per person and character, that they were told it learns (held here, so two
      // processes never both tell); and each person's share of a character's daily budget.
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('unlearned_message_characters')
          .addColumn('message_id', 'text', (column) => column.notNull().references('messages.id').onDelete('cascade'))
          .addColumn('character_id', 'text', notNull)
          .addPrimaryKeyConstraint('unlearned_message_characters_key', ['message_id', 'character_id'])
          .execute();
        await db.schema
          .createTable('learning_notices')
          .addColumn('account_id', 'text', (column) => column.notNull().references('accounts.id').onDelete('cascade'))
          .addColumn('character_id', 'text', (column) => column.notNull().references('characters.id').onDelete('cascade'))
          .addColumn('told_micros', 'bigint', notNull)
          .addPrimaryKeyConstraint('learning_notices_key', ['account_id', 'character_id'])
          .execute();
        await db.schema
          .createTable('memory_person_spending')
          .addColumn('character_id', 'text', (column) => column.notNull().references('characters.id').onDelete('cascade'))
          .addColumn('account_id', 'text', (column) => column.notNull().references('accounts.id').onDelete('cascade'))
          .addColumn('day', 'text', notNull)
          .addColumn('tokens', 'bigint', notNull)
          .addPrimaryKeyConstraint('memory_person_spending_key', ['character_id', 'account_id', 'day'])
          .execute();
      },
    },
  };
}
