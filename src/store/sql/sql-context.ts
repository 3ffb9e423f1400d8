import type { Compilable, CompiledQuery, Kysely, SelectQueryBuilder } from 'kysely';
import { AppError } from '../../core/errors.js';
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

/**
 * A read built and compiled once per dialect, then run with new values: on the hottest reads
 * (every request's key lookup, the conversation read) building and compiling the query with
 * Kysely costs more than SQLite takes to run it. `build` gets a placeholder string for each
 * value; each must reach the compiled parameters exactly once, where `run` puts the value.
 */
export class PreparedQuery<Row> {
  readonly #compiled = new Map<SqlDialectName, { query: CompiledQuery<Row>; slots: number[] }>();

  constructor(
    private readonly valueCount: number,
    private readonly build: (db: Kysely<Database>, ...placeholders: string[]) => Compilable<Row>,
  ) {}

  async run(context: SqlContext, ...values: string[]): Promise<Row[]> {
    if (values.length !== this.valueCount) throw new Error(`This query takes ${this.valueCount} values, not ${values.length}.`);
    const { query, slots } = this.#compile(context);
    const parameters = [...query.parameters];
    slots.forEach((slot, index) => {
      parameters[slot] = values[index];
    });
    const result = await context.db.executeQuery<Row>({ ...query, parameters });
    return result.rows;
  }

  #compile(context: SqlContext): { query: CompiledQuery<Row>; slots: number[] } {
    let compiled = this.#compiled.get(context.dialect);
    if (compiled) return compiled;
    const placeholders = Array.from({ length: this.valueCount }, (_, index) => `\u0000prepared-value-${index}\u0000`);
    const query = this.build(context.db, ...placeholders).compile();
    const slots = placeholders.map((placeholder) => {
      const found = query.parameters.flatMap((parameter, slot) => (parameter === placeholder ? [slot] : []));
      if (found.length !== 1) throw new Error(`A prepared query must use each value once; value ${placeholders.indexOf(placeholder)} is used ${found.length} times.`);
      return found[0]!;
    });
    compiled = { query, slots };
    this.#compiled.set(context.dialect, compiled);
    return compiled;
  }
}

/**
 * The last guard for text holding a NUL (U+0000), run on every statement's values by both
 * drivers: SQLite would store the text cut at it and PostgreSQL refuses it with an error of its
 * own. The API refuses such text first, naming the field; this keeps any other way in (a card's
 * text, a Discord message) from storing a part, and says why.
 */
export function refuseNulText(parameters: readonly unknown[]): void {
  for (const parameter of parameters) {
    if (typeof parameter === 'string' && parameter.includes('\u0000')) {
      throw new AppError('VALIDATION_FAILED', 'The text holds a NUL character (U+0000), which is never stored; remove it and send again.', {
        details: { character: 'U+0000' },
      });
    }
  }
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
