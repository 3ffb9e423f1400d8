import { type Kysely, sql } from 'kysely';
import type { FileReleaseRepository } from '../../core/repositories.js';
import { escapeLike } from './character-repository.js';
import { type SqlContext, atomic } from './sql-context.js';
import type { Database } from './schema.js';

/** Files let go of, in `file_releases`, until the sweep takes them. */
export class SqlFileReleaseRepository implements FileReleaseRepository {
  constructor(private readonly context: SqlContext) {}

  async release(keys: readonly string[], accountId: string, releasedMicros: number): Promise<void> {
    const rows = [...new Set(keys)].map((key) => ({ file_key: key, account_id: accountId, released_micros: releasedMicros }));
    if (rows.length === 0) return;
    await this.context.db
      .insertInto('file_releases')
      .values(rows)
      .onConflict((conflict) =>
        conflict.column('file_key').doUpdateSet((row) => ({ account_id: row.ref('excluded.account_id'), released_micros: row.ref('excluded.released_micros') })),
      )
      .execute();
  }

  async renew(key: string, nowMicros: number): Promise<void> {
    const { db } = this.context;
    // Read first: almost no file stored was let go of, and an update would take SQLite's write
    // lock on every store. A sweep removing it has not committed, so the read still sees it.
    const released = await db.selectFrom('file_releases').select('file_key').where('file_key', '=', key).executeTakeFirst();
    if (released) await db.updateTable('file_releases').set({ released_micros: nowMicros }).where('file_key', '=', key).execute();
  }

  takeUnheld(releasedBeforeMicros: number, limit: number): Promise<{ taken: number; unheld: string[] }> {
    return atomic(this.context.db, async (db) => {
      let due = db
        .selectFrom('file_releases')
        .select(['file_key', 'account_id'])
        .where('released_micros', '<', releasedBeforeMicros)
        .orderBy('released_micros')
        .limit(limit);
      // Two sweepers take different releases; SQLite's IMMEDIATE transaction already holds them all.
      if (this.context.dialect === 'postgres') due = due.forUpdate().skipLocked();
      const taken = await due.execute();
      if (taken.length === 0) return { taken: 0, unheld: [] };
      // A held file's release goes too: whoever lets go of it later records a new one.
      await db
        .deleteFrom('file_releases')
        .where(
          'file_key',
          'in',
          taken.map((row) => row.file_key),
        )
        .execute();
      const unheld: string[] = [];
      for (const row of taken) if (!(await isHeld(db, row.file_key, row.account_id))) unheld.push(row.file_key);
      return { taken: taken.length, unheld };
    });
  }

  async adoptUnheld(keys: readonly string[], nowMicros: number): Promise<string[]> {
    const unique = [...new Set(keys)];
    if (unique.length === 0) return [];
    const { db } = this.context;
    // Each an indexed lookup of the whole batch.
    const holders = await Promise.all([
      db.selectFrom('characters').select('avatar_key as key').distinct().where('avatar_key', 'in', unique).execute(),
      db.selectFrom('messages').select('file_key as key').distinct().where('file_key', 'in', unique).execute(),
      db.selectFrom('face_models').select('archive_key as key').distinct().where('archive_key', 'in', unique).execute(),
      db.selectFrom('speech_audio').select('file_key as key').distinct().where('file_key', 'in', unique).execute(),
      db.selectFrom('file_releases').select('file_key as key').where('file_key', 'in', unique).execute(),
    ]);
    const held = new Set(holders.flat().map((row) => row.key));
    const unheld = unique.filter((key) => !held.has(key));
    if (unheld.length === 0) return [];
    await db
      .insertInto('file_releases')
      .values(unheld.map((key) => ({ file_key: key, account_id: '', released_micros: nowMicros })))
      // Released meanwhile (a deletion, another sweeper's scan): that release stands.
      .onConflict((conflict) => conflict.column('file_key').doNothing())
      .execute();
    return unheld;
  }

  async heldByJobs(): Promise<Set<string>> {
    const keys = new Set<string>();
    let after = 0;
    for (;;) {
      const rows = await this.context.db
        .selectFrom('jobs')
        .select(['position', 'output_files', 'photos'])
        .where('position', '>', after)
        .where((row) => row.or([row('output_files', '!=', '[]'), row('photos', 'is not', null)]))
        .orderBy('position')
        .limit(jobPage)
        .execute();
      for (const row of rows) {
        for (const file of JSON.parse(row.output_files) as Array<{ key: string }>) keys.add(file.key);
        if (row.photos !== null) keys.add((JSON.parse(row.photos) as { key: string }).key);
      }
      if (rows.length < jobPage) return keys;
      after = Number(rows.at(-1)!.position);
    }
  }
}

/** Jobs read per query by `heldByJobs`. */
const jobPage = 1000;

/**
 * Whether any row holds a file: a character's avatar, a message's file, a face model's archive,
 * a spoken audio kept (each an indexed lookup), or an output or the photos of the account's
 * image jobs (which a person may have made an avatar of); of every account's with `accountId` ''.
 */
async function isHeld(db: Kysely<Database>, key: string, accountId: string): Promise<boolean> {
  const pattern = `%${escapeLike(key)}%`;
  let jobs = db
    .selectFrom('jobs')
    .select('id')
    .where(sql<boolean>`(output_files like ${pattern} escape '\\' or photos like ${pattern} escape '\\')`);
  if (accountId !== '') jobs = jobs.where('account_id', '=', accountId);
  const holders = await Promise.all([
    db.selectFrom('characters').select('id').where('avatar_key', '=', key).limit(1).executeTakeFirst(),
    db.selectFrom('messages').select('id').where('file_key', '=', key).limit(1).executeTakeFirst(),
    db.selectFrom('face_models').select('id').where('archive_key', '=', key).limit(1).executeTakeFirst(),
    db.selectFrom('speech_audio').select('hash').where('file_key', '=', key).limit(1).executeTakeFirst(),
    jobs.limit(1).executeTakeFirst(),
  ]);
  return holders.some((holder) => holder !== undefined);
}
