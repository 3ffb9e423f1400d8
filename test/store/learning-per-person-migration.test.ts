import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { openSqlStore } from '../../src/store/sql/sql-store.js';
import { migrationDatabases } from './migration-databases.js';
import { messageRecord, newAccountRecords } from './repository-fixtures.js';
import { undo0014, undo0017 } from './undo-migrations.js';

/**
 * Migration 0017 (issue 28) undoes and runs again, and is taken in any order with the others
 * written beside it: a database that ran 0017 before an earlier migration reached it runs that
 * one next, and keeps what 0017 holds.
 */
describe.each(migrationDatabases)('migration 0017-learning-per-person on $dialect', ({ database }) => {
  it('runs again after its undo, and runs an earlier migration that came after it', async () => {
    const { url, run, drop } = await database();
    try {
      let store = await openSqlStore(url);
      const records = newAccountRecords('gap');
      await store.accounts.create(records);
      const now = Date.now() * 1000;
      const conversation = { id: randomUUID(), accountId: records.account.id, characterId: records.character.id, createdMicros: now, updatedMicros: now, summary: null, summaryThroughPosition: null };
      await store.conversations.create(conversation, records.account.id);
      const said = await store.conversations.append(conversation.id, messageRecord(records.account.id, 'hi'));
      await store.close();

      await run(undo0017);
      store = await openSqlStore(url);
      await store.memoryBatches.markUnlearned(said.id, [records.character.id]);
      await store.close();

      // 0014 undone and forgotten while 0017 stays: as if 0014 had been merged after 0017 ran.
      await run([...undo0014.slice(0, -1), "delete from kysely_migration where name = '0014-file-releases-and-reply-parts'"]);
      store = await openSqlStore(url);
      expect(await store.memoryBatches.unlearnedBy([said.id])).toEqual(new Map([[said.id, new Set([records.character.id])]]));
      await store.fileReleases.release(['gap-file'], records.account.id, now);
      await store.close();
    } finally {
      await drop();
    }
  });
});
