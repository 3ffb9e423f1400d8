import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type RateLimits, openRateLimits } from '../../src/rate-limits.js';
import { createTestDatabase } from './postgres-database.js';

describe('rate limits', () => {
  let database: { url: string; drop(): Promise<void> };
  const opened: RateLimits[] = [];
  // A pooled connection failing while the tests run is a defect; one ended by the database's
  // forced drop while its pool is closing is not (pool.end() can settle first), and throwing
  // from the handler then failed whole suite runs.
  const connectionErrors: Error[] = [];
  let closing = false;
  const open = async (url: string) => {
    const limits = await openRateLimits(url, (error) => {
      if (!closing) connectionErrors.push(error);
    });
    opened.push(limits);
    return limits;
  };

  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterEach(() => {
    expect(connectionErrors).toEqual([]);
  });
  afterAll(async () => {
    closing = true;
    await Promise.all(opened.map((limits) => limits.close()));
    await database?.drop();
  });

  it('holds one limit across processes on a PostgreSQL store, each action apart', async () => {
    // Openings at once, as processes starting together: each makes or finds the table.
    const [one, two] = await Promise.all(Array.from({ length: 6 }, () => open(database.url)));
    expect(one!.shared).toBe(true);
    const first = one!.limiter('api-chat', 3);
    const second = two!.limiter('api-chat', 3);
    await first.consume('account-1');
    await second.consume('account-1');
    await first.consume('account-1');
    await expect(second.consume('account-1')).rejects.toMatchObject({ remainingPoints: 0 });
    // Another key, and another action with the same key, count apart.
    await expect(second.consume('account-2')).resolves.toMatchObject({ remainingPoints: 2 });
    await expect(two!.limiter('api-images', 3).consume('account-1')).resolves.toMatchObject({ remainingPoints: 2 });
  });

  it('counts in each process on SQLite', async () => {
    const [one, two] = await Promise.all([open('sqlite:///tmp/unused.sqlite'), open('sqlite:///tmp/unused.sqlite')]);
    expect(one!.shared).toBe(false);
    await one!.limiter('api-chat', 1).consume('account-1');
    await expect(two!.limiter('api-chat', 1).consume('account-1')).resolves.toMatchObject({ remainingPoints: 0 });
  });
});
