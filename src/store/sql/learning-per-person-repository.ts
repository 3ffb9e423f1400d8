import { type Kysely, sql } from 'kysely';
import { ValidationError } from '../../core/errors.js';
import type { LearningPerPersonRepository, LearningReservation, LearningSpending } from '../../core/repositories.js';
import type { SqlContext } from './sql-context.js';
import type { Database } from './schema.js';

/** Thrown inside a reservation's transaction to roll back what fitted when something did not. */
class Short extends Error {
  constructor(readonly shortfall: Extract<LearningReservation, { reserved: false }>) {
    super('a learning budget is spent');
  }
}

/**
 * Each person's share of a character's learning budget, beside the character's own
 * (`memory_spending`), and the notices given. Every statement that adds to a day's row is one
 * conditional upsert: PostgreSQL row-locks the row and re-checks the sum once a concurrent
 * spend commits, SQLite runs it under its one write lock. A reservation takes the character's
 * row first and the people's in the order of their ids, so two never wait on each other.
 */
export class SqlLearningPerPersonRepository implements LearningPerPersonRepository {
  constructor(private readonly context: SqlContext) {}

  async reserve(day: string, spending: LearningSpending, limits: { character: number; person: number }): Promise<LearningReservation> {
    checkTokens(spending, false);
    if (this.context.db.isTransaction) throw new Error('A learning reservation runs in its own transaction.');
    try {
      await this.context.db.transaction().execute(async (db) => {
        const character = await addWithin(db, 'character', { character_id: spending.characterId, day, tokens: spending.tokens }, limits.character);
        const people: string[] = [];
        for (const person of ordered(spending.people)) {
          if (!(await addWithin(db, 'person', { character_id: spending.characterId, account_id: person.accountId, day, tokens: person.tokens }, limits.person))) people.push(person.accountId);
        }
        if (!character || people.length > 0) throw new Short({ reserved: false, character: !character, people });
      });
      return { reserved: true };
    } catch (error) {
      if (error instanceof Short) return error.shortfall;
      throw error;
    }
  }

  async correct(day: string, spending: LearningSpending): Promise<void> {
    checkTokens(spending, true);
    await this.context.db.transaction().execute(async (db) => {
      if (spending.tokens !== 0) {
        await db
          .insertInto('memory_spending')
          .values({ character_id: spending.characterId, day, tokens: Math.max(0, spending.tokens) })
          .onConflict((conflict) => conflict.columns(['character_id', 'day']).doUpdateSet({ tokens: atLeastZero('memory_spending', spending.tokens) }))
          .execute();
      }
      for (const person of ordered(spending.people)) {
        if (person.tokens === 0) continue;
        await db
          .insertInto('memory_person_spending')
          .values({ character_id: spending.characterId, account_id: person.accountId, day, tokens: Math.max(0, person.tokens) })
          .onConflict((conflict) => conflict.columns(['character_id', 'account_id', 'day']).doUpdateSet({ tokens: atLeastZero('memory_person_spending', person.tokens) }))
          .execute();
      }
    });
  }

  async spent(day: string, characterId: string, accountId?: string): Promise<number> {
    const row =
      accountId === undefined
        ? await this.context.db.selectFrom('memory_spending').select('tokens').where('character_id', '=', characterId).where('day', '=', day).executeTakeFirst()
        : await this.context.db
            .selectFrom('memory_person_spending')
            .select('tokens')
            .where('character_id', '=', characterId)
            .where('account_id', '=', accountId)
            .where('day', '=', day)
            .executeTakeFirst();
    return Number(row?.tokens ?? 0);
  }

  async tellOnce(accountId: string, characterId: string, nowMicros: number): Promise<boolean> {
    const inserted = await this.context.db
      .insertInto('learning_notices')
      .values({ account_id: accountId, character_id: characterId, told_micros: nowMicros })
      .onConflict((conflict) => conflict.columns(['account_id', 'character_id']).doNothing())
      .executeTakeFirst();
    return (inserted.numInsertedOrUpdatedRows ?? 0n) > 0n;
  }
}

/** Adds `row.tokens` to its day's row unless the sum would pass `limit`; answers whether it did. */
async function addWithin(
  db: Kysely<Database>,
  whose: 'character' | 'person',
  row: { character_id: string; account_id?: string; day: string; tokens: number },
  limit: number,
): Promise<boolean> {
  if (row.tokens > limit) return false;
  const result =
    whose === 'character'
      ? await db
          .insertInto('memory_spending')
          .values({ character_id: row.character_id, day: row.day, tokens: row.tokens })
          .onConflict((conflict) =>
            conflict
              .columns(['character_id', 'day'])
              .doUpdateSet({ tokens: sql`memory_spending.tokens + excluded.tokens` })
              .where(sql<boolean>`memory_spending.tokens + excluded.tokens <= ${limit}`),
          )
          .executeTakeFirst()
      : await db
          .insertInto('memory_person_spending')
          .values({ character_id: row.character_id, account_id: row.account_id!, day: row.day, tokens: row.tokens })
          .onConflict((conflict) =>
            conflict
              .columns(['character_id', 'account_id', 'day'])
              .doUpdateSet({ tokens: sql`memory_person_spending.tokens + excluded.tokens` })
              .where(sql<boolean>`memory_person_spending.tokens + excluded.tokens <= ${limit}`),
          )
          .executeTakeFirst();
  return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
}

/** The row's tokens plus `tokens`, never below zero (both dialects: no GREATEST in SQLite, no two-argument MAX in PostgreSQL). */
function atLeastZero(table: 'memory_spending' | 'memory_person_spending', tokens: number) {
  const sum = sql`${sql.ref(`${table}.tokens`)} + ${tokens}`;
  return sql<number>`case when ${sum} < 0 then 0 else ${sum} end`;
}

function ordered(people: LearningSpending['people']): LearningSpending['people'] {
  return [...people].sort((first, second) => (first.accountId < second.accountId ? -1 : first.accountId > second.accountId ? 1 : 0));
}

function checkTokens(spending: LearningSpending, negativeAllowed: boolean): void {
  for (const tokens of [spending.tokens, ...spending.people.map((person) => person.tokens)]) {
    if (!Number.isSafeInteger(tokens) || (!negativeAllowed && tokens < 0)) throw ValidationError.field('tokens', negativeAllowed ? 'must be a whole number' : 'must be a whole number, zero or more');
  }
  if (new Set(spending.people.map((person) => person.accountId)).size !== spending.people.length) throw ValidationError.field('people', 'must name each person once');
}
