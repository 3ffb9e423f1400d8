import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { openSqlStore } from '../../src/store/sql/sql-store.js';
import { migrationDatabases } from './migration-databases.js';
import { newAccountRecords } from './repository-fixtures.js';
import { undo0010, undo0011, undo0012, undo0013, undo0014, undo0015, undo0016, undo0017 } from './undo-migrations.js';

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
        ...undo0017, ...undo0016, ...undo0015,
        ...undo0014,
        ...undo0013,
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
  /**
   * A reply regenerated twice, kept as before 0012 (a row each) after `undo`, with what `records`
   * says each row was written with; the migration then runs as the store opens.
   */
  async function regeneratedTwice(undo: string[], records: (ids: ChainIds) => string[]) {
    const { url, run, drop } = await database();
    let store = await openSqlStore(url);
    const account = newAccountRecords('remembering');
    await store.accounts.create(account);
    const now = Date.now() * 1000;
    const conversation = { id: randomUUID(), accountId: account.account.id, characterId: account.character.id, createdMicros: now, updatedMicros: now, summary: null, summaryThroughPosition: null };
    await store.conversations.create(conversation, account.account.id);
    await store.close();
    const ids: ChainIds = { question: randomUUID(), first: randomUUID(), second: randomUUID(), third: randomUUID() };
    const row = (id: string, type: 'account' | 'character', created: number, superseded: number | null) =>
      `insert into messages (id, conversation_id, content, mime_type, participant_id, participant_type, created_micros, superseded_micros) values ('${id}', '${conversation.id}', 'text of ${id}', 'text/plain', '${type === 'account' ? account.account.id : account.character.id}', '${type}', ${created}, ${superseded ?? 'null'})`;
    await run([
      ...undo,
      row(ids.question, 'account', 100, null),
      row(ids.first, 'character', 200, 300),
      row(ids.second, 'character', 300, 400),
      row(ids.third, 'character', 400, null),
      ...records(ids),
    ]);
    store = await openSqlStore(url);
    const messages = await store.conversations.messages(conversation.id);
    expect(messages.map((message) => message.id)).toEqual([ids.question, ids.third]);
    expect(messages[1]!.alternatives.map((alternative) => alternative.id)).toEqual([ids.first, ids.second, ids.third]);
    return { store, ids, drop };
  }

  it('keeps which memories each older reply of a chain used (facts until 0010), under that alternative', async () => {
    const [memoryA, memoryB, memoryC] = [randomUUID(), randomUUID(), randomUUID()];
    // 0010 moves the facts into rows under each reply's own row; 0012 then folds the chain's rows into one message.
    const { store, ids, drop } = await regeneratedTwice([...undo0017, ...undo0016, ...undo0015, ...undo0014, ...undo0013, ...undo0012, ...undo0011, ...undo0010], (ids) => [
      `insert into facts (key, value) values ('reply-memories:${ids.first}', '${JSON.stringify([memoryA, memoryB])}')`,
      `insert into facts (key, value) values ('reply-memories:${ids.second}', '${JSON.stringify([memoryB])}')`,
      `insert into facts (key, value) values ('reply-memories:${ids.third}', '${JSON.stringify([memoryC])}')`,
    ]);
    try {
      expect(await store.replyMemories.of(ids.third, ids.first)).toEqual([memoryA, memoryB]);
      expect(await store.replyMemories.of(ids.third, ids.second)).toEqual([memoryB]);
      expect(await store.replyMemories.of(ids.third, ids.third)).toEqual([memoryC]);
      await store.close();
    } finally {
      await drop();
    }
  });

  it('keeps the rows of a database that ran 0010 and 0011 before 0012: memories and lorebook entries', async () => {
    const [memory, entryA, entryB] = [randomUUID(), randomUUID(), randomUUID()];
    const { store, ids, drop } = await regeneratedTwice([...undo0017, ...undo0016, ...undo0015, ...undo0014, ...undo0013, ...undo0012], (ids) => [
      `insert into reply_memories (message_id, alternative_id, memory_id) values ('${ids.first}', '${ids.first}', '${memory}')`,
      `insert into reply_lorebook_entries (message_id, alternative_id, entry_id) values ('${ids.first}', '${ids.first}', '${entryA}')`,
      `insert into reply_lorebook_entries (message_id, alternative_id, entry_id) values ('${ids.second}', '${ids.second}', '${entryB}')`,
    ]);
    try {
      expect(await store.replyMemories.of(ids.third, ids.first)).toEqual([memory]);
      expect(await store.lorebooks.usedBy(ids.third, ids.first)).toEqual([entryA]);
      expect(await store.lorebooks.usedBy(ids.third, ids.second)).toEqual([entryB]);
      expect(await store.lorebooks.usedBy(ids.third, ids.third)).toEqual([]);
      await store.close();
    } finally {
      await drop();
    }
  });
});

interface ChainIds {
  question: string;
  /** The first reply, replaced by the second, replaced by the third. */
  first: string;
  second: string;
  third: string;
}
