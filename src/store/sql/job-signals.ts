import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import type { SignalRepository } from '../../core/repositories.js';
import type { Database } from './schema.js';
import type { SqlContext } from './sql-context.js';

const channel = 'likeness_job_changed';

/** Sends job signals: NOTIFY on PostgreSQL (delivered at commit), a row in the polled log on SQLite. */
export class SqlSignalRepository implements SignalRepository {
  constructor(private readonly context: SqlContext) {}

  async jobChanged(jobId: string): Promise<void> {
    if (this.context.dialect === 'postgres') {
      await sql`select pg_notify(${channel}, ${jobId})`.execute(this.context.db);
      return;
    }
    await this.context.db.insertInto('job_signals').values({ job_id: jobId, created_millis: Date.now() }).execute();
  }
}

/** Hears job signals from every process. */
export interface JobSignalListener {
  subscribe(listener: (jobId: string) => void): () => void;
  close(): Promise<void>;
}

/**
 * LISTEN on one dedicated connection, opened before the store is returned, so a subscriber
 * that subscribes and then reads the job cannot miss a change in between. A lost connection
 * is reopened; signals sent meanwhile are lost, which is why listeners re-read the job.
 */
export class PostgresJobSignals implements JobSignalListener {
  readonly #listeners = new Set<(jobId: string) => void>();
  #client: pg.Client | undefined;
  #closed = false;

  private constructor(private readonly url: string) {}

  static async open(url: string): Promise<PostgresJobSignals> {
    const signals = new PostgresJobSignals(url);
    await signals.#connect();
    return signals;
  }

  subscribe(listener: (jobId: string) => void): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#client?.end().catch(() => undefined);
  }

  async #connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url });
    client.on('notification', (message) => {
      if (message.channel !== channel || message.payload === undefined) return;
      for (const listener of this.#listeners) {
        try {
          listener(message.payload);
        } catch {
          // One listener's failure must not silence the others.
        }
      }
    });
    client.on('error', () => {
      if (this.#closed) return;
      void client.end().catch(() => undefined);
      this.#reconnectLater();
    });
    await client.connect();
    await client.query(`LISTEN ${channel}`);
    this.#client = client;
  }

  /** Tries again every second until the server is back or the store closes. */
  #reconnectLater(): void {
    setTimeout(() => {
      if (this.#closed) return;
      this.#connect().catch(() => this.#reconnectLater());
    }, 1_000).unref();
  }
}

/** Polls the signal log while someone listens; prunes entries older than a minute now and then. */
export class SqliteJobSignals implements JobSignalListener {
  readonly #listeners = new Set<(jobId: string) => void>();
  #timer: NodeJS.Timeout | undefined;
  #lastPosition = 0;
  #ticks = 0;
  #polling: Promise<void> = Promise.resolve();

  private constructor(
    private readonly db: Kysely<Database>,
    private readonly intervalMs: number,
  ) {}

  static async open(db: Kysely<Database>, intervalMs = 100): Promise<SqliteJobSignals> {
    const signals = new SqliteJobSignals(db, intervalMs);
    const { last } = await db
      .selectFrom('job_signals')
      .select((expression) => expression.fn.max('position').as('last'))
      .executeTakeFirstOrThrow();
    signals.#lastPosition = Number(last ?? 0);
    return signals;
  }

  subscribe(listener: (jobId: string) => void): () => void {
    this.#listeners.add(listener);
    this.#timer ??= setInterval(() => {
      this.#polling = this.#polling.then(() => this.#poll()).catch(() => undefined);
    }, this.intervalMs).unref();
    return () => {
      this.#listeners.delete(listener);
      if (this.#listeners.size === 0) {
        clearInterval(this.#timer);
        this.#timer = undefined;
      }
    };
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#polling;
  }

  async #poll(): Promise<void> {
    const rows = await this.db
      .selectFrom('job_signals')
      .select(['position', 'job_id'])
      .where('position', '>', this.#lastPosition)
      .orderBy('position')
      .limit(1_000)
      .execute();
    for (const row of rows) {
      this.#lastPosition = Number(row.position);
      for (const listener of this.#listeners) {
        try {
          listener(row.job_id);
        } catch {
          // One listener's failure must not silence the others.
        }
      }
    }
    if (++this.#ticks % 600 === 0) {
      await this.db.deleteFrom('job_signals').where('created_millis', '<', Date.now() - 60_000).execute();
    }
  }
}
