import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { openSqlStore } from '../../src/store/sql/sql-store.js';
import { migrationDatabases } from './migration-databases.js';
import { newAccountRecords } from './repository-fixtures.js';
import { undo0010, undo0011, undo0012, undo0013, undo0014, undo0015, undo0016, undo0017 } from './undo-migrations.js';

/**
 * Statements that put a database back where it was before migration 0005, with its
 * conversations: 0005 and every later migration undone, as Kysely runs them in order.
 */
const undo0005 = [
  ...undo0017, ...undo0016, ...undo0015,
  ...undo0014,
  ...undo0013,
  ...undo0012,
  ...undo0011,
  ...undo0010,
  'drop table memory_spending',
  'drop table memory_batches',
  'drop table learned_memories',
  'drop table discord_voice_replies',
  'drop table discord_character_messages',
  'drop table discord_channel_characters',
  'drop table discord_character_channels',
  'drop table conversation_characters',
  "delete from kysely_migration where name >= '0005'",
];

/**
 * Migration 0005 on a database that already holds conversations: each gets its own character
 * as the first of its scene; one whose character is gone is left without (no read found it).
 */
describe.each(migrationDatabases)('migration 0005-conversation-characters on $dialect', ({ database }) => {
  it("back-fills each existing conversation's character as the first of its scene", async () => {
    const { url, run, drop } = await database();
    try {
      let store = await openSqlStore(url);
      const records = newAccountRecords('migrated');
      await store.accounts.create(records);
      const now = Date.now() * 1000;
      const conversation = { id: randomUUID(), accountId: records.account.id, characterId: records.character.id, createdMicros: now, updatedMicros: now, summary: null, summaryThroughPosition: null };
      await store.conversations.create(conversation, records.account.id);
      await store.close();

      const orphan = randomUUID();
      await run([
        ...undo0005,
        `insert into conversations (id, account_id, character_id, created_micros, updated_micros) values ('${orphan}', '${records.account.id}', '${randomUUID()}', 1, 1)`,
      ]);
      store = await openSqlStore(url);
      expect(await store.conversations.characters(conversation.id)).toEqual([records.character.id]);
      expect((await store.conversations.state(conversation.id))?.characters.map((each) => each.id)).toEqual([records.character.id]);
      expect(await store.conversations.characters(orphan)).toEqual([]);
      await store.close();
    } finally {
      await drop();
    }
  });
});
