import pg from 'pg';
import { type RateLimiterAbstract, RateLimiterMemory, RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import type { UseLimit } from './core/ports.js';

/**
 * Per-key limits on costly actions (chats, images, Discord messages and commands), made by
 * rate-limiter-flexible. On a PostgreSQL store they are kept in that database, so a limit holds
 * across every process sharing it; on SQLite (one process, or a few on one file) each process
 * counts its own.
 */
export interface RateLimits {
  /** A limiter of `perMinute` points a minute per key; `name` keeps limits of different actions apart. */
  limiter(name: string, perMinute: number): RateLimiterAbstract;
  /** Whether every process sharing the store shares these limits. */
  readonly shared: boolean;
  close(): Promise<void>;
}

const tableName = 'rate_limits';
/** An advisory lock key of ours for making that table; "likeness" + 1, beside the migrations' key. */
const setupLockKey = (0x6c696b656e657373n + 1n).toString();

/** Limits each process keeps in memory. */
export function memoryRateLimits(): RateLimits {
  return {
    shared: false,
    limiter: (name, perMinute) => new RateLimiterMemory({ keyPrefix: name, points: perMinute, duration: 60 }),
    close: async () => undefined,
  };
}

/**
 * Limits for the store at `storeUrl`: in its PostgreSQL database (a table of their own, made on
 * first use, through a small pool of their own), or in memory for SQLite.
 */
export async function openRateLimits(storeUrl: string, onConnectionError: (error: Error) => void): Promise<RateLimits> {
  if (!/^postgres(ql)?:\/\//.test(storeUrl)) return memoryRateLimits();
  const pool = new pg.Pool({ connectionString: storeUrl, max: 3 });
  pool.on('error', onConnectionError);
  try {
    // The first limiter makes the table. Two processes starting at once would both run its
    // CREATE TABLE IF NOT EXISTS, and PostgreSQL refuses the second ("type rate_limits already
    // exists"): it is made under an advisory lock, on the connection that holds the lock.
    const client = await pool.connect();
    try {
      await client.query('select pg_advisory_lock($1)', [setupLockKey]);
      await new Promise<void>((resolve, reject) => {
        new RateLimiterPostgres({ storeClient: client, storeType: 'client', tableName, keyPrefix: 'setup', points: 1, duration: 60 }, (error?: Error) =>
          error ? reject(error) : resolve(),
        );
      });
    } finally {
      await client.query('select pg_advisory_unlock($1)', [setupLockKey]).catch(() => undefined);
      client.release();
    }
  } catch (error) {
    await pool.end();
    throw error;
  }
  return {
    shared: true,
    limiter: (name, perMinute) =>
      new RateLimiterPostgres({ storeClient: pool, storeType: 'pool', tableName, tableCreated: true, keyPrefix: name, points: perMinute, duration: 60 }),
    close: () => pool.end(),
  };
}

/** The core's port over a limiter of these limits: `perMinute` uses of `name` a minute per key. */
export function useLimit(limits: RateLimits, name: string, perMinute: number): UseLimit {
  const limiter = limits.limiter(name, perMinute);
  return {
    perMinute,
    async take(key) {
      try {
        await limiter.consume(key);
        return undefined;
      } catch (rejection) {
        if (rejection instanceof RateLimiterRes) return rejection.msBeforeNext;
        throw rejection;
      }
    },
  };
}
