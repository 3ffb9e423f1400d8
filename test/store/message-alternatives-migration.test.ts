import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { openSqlStore } from '../../src/store/sql/sql-store.js';
import { migrationDatabases } from './migration-databases.js';
import { newAccountRecords } from './repository-fixtures.js';
import { undo0012 } from './undo-migrations.js';

/**
 * Migration 0012 on a database holding regenerated replies as they were kept before: a new row
 * each, the one replaced marked `superseded_micros` with the new row's `created_micros`.
 */
describe.each(migrationDatabases)('migration 0012-message-alternatives on $dialect', ({ database }) => {
  it('makes each chain of replaced replies one message with its alternatives, the newest chosen', async () => {
    const { url, run, drop } = await database();
    try {
      let store = await openSqlStore(url);
      const records = newAccountRecords('swiper');
      await store.accounts.create(records);
      const now = Date.now() * 1000;
      const conversation = { id: randomUUID(), accountId: records.account.id, characterId: records.character.id, createdMicros: now, updatedMicros: now, summary: null, summaryThroughPosition: null };
      await store.conversations.create(conversation, records.account.id);
      await store.close();

      const ids = Array.from({ length: 7 }, () => randomUUID());
      const row = (id: string, content: string, type: 'account' | 'character', created: number, superseded: number | null, finish: string | null = null) =>
        `insert into messages (id, conversation_id, content, mime_type, participant_id, participant_type, created_micros, finish_reason, superseded_micros) values ('${id}', '${conversation.id}', '${content}', 'text/plain', '${type === 'account' ? records.account.id : records.character.id}', '${type}', ${created}, ${finish === null ? 'null' : `'${finish}'`}, ${superseded ?? 'null'})`;
      await run([
        ...undo0012,
        row(ids[0]!, 'hi', 'account', 100, null),
        row(ids[1]!, 'first', 'character', 200, 300, 'length'),
        row(ids[2]!, 'second', 'character', 300, 400),
        // Said while the third reply was being written: it stays where it was.
        row(ids[3]!, 'meanwhile', 'account', 350, null),
        row(ids[4]!, 'third', 'character', 400, null, 'stop'),
        // Replaced by a row that is gone: nothing listed it, nothing is left of it.
        row(ids[5]!, 'lost', 'character', 500, 999),
        row(ids[6]!, 'plain reply', 'character', 600, null),
      ]);
      store = await openSqlStore(url);
      const messages = await store.conversations.messages(conversation.id);
      expect(messages.map((message) => [message.id, message.content, message.chosenIndex])).toEqual([
        [ids[0], 'hi', 0],
        [ids[3], 'meanwhile', 0],
        [ids[4], 'third', 2],
        [ids[6], 'plain reply', 0],
      ]);
      expect(messages[2]!.alternatives).toEqual([
        { id: ids[1], content: 'first', finishReason: 'length', createdMicros: 200 },
        { id: ids[2], content: 'second', createdMicros: 300 },
        { id: ids[4], content: 'third', finishReason: 'stop', createdMicros: 400 },
      ]);
      expect(messages[2]!.finishReason).toBe('stop');
      // The newest reply can be swiped back to an older alternative, and given new ones.
      expect(await store.conversations.chooseAlternative(conversation.id, ids[6]!, 0)).toMatchObject({ content: 'plain reply' });
      await expect(store.conversations.chooseAlternative(conversation.id, ids[4]!, 0)).rejects.toMatchObject({ code: 'NOT_NEWEST_REPLY' });
      await store.close();
    } finally {
      await drop();
    }
  });
});
