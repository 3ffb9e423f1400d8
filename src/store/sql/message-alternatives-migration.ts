import { type Kysely, sql } from 'kysely';

/** Rows written per statement while merging: far below either driver's parameter limit. */
const chunkSize = 200;

interface SupersededRow {
  id: string;
  content: string;
  finish_reason: string | null;
  created_micros: number | string;
  successor_id: string | null;
}

interface FinalRow {
  id: string;
  content: string;
  finish_reason: string | null;
  created_micros: number | string;
}

/**
 * Migration 0012: a character's message keeps its alternatives (swipes) and which one is chosen.
 * The database holds what must never break under concurrency: the chosen index is within the
 * count (a CHECK), and each index of a message is stored once (the primary key); adding one
 * takes the conversation's row, so two processes adding at once each get their own index.
 *
 * Before, a regenerated reply was a new row and the one it replaced was marked
 * `superseded_micros` with the new row's `created_micros` (the id of what replaced it was not
 * stored). Each chain of replacements becomes one message: the newest row stays, keeping its
 * id and place, with every row of the chain as its alternatives, oldest first, the newest
 * chosen; each alternative keeps its row's id, under which the memories and lorebook entries it
 * used stay recorded (moved to the final message before the older rows go). A superseded row
 * whose replacement is gone (nothing listed it) is dropped.
 */
export async function messageAlternatives(database: Kysely<unknown>): Promise<void> {
  // The tables are not in a typed schema here: a migration speaks of the schema as it was.
  const db = database as Kysely<any>;
  await db.schema
    .createTable('message_alternatives')
    .addColumn('message_id', 'text', (column) => column.notNull().references('messages.id').onDelete('cascade'))
    .addColumn('alternative_index', 'integer', (column) => column.notNull().check(sql`alternative_index >= 0`))
    .addColumn('id', 'text', (column) => column.notNull().unique())
    .addColumn('content', 'text', (column) => column.notNull())
    .addColumn('finish_reason', 'text')
    .addColumn('created_micros', 'bigint', (column) => column.notNull())
    .addPrimaryKeyConstraint('message_alternatives_key', ['message_id', 'alternative_index'])
    .execute();
  await db.schema
    .alterTable('messages')
    .addColumn('swipe_count', 'integer', (column) => column.notNull().defaultTo(1).check(sql`swipe_count >= 1`))
    .execute();
  // A greeting's alternatives are the card's greetings, swiped between and never rewritten by the engine.
  await db.schema.alterTable('messages').addColumn('is_greeting', 'integer', (column) => column.notNull().defaultTo(0)).execute();
  await db.schema
    .alterTable('messages')
    .addColumn('swipe_index', 'integer', (column) => column.notNull().defaultTo(0).check(sql`swipe_index >= 0 and swipe_index < swipe_count`))
    .execute();

  // The replacement of each superseded row: the first character message after it, in its conversation, stored at the instant it was superseded.
  const { rows: superseded } = await sql<SupersededRow>`
    select old.id, old.content, old.finish_reason, old.created_micros,
      (select later.id from messages later
        where later.conversation_id = old.conversation_id and later.position > old.position
          and later.created_micros = old.superseded_micros and later.participant_type = 'character'
        order by later.position limit 1) as successor_id
    from messages old where old.superseded_micros is not null order by old.position`.execute(db);
  const previous = new Map<string, SupersededRow>();
  for (const row of superseded) if (row.successor_id !== null && !previous.has(row.successor_id)) previous.set(row.successor_id, row);
  const supersededIds = new Set(superseded.map((row) => row.id));
  const finalIds = [...previous.keys()].filter((id) => !supersededIds.has(id));

  const alternatives: Record<string, unknown>[] = [];
  const chosen: { id: string; count: number }[] = [];
  /** Each older row of a chain and the final row it becomes an alternative of. */
  const repointed: { from: string; to: string }[] = [];
  for (const ids of chunks(finalIds)) {
    const finals = await db.selectFrom('messages').select(['id', 'content', 'finish_reason', 'created_micros']).where('id', 'in', ids).execute();
    for (const final of finals as FinalRow[]) {
      const chain: FinalRow[] = [final];
      for (let row = previous.get(final.id); row !== undefined; row = previous.get(row.id)) chain.unshift(row);
      chain.forEach((row, index) =>
        alternatives.push({ message_id: final.id, alternative_index: index, id: row.id, content: row.content, finish_reason: row.finish_reason, created_micros: Number(row.created_micros) }),
      );
      chosen.push({ id: final.id, count: chain.length });
      for (const row of chain) if (row.id !== final.id) repointed.push({ from: row.id, to: final.id });
    }
  }
  for (const rows of chunks(alternatives)) await db.insertInto('message_alternatives').values(rows).execute();
  for (const { id, count } of chosen) await db.updateTable('messages').set({ swipe_count: count, swipe_index: count - 1 }).where('id', '=', id).execute();
  // What each older reply was written with (migration 0010 moved the memories into rows under
  // `(its id, its id)`; 0011's lorebook rows the same) would go with its row, a cascade: it moves
  // to the final message, its alternative id still the old row's, now that alternative's id.
  for (const table of ['reply_memories', 'reply_lorebook_entries'] as const) {
    for (const slice of chunks(repointed)) {
      const cases = sql.join(slice.map(({ from, to }) => sql`when ${from} then ${to}`), sql` `);
      const from = sql.join(slice.map(({ from }) => sql`${from}`));
      await sql`update ${sql.table(table)} set message_id = case message_id ${cases} end where message_id in (${from})`.execute(db);
    }
  }
  // Every superseded row is an alternative now, or was never listed: the messages keep only the chosen.
  await db.deleteFrom('messages').where('superseded_micros', 'is not', null).execute();
  await db.schema.alterTable('messages').dropColumn('superseded_micros').execute();
}

function chunks<T>(items: readonly T[]): T[][] {
  const result: T[][] = [];
  for (let start = 0; start < items.length; start += chunkSize) result.push(items.slice(start, start + chunkSize));
  return result;
}
