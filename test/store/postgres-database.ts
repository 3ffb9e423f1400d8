import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** The loopback PostgreSQL the tests use (trust auth). */
export const postgresServer = 'postgres://postgres@127.0.0.1:5432';

/**
 * A fresh database for one test file, so files running at once never share rows; dropped
 * (with any connection a killed child left) by `drop`.
 */
export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `likeness_test_${randomBytes(6).toString('hex')}`;
  await administer(`create database ${name}`);
  return {
    url: `${postgresServer}/${name}`,
    drop: () => administer(`drop database if exists ${name} with (force)`),
  };
}

async function administer(statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: `${postgresServer}/postgres` });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}
