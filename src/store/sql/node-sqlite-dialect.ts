import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { DatabaseSync, SQLInputValue, StatementSync } from 'node:sqlite';
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
import { sharedReadings } from './shared-readings.js';
import { refuseNulText } from './sql-context.js';

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
  #driver: NodeSqliteDriver | undefined;

  constructor(private readonly options: NodeSqliteDialectOptions) {}

  createDriver(): Driver {
    this.#driver = new NodeSqliteDriver(this.options);
    return this.#driver;
  }

  /**
   * Changes whenever anything was committed to the file since: by another process (SQLite's
   * `PRAGMA data_version`, which moves on every commit of another connection) or by this one
   * (every statement that may write is counted). Taken in turn with the queries on the one
   * connection, so what is read after it is at least as new as it.
   */
  changeToken(): Promise<string> {
    if (!this.#driver) throw new Error('The SQLite dialect has no driver yet.');
    return this.#driver.changeToken();
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
  /** Holders and waiters of the connection; none means a statement may run right away. */
  claims: number;
  users: number;
  /** Settles once the opening pragmas ran (they may wait for another process's lock). */
  ready: Promise<void>;
}

const openDatabases = new Map<string, SharedDatabase>();

class NodeSqliteDriver implements Driver {
  #shared: SharedDatabase | undefined;

  constructor(private readonly options: NodeSqliteDialectOptions) {}

  async init(): Promise<void> {
    // Loaded here, not by a static import: ESM links every static import (and a builtin's
    // ExperimentalWarning with it) before any module body runs, so src/silence-sqlite-warning.ts
    // could never filter that warning. Taken before the lookup below, which must not yield.
    const { DatabaseSync } = await import('node:sqlite');
    const key = this.options.path === ':memory:' ? undefined : path.resolve(this.options.path);
    const existing = key === undefined ? undefined : openDatabases.get(key);
    if (existing) {
      existing.users += 1;
      this.#shared = existing;
      await existing.ready;
      return;
    }
    const database = new DatabaseSync(this.options.path);
    // SQLite's own busy wait would sleep on the event loop; wait briefly here, then retry
    // asynchronously (see executeQuery) up to busyTimeoutMs.
    database.exec('PRAGMA busy_timeout = 2');
    const ready = (async () => {
      // Switching to WAL takes the file's lock: processes opening one file at once wait their turn.
      await retryWhileBusy(() => database.exec('PRAGMA journal_mode = WAL'), this.options.busyTimeoutMs ?? 10_000);
      // NORMAL is durable in WAL mode except for the last transactions on power loss, not on a crash.
      database.exec('PRAGMA synchronous = NORMAL');
      database.exec('PRAGMA foreign_keys = ON');
    })();
    const connection = new NodeSqliteConnection(database, this.options.busyTimeoutMs ?? 10_000);
    // Registered before waiting, so this process still opens the file once.
    this.#shared = { database, connection, queue: Promise.resolve(), claims: 0, users: 1, ready };
    if (key !== undefined) openDatabases.set(key, this.#shared);
    try {
      await ready;
    } catch (error) {
      if (key !== undefined) openDatabases.delete(key);
      this.#shared = undefined;
      database.close();
      throw error;
    }
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const shared = this.#shared;
    if (!shared) throw new Error('The SQLite driver is not initialised or already closed.');
    let release!: () => void;
    const previous = shared.queue;
    shared.claims += 1;
    shared.queue = new Promise((resolve) => {
      release = () => {
        shared.claims -= 1;
        resolve();
      };
    });
    await previous;
    shared.connection.release = release;
    return shared.connection;
  }

  /**
   * Asked on every request (twice for most), and a reading costs a read transaction, whose file
   * locks are system calls: every ask made before a reading shares it (see `sharedReadings`).
   */
  readonly changeToken: () => Promise<string> = sharedReadings(() => this.#readChangeToken());

  async #readChangeToken(): Promise<string> {
    const shared = this.#shared;
    // When nobody holds or awaits the connection (no transaction is open), read it at once
    // instead of queueing.
    const now = shared && shared.claims === 0 ? shared.connection.changeTokenNow() : undefined;
    if (now !== undefined) return now;
    const connection = (await this.acquireConnection()) as NodeSqliteConnection;
    try {
      return await connection.changeToken();
    } finally {
      connection.release();
    }
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
  readonly #statements = new Map<string, Prepared>();
  /** Statements run that may have written (anything but a SELECT), counted for `changeToken`. */
  #writes = 0;

  constructor(
    private readonly database: DatabaseSync,
    private readonly busyTimeoutMs: number,
  ) {}

  /**
   * Runs the statement, retrying while another process holds the write lock (SQLITE_BUSY):
   * a busy statement did nothing, so running it again is safe, and waiting with timers keeps
   * the event loop free for everything that does not need the database.
   */
  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const deadline = Date.now() + this.busyTimeoutMs;
    for (let attempt = 0; ; attempt++) {
      try {
        return this.#execute<R>(query);
      } catch (error) {
        if (!isBusy(error) || Date.now() >= deadline) throw error;
        await sleep(Math.min(2 ** attempt, 25));
      }
    }
  }

  async changeToken(): Promise<string> {
    const { data_version } = (await this.executeQuery<{ data_version: number }>(raw(dataVersion))).rows[0]!;
    return `${data_version}.${this.#writes}`;
  }

  /** The token read synchronously, or undefined when another process's lock is in the way. */
  changeTokenNow(): string | undefined {
    try {
      const row = this.#prepare(dataVersion).statement.get() as { data_version: number };
      return `${row.data_version}.${this.#writes}`;
    } catch (error) {
      if (isBusy(error)) return undefined;
      throw error;
    }
  }

  #execute<R>(query: CompiledQuery): QueryResult<R> {
    refuseNulText(query.parameters);
    const { statement, returnsRows, reads } = this.#prepare(query.sql);
    // Counted before running: a statement that fails half-way may still have written.
    if (!reads) this.#writes += 1;
    const parameters = query.parameters.map(toSqlite);
    if (returnsRows) {
      return { rows: statement.all(...parameters) as R[] };
    }
    const { changes, lastInsertRowid } = statement.run(...parameters);
    return { rows: [], numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid) };
  }

  async *streamQuery<R>(query: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    refuseNulText(query.parameters);
    const { statement, reads } = this.#prepare(query.sql);
    if (!reads) this.#writes += 1;
    for (const row of statement.iterate(...query.parameters.map(toSqlite))) {
      yield { rows: [row as R] };
    }
  }

  /**
   * Statements are prepared once per SQL text (the queries are few and fixed), and whether one
   * returns rows is asked once: `columns()` costs more than running a small query.
   */
  #prepare(sqlText: string): Prepared {
    let prepared = this.#statements.get(sqlText);
    if (!prepared) {
      const statement = this.database.prepare(sqlText);
      // Only plain SELECTs (and the data_version check itself) are known not to write.
      const reads = /^\s*select\b/i.test(sqlText) || sqlText === dataVersion;
      prepared = { statement, returnsRows: returnsRows(statement, sqlText), reads };
      if (this.#statements.size < 500) this.#statements.set(sqlText, prepared);
    }
    return prepared;
  }
}

