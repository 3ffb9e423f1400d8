import type { ReplyMemoryRepository } from '../../core/repositories.js';
import { type SqlContext, atomic } from './sql-context.js';

/**
 * The memories each reply was written with, a row per (reply, memory). A row goes with its
 * reply (a foreign key: a cleared or deleted conversation takes them along) and with its
 * memory (`forget`, called where memories are deleted).
 */
export class SqlReplyMemoryRepository implements ReplyMemoryRepository {
  constructor(private readonly context: SqlContext) {}

  async record(messageId: string, memoryIds: readonly string[]): Promise<void> {
    const unique = [...new Set(memoryIds)];
    if (unique.length === 0) return;
    await atomic(this.context.db, (db) =>
      db
        .insertInto('reply_memories')
        .values(unique.map((memoryId) => ({ message_id: messageId, memory_id: memoryId })))
        .onConflict((conflict) => conflict.columns(['message_id', 'memory_id']).doNothing())
        .execute(),
    );
  }

  async of(messageId: string): Promise<string[]> {
    const rows = await this.context.db.selectFrom('reply_memories').select('memory_id').where('message_id', '=', messageId).orderBy('position').execute();
    return rows.map((row) => row.memory_id);
  }

  async forget(memoryIds: readonly string[]): Promise<void> {
    // A person may delete thousands at once: in slices, under the dialects' parameter limits.
    for (let start = 0; start < memoryIds.length; start += 500) {
      await this.context.db.deleteFrom('reply_memories').where('memory_id', 'in', memoryIds.slice(start, start + 500)).execute();
    }
  }
}
