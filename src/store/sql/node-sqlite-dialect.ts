import path from 'node:path';
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

/**
 * One open file per process, shared by every store on it: `DatabaseSync` waits for a lock
 * synchronously, so a second connection in the same process waiting on the first would block
 * the very thread that must finish the first's transaction. Within a process the queue below
 * serialises; across processes SQLite's file lock and busy_timeout do.
 */
interface SharedDatabase {
  database: DatabaseSync;
  connection: NodeSqliteConnection;
  /** Resolves when the current holder (a query, or a whole transaction) releases the connection. */
  queue: Promise<void>;
  users: number;
}

const openDatabases = new Map<string, SharedDatabase>();

class NodeSqliteDriver implements Driver {
  #shared: SharedDatabase | undefined;

  constructor(private readonly options: NodeSqliteDialectOptions) {}

  async init(): Promise<void> {
    const key = this.options.path === ':memory:' ? undefined : path.resolve(this.options.path);
    const existing = key === undefined ? undefined : openDatabases.get(key);
    if (existing) {
      existing.users += 1;
      this.#shared = existing;
      return;
    }
    const database = new DatabaseSync(this.options.path);
    database.exec(`PRAGMA busy_timeout = ${Math.trunc(this.options.busyTimeoutMs ?? 10_000)}`);
    database.exec('PRAGMA journal_mode = WAL');
    // NORMAL is durable in WAL mode except for the last transactions on power loss, not on a crash.
    database.exec('PRAGMA synchronous = NORMAL');
    database.exec('PRAGMA foreign_keys = ON');
    this.#shared = { database, connection: new NodeSqliteConnection(database), queue: Promise.resolve(), users: 1 };
    if (key !== undefined) openDatabases.set(key, this.#shared);
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const shared = this.#shared;
    if (!shared) throw new Error('The SQLite driver is not initialised or already closed.');
    let release!: () => void;
    const previous = shared.queue;
    shared.queue = new Promise((resolve) => {
      release = resolve;
    });
    await previous;
    shared.connection.release = release;
    return shared.connection;
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
    const shared = this.#shared;
    this.#shared = undefined;
    if (!shared) return;
    shared.users -= 1;
    if (shared.users > 0) return;
    for (const [key, value] of openDatabases) if (value === shared) openDatabases.delete(key);
    await shared.queue;
    shared.database.close();
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
