import type { Kysely, SelectQueryBuilder } from 'kysely';
import type { SqlDialectName } from './migrations.js';
import type { Database } from './schema.js';

/** What each repository works with: a pool or one transaction, and which SQL it speaks. */
export interface SqlContext {
  db: Kysely<Database>;
  dialect: SqlDialectName;
}

/**
 * Runs `work` in a transaction, or in the caller's when `db` already is one, so a repository
 * method is atomic alone and joins `RepositoryStore.transaction` when called inside it.
 */
export function atomic<T>(db: Kysely<Database>, work: (transaction: Kysely<Database>) => Promise<T>): Promise<T> {
  return db.isTransaction ? work(db) : db.transaction().execute(work);
}

/**
 * Locks the selected rows until the transaction ends (PostgreSQL). SQLite needs nothing: its
 * transactions begin IMMEDIATE, holding the one write lock of the file throughout.
 */
export function forUpdate<DB, TB extends keyof DB, O>(
  context: SqlContext,
  query: SelectQueryBuilder<DB, TB, O>,
): SelectQueryBuilder<DB, TB, O> {
  return context.dialect === 'postgres' ? query.forUpdate() : query;
}

/** A unique or primary-key violation, from either driver. */
export function isUniqueViolation(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const { code, errcode } = error as Error & { code?: unknown; errcode?: unknown };
  // PostgreSQL: SQLSTATE 23505. SQLite: SQLITE_CONSTRAINT_UNIQUE (2067) or _PRIMARYKEY (1555).
  return code === '23505' || errcode === 2067 || errcode === 1555;
}

/** A foreign-key violation, from either driver. */
export function isForeignKeyViolation(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const { code, errcode } = error as Error & { code?: unknown; errcode?: unknown };
  return code === '23503' || errcode === 787;
}

export function toJson(value: unknown): string {
  return JSON.stringify(value);
}

export function fromJson<T>(text: string): T {
  return JSON.parse(text) as T;
}

export function fromNullableJson<T>(text: string | null): T | null {
  return text === null ? null : (JSON.parse(text) as T);
}
