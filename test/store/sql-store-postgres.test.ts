import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SqlStore, openSqlStore } from '../../src/store/sql/sql-store.js';
import { createTestDatabase, postgresServer } from './postgres-database.js';
import { describeRepositories } from './repositories-contract.js';

describeRepositories('PostgreSQL', async () => {
  const database = await createTestDatabase();
  return { open: () => openSqlStore(database.url, { poolSize: 8 }), destroy: database.drop };
});

describe('PostgreSQL store after the server drops its connections', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let store: SqlStore;
  const connectionErrors: Error[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    store = await openSqlStore(database.url, { onConnectionError: (error) => connectionErrors.push(error) });
  });
  afterAll(async () => {
    await store?.close();
    await database?.drop();
  });

  it('keeps working and hearing signals, without crashing on the dropped idle connections', async () => {
    await store.facts.set('warm', true);
    const heard: string[] = [];
    const stop = store.onJobChanged((jobId) => heard.push(jobId));
    const admin = new pg.Client({ connectionString: `${postgresServer}/postgres` });
    await admin.connect();
    try {
      const { rowCount } = await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1', [database.url.split('/').at(-1)]);
      expect(rowCount).toBeGreaterThanOrEqual(2);
    } finally {
      await admin.end();
    }
    await sleep(200);
    // The pool opens a fresh connection; the listener reconnects within about a second.
    expect(await store.facts.get('warm')).toBe(true);
    const jobId = randomUUID();
    for (let waited = 0; waited < 8_000 && !heard.includes(jobId); waited += 250) {
      await store.signals.jobChanged(jobId);
      await sleep(250);
    }
    stop();
    expect(heard).toContain(jobId);
    expect(connectionErrors.length).toBeGreaterThanOrEqual(1);
  });
});
