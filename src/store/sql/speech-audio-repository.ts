import { sql } from 'kysely';
import type { StoredFile } from '../../core/ports.js';
import type { SpeechAudioRecord, SpeechAudioRepository } from '../../core/repositories.js';
import { type SqlContext, atomic } from './sql-context.js';

/** Spoken audio kept to be reused, in `speech_audio`. */
export class SqlSpeechAudioRepository implements SpeechAudioRepository {
  constructor(private readonly context: SqlContext) {}

  async use(hash: string, nowMicros: number): Promise<StoredFile | undefined> {
    const row = await this.context.db
      .updateTable('speech_audio')
      .set({ used_micros: nowMicros })
      .where('hash', '=', hash)
      .returning(['file_key', 'mime_type', 'bytes'])
      .executeTakeFirst();
    return row === undefined ? undefined : { key: row.file_key, mimeType: row.mime_type, size: Number(row.bytes) };
  }

  async record(hash: string, audio: SpeechAudioRecord, nowMicros: number): Promise<void> {
    const row = { hash, file_key: audio.file.key, mime_type: audio.file.mimeType, bytes: audio.file.size, account_id: audio.accountId, used_micros: nowMicros };
    await this.context.db
      .insertInto('speech_audio')
      .values(row)
      .onConflict((conflict) => conflict.column('hash').doUpdateSet({ file_key: row.file_key, mime_type: row.mime_type, bytes: row.bytes, used_micros: row.used_micros }))
      .execute();
  }

  takeExpired(usedBeforeMicros: number, maxBytes: number, limit: number): Promise<Array<{ fileKey: string; accountId: string }>> {
    return atomic(this.context.db, async (db) => {
      // Each delete answers what it removed: a sweeper at once removes others, answered to it alone.
      const remove = async (hashes: string[]) =>
        hashes.length === 0
          ? []
          : (await db.deleteFrom('speech_audio').where('hash', 'in', hashes).returning(['file_key', 'account_id']).execute()).map((row) => ({
              fileKey: row.file_key,
              accountId: row.account_id,
            }));
      const stale = await db.selectFrom('speech_audio').select('hash').where('used_micros', '<', usedBeforeMicros).orderBy('used_micros').limit(limit).execute();
      const taken = await remove(stale.map((row) => row.hash));
      if (stale.length >= limit) return taken;
      // Newest first, each row with the bytes of it and every newer one: past the bound, out.
      const over = await sql<{ hash: string }>`
        select hash from (
          select hash, used_micros, sum(bytes) over (order by used_micros desc, hash desc) as kept from speech_audio
        ) newest_first
        where kept > ${maxBytes}
        order by used_micros, hash
        limit ${limit - stale.length}`.execute(db);
      return [...taken, ...(await remove(over.rows.map((row) => row.hash)))];
    });
  }
}
