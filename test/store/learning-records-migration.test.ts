import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { openSqlStore } from '../../src/store/sql/sql-store.js';
import { migrationDatabases } from './migration-databases.js';
import { messageRecord, newAccountRecords } from './repository-fixtures.js';
import { undo0010, undo0011, undo0012, undo0013, undo0014, undo0015, undo0016, undo0017 } from './undo-migrations.js';

/**
 * Migration 0010 on a database where which memories a reply used were kept as facts
 * (`reply-memories:<message id>`, a JSON list of memory ids): they become rows of their
 * reply, its first alternative's, and the facts go; those of a reply no longer there are dropped.
 */
describe.each(migrationDatabases)('migration 0010-learning-progress-and-records on $dialect', ({ database }) => {
  it('moves the used-memory facts of existing replies into rows, and drops the rest', async () => {
    const { url, run, drop } = await database();
    try {
      let store = await openSqlStore(url);
      const records = newAccountRecords('recorded');
      await store.accounts.create(records);
      const now = Date.now() * 1000;
      const conversation = { id: randomUUID(), accountId: records.account.id, characterId: records.character.id, createdMicros: now, updatedMicros: now, summary: null, summaryThroughPosition: null };
      await store.conversations.create(conversation, records.account.id);
      const reply = await store.conversations.append(conversation.id, { ...messageRecord(records.account.id, 'Aye.'), participantId: records.character.id, participantType: 'character' });
      await store.close();

      const [first, second, orphaned, goneReply] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
      await run([
        ...undo0017, ...undo0016, ...undo0015,
        ...undo0014,
        ...undo0013,
        ...undo0012,
        ...undo0011,
        ...undo0010,
        `insert into facts (key, value) values ('reply-memories:${reply.id}', '${JSON.stringify([first, second, first])}')`,
        `insert into facts (key, value) values ('reply-memories:${goneReply}', '${JSON.stringify([orphaned])}')`,
      ]);
      store = await openSqlStore(url);
      expect(await store.replyMemories.of(reply.id, reply.id)).toEqual([first, second]);
      expect(await store.facts.get(`reply-memories:${reply.id}`)).toBeUndefined();
      expect(await store.facts.get(`reply-memories:${goneReply}`)).toBeUndefined();
      await store.close();
    } finally {
      await drop();
    }
  });
});