interface Prepared {
  statement: StatementSync;
  returnsRows: boolean;
  /** A plain read: running it changes nothing. */
  reads: boolean;
}

/**
 * Whether a statement yields rows: asked of SQLite where Node can (`columns()`, Node >= 22.16);
 * on Node 22.12 to 22.15 read from the SQL, which here is Kysely's or our own: queries, pragmas
 * and statements with a RETURNING clause yield rows, the rest are run for their changes.
 */
function returnsRows(statement: StatementSync, sqlText: string): boolean {
  if (typeof statement.columns === 'function') return statement.columns().length > 0;
  return /^\s*(?:select|with|pragma|values|explain)\b/i.test(sqlText) || /\breturning\b/i.test(sqlText);
}

/** SQLITE_BUSY and its extended codes (the low byte is the primary code). */
function isBusy(error: unknown): boolean {
  const errcode = (error as { errcode?: unknown } | null)?.errcode;
  return typeof errcode === 'number' && (errcode & 0xff) === 5;
}

/** Moves whenever another connection (another process) commits to the file. */
const dataVersion = 'PRAGMA data_version';

function raw(sqlText: string): CompiledQuery {
  return CompiledQuery.raw(sqlText);
}

function toSqlite(value: unknown): SQLInputValue {
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (value === undefined) return null;
  return value as SQLInputValue;
}

/** Runs `statement` again after short timer waits while another process holds the file's lock. */
async function retryWhileBusy(statement: () => void, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let wait = 2; ; wait = Math.min(wait * 2, 50)) {
    try {
      statement();
      return;
    } catch (error) {
      const busy = (error as { errcode?: number }).errcode === 5 || (error as { errcode?: number }).errcode === 6;
      if (!busy || Date.now() >= deadline) throw error;
      await sleep(wait);
    }
  }
}
