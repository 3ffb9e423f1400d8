import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type Keyv from 'keyv';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AppError } from '../../src/core/errors.js';
import { createKeyv, openStore } from '../../src/store/create-keyv.js';

type Query = (sql: string, ...parameters: unknown[]) => Promise<Array<Record<string, unknown>>>;
const postgresUrl = 'postgres://postgres@127.0.0.1:5432/test';
const redisUrl = 'redis://127.0.0.1:6379';
const connectTimeoutMs = 2_000;

describe('createKeyv', () => {
  let directory: string;
  const opened: Keyv[] = [];

  beforeEach(async () => {
    directory = await mkdtemp(path.join(os.tmpdir(), 'likeness-keyv-'));
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((keyv) => keyv.disconnect()));
    await rm(directory, { recursive: true, force: true });
  });
  const open = async (...parameters: Parameters<typeof createKeyv>): Promise<Keyv> => {
    const keyv = await createKeyv(...parameters);
    opened.push(keyv);
    return keyv;
  };

  it('names the supported schemes when given another', async () => {
    for (const storeUrl of ['mongodb://127.0.0.1/store', 'data/store.sqlite']) {
      const refused = createKeyv(storeUrl);
      await expect(refused).rejects.toBeInstanceOf(AppError);
      await expect(refused).rejects.toThrow(/sqlite:\/\/, redis:\/\/, rediss:\/\/, postgres:\/\/, postgresql:\/\//);
    }
  });

  it('opens SQLite at a relative path, creating the directory, in WAL mode', async () => {
    const file = path.join(directory, 'nested', 'deeper', 'store.sqlite');
    const keyv = await open(`sqlite://${path.relative(process.cwd(), file)}`);
    await keyv.set('key', 'value');
    expect((await stat(file)).isFile()).toBe(true);
    const query = (keyv.store as { query: Query }).query;
    expect(await query('PRAGMA journal_mode')).toEqual([{ journal_mode: 'wal' }]);
    expect(await query('PRAGMA synchronous')).toEqual([{ synchronous: 1 }]); // NORMAL
    expect(await query('PRAGMA busy_timeout')).toEqual([{ timeout: 5000 }]);
  });

  it('fails with the path when the SQLite file cannot be opened', async () => {
    await writeFile(path.join(directory, 'plain-file'), '');
    await expect(createKeyv(`sqlite://${path.join(directory, 'plain-file', 'store.sqlite')}`)).rejects.toThrow(
      /^SQLite store .*plain-file\/store\.sqlite could not be opened: .*EEXIST/,
    );
    // A directory where the database file should be: SQLite itself refuses it.
    await expect(createKeyv(`sqlite://${directory}`)).rejects.toThrow(/^SQLite store .* could not be opened: .*SQLITE_CANTOPEN/);
  });

  it('keeps SQLite tables apart', async () => {
    const storeUrl = `sqlite://${path.join(directory, 'store.sqlite')}`;
    const first = await openStore(storeUrl, { table: 'first' });
    const second = await openStore(storeUrl, { table: 'second' });
    await first.set('key', 1);
    await second.set('key', 2);
    await Promise.all([first.close(), second.close()]);
    const reopened = await openStore(storeUrl, { table: 'first' });
    expect(await reopened.get('key')).toBe(1);
    await reopened.close();
  });

  it('refuses table names that are not plain identifiers', async () => {
    await expect(createKeyv(postgresUrl, { table: 'keyv; DROP TABLE users' })).rejects.toMatchObject({
      code: 'NOT_CONFIGURED',
    });
  });

  it('fails start-up with the reason when Redis is unreachable, without leaking the password', async () => {
    const started = Date.now();
    const failed = createKeyv('redis://:hunter2@127.0.0.1:1', { connectTimeoutMs: 1_000 });
    await expect(failed).rejects.toThrow(/^Store redis:\/\/:\*\*\*@127\.0\.0\.1:1 is unreachable: .*ECONNREFUSED/);
    await expect(failed).rejects.not.toThrow(/hunter2/);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('fails start-up with the reason when PostgreSQL is unreachable or the database is missing', async () => {
    await expect(createKeyv('postgres://postgres@127.0.0.1:1/test', { connectTimeoutMs })).rejects.toThrow(
      /^Store postgres:\/\/postgres@127\.0\.0\.1:1\/test is unreachable: .*ECONNREFUSED/,
    );
    await expect(createKeyv('postgresql://postgres@127.0.0.1:5432/likeness_missing', { connectTimeoutMs })).rejects.toThrow(
      /database "likeness_missing" does not exist/,
    );
  });

  it('prefixes Redis keys with the namespace', async () => {
    const namespace = `likeness-test-${randomUUID()}`;
    const keyv = await open(redisUrl, { namespace, connectTimeoutMs });
    const other = await open(redisUrl, { namespace: `${namespace}-other`, connectTimeoutMs });
    await keyv.set('key', 'mine');
    expect(await other.get('key')).toBeUndefined();
    const client = (keyv.store as { client: { get(key: string): Promise<string | null> } }).client;
    expect(await client.get(`${namespace}::key`)).toBe('{"value":"mine"}');
    await keyv.clear();
  });

  describe('PostgreSQL pool', () => {
    const table = `create_keyv_test_${randomUUID().replaceAll('-', '')}`;
    afterEach(async () => {
      const keyv = await createKeyv(postgresUrl, { table, connectTimeoutMs });
      await (keyv.store as { query: Query }).query(`DROP TABLE IF EXISTS ${table}`);
      await keyv.disconnect();
    });

    it('refuses a second PostgreSQL URL while one is open, since the adapter shares one pool', async () => {
      await open(postgresUrl, { table, connectTimeoutMs });
      await expect(createKeyv('postgres://postgres@127.0.0.1:5432/postgres', { table })).rejects.toThrow(/one PostgreSQL store URL/);
    });

    it('survives the server dropping idle connections, and reports it', async () => {
      const errors: unknown[] = [];
      const keyv = await open(postgresUrl, { table, connectTimeoutMs, onError: (error) => errors.push(error) });
      const query = (keyv.store as { query: (sql: string, values?: unknown[]) => ReturnType<Query> }).query;
      // Concurrent queries make the pool open several connections, all of them ours.
      const answers = await Promise.all([1, 2, 3].map(() => query('SELECT pg_backend_pid() AS pid, pg_sleep(0.05)')));
      const pids = [...new Set(answers.flat().map((row) => Number(row.pid)))];
      expect(pids.length).toBeGreaterThan(1);
      await query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid WHERE pid <> pg_backend_pid()', [pids]);
      await sleep(200);
      expect(errors.map((error) => String((error as Error).message)).join('\n')).toMatch(/terminat/i);
      await keyv.set('after', 'restart');
      expect(await keyv.get('after')).toBe('restart');
    });
  });
});
