import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import {
  CompiledQuery,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  type Kysely,
  type QueryCompiler,
  type QueryResult,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from 'kysely';

export interface NodeSqliteDialectOptions {
  /** A file path, or `:memory:`. */
  path: string;
  /** How long a statement waits for another process's write lock before failing. */
  busyTimeoutMs?: number;
}

/**
 * Kysely over Node's built-in `node:sqlite` (no native compile at install). Kysely's own
 * SqliteDialect expects better-sqlite3's statement shape and begins transactions with a plain
 * `BEGIN`, which takes the write lock only at the first write: two processes that both read
 * first then deadlock into SQLITE_BUSY. Here every transaction is `BEGIN IMMEDIATE`, so writers
 * queue on the file lock (waiting up to busy_timeout) and a transaction's reads are never stale.
 */
export class NodeSqliteDialect implements Dialect {
  constructor(private readonly options: NodeSqliteDialectOptions) {}

  createDriver(): Driver {
    return new NodeSqliteDriver(this.options);
  }

  createQueryCompiler(): QueryCompiler {
    return new SqliteQueryCompiler();
  }

  createAdapter(): DialectAdapter {
    return new SqliteAdapter();
  }

  createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new SqliteIntrospector(db);
  }
}

class NodeSqliteDriver implements Driver {
  #database: DatabaseSync | undefined;
  #connection: NodeSqliteConnection | undefined;
  /** One connection per process: a holder (a whole transaction) has it until released. */
  #queue: Promise<void> = Promise.resolve();

  constructor(private readonly options: NodeSqliteDialectOptions) {}

  async init(): Promise<void> {
    const database = new DatabaseSync(this.options.path);
    database.exec(`PRAGMA busy_timeout = ${Math.trunc(this.options.busyTimeoutMs ?? 10_000)}`);
    database.exec('PRAGMA journal_mode = WAL');
    // NORMAL is durable in WAL mode except for the last transactions on power loss, not on a crash.
    database.exec('PRAGMA synchronous = NORMAL');
    database.exec('PRAGMA foreign_keys = ON');
    this.#database = database;
    this.#connection = new NodeSqliteConnection(database);
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const connection = this.#connection;
    if (!connection) throw new Error('The SQLite driver is not initialised or already closed.');
    let release!: () => void;
    const previous = this.#queue;
    this.#queue = new Promise((resolve) => {
      release = resolve;
    });
    await previous;
    connection.release = release;
    return connection;
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(raw('BEGIN IMMEDIATE'));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(raw('COMMIT'));
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(raw('ROLLBACK'));
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    (connection as NodeSqliteConnection).release();
  }

  async destroy(): Promise<void> {
    this.#database?.close();
    this.#database = undefined;
    this.#connection = undefined;
  }
}

class NodeSqliteConnection implements DatabaseConnection {
  release: () => void = () => undefined;
  readonly #statements = new Map<string, StatementSync>();

  constructor(private readonly database: DatabaseSync) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const statement = this.#prepare(query.sql);
    const parameters = query.parameters.map(toSqlite);
    if (statement.columns().length > 0) {
      return { rows: statement.all(...parameters) as R[] };
    }
    const { changes, lastInsertRowid } = statement.run(...parameters);
    return { rows: [], numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid) };
  }

  async *streamQuery<R>(query: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    const statement = this.#prepare(query.sql);
    for (const row of statement.iterate(...query.parameters.map(toSqlite))) {
      yield { rows: [row as R] };
    }
  }

  /** Statements are prepared once per SQL text; the queries are few and fixed. */
  #prepare(sqlText: string): StatementSync {
    let statement = this.#statements.get(sqlText);
    if (!statement) {
      statement = this.database.prepare(sqlText);
      if (this.#statements.size < 500) this.#statements.set(sqlText, statement);
    }
    return statement;
  }
}

function raw(sqlText: string): CompiledQuery {
  return CompiledQuery.raw(sqlText);
}

function toSqlite(value: unknown): SQLInputValue {
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (value === undefined) return null;
  return value as SQLInputValue;
}
