import { mkdtemp, rm } from 'node:fs/promises';
import { DatabaseSync } from 'node:sqlite';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createTestDatabase } from './postgres-database.js';

/** A fresh database a migration test opens the store on, runs raw statements against, and drops. */
export interface MigrationDatabase {
  url: string;
  /** Runs statements outside the store, as an older schema or older data would have them. */
  run(statements: string[]): Promise<void>;
  drop(): Promise<void>;
}

/** One database of each dialect, for `describe.each`: a migration must do the same on both. */
export const migrationDatabases: Array<{ dialect: string; database: () => Promise<MigrationDatabase> }> = [
  {
    dialect: 'SQLite',
    async database() {
      const directory = await mkdtemp(path.join(os.tmpdir(), 'likeness-migration-'));
      const file = path.join(directory, 'store.sqlite');
      return {
        url: `sqlite://${file}`,
        run: async (statements) => {
          const db = new DatabaseSync(file);
          for (const statement of statements) db.exec(statement);
          db.close();
        },
        drop: () => rm(directory, { recursive: true, force: true }),
      };
    },
  },
  {
    dialect: 'PostgreSQL',
    async database() {
      const database = await createTestDatabase();
      return {
        url: database.url,
        run: async (statements) => {
          const client = new pg.Client({ connectionString: database.url });
          await client.connect();
          for (const statement of statements) await client.query(statement);
          await client.end();
        },
        drop: database.drop,
      };
    },
  },
];
