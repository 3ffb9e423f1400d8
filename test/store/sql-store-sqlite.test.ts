import { mkdtemp, rm } from 'node:fs/promises';
import { DatabaseSync, StatementSync } from 'node:sqlite';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { openSqlStore } from '../../src/store/sql/sql-store.js';
import { describeRepositories } from './repositories-contract.js';

describeRepositories('SQLite (node:sqlite, one file, two connections)', async () => {
  const directory = await mkdtemp(path.join(os.tmpdir(), 'likeness-sqlite-'));
  return {
    open: () => openSqlStore(`sqlite://${path.join(directory, 'store.db')}`),
    destroy: () => rm(directory, { recursive: true, force: true }),
  };
});

// Node 22.12 to 22.15 have no `StatementSync#columns`: the dialect then tells statements that
// yield rows by their SQL. The whole contract runs that way too, migrations included.
describeRepositories('SQLite as on Node 22.12 to 22.15 (no StatementSync#columns)', async () => {
  const directory = await mkdtemp(path.join(os.tmpdir(), 'likeness-sqlite-old-node-'));
  const columns = Object.getOwnPropertyDescriptor(StatementSync.prototype, 'columns')!;
  Reflect.deleteProperty(StatementSync.prototype, 'columns');
  return {
    open: () => openSqlStore(`sqlite://${path.join(directory, 'store.db')}`),
    destroy: async () => {
      Object.defineProperty(StatementSync.prototype, 'columns', columns);
      await rm(directory, { recursive: true, force: true });
    },
  };
});

describe('the SQLite change token', () => {
  it('shares one reading among the asks made before it, taken after every one of them', async () => {
    const directory = await mkdtemp(path.join(os.tmpdir(), 'likeness-sqlite-token-'));
    const file = path.join(directory, 'store.db');
    const store = await openSqlStore(`sqlite://${file}`);
    const other = new DatabaseSync(file);
    const get = vi.spyOn(StatementSync.prototype, 'get');
    try {
      const before = await store.changeToken();
      const readings = () => get.mock.contexts.filter((statement) => (statement as StatementSync).sourceSQL === 'PRAGMA data_version').length;
      const readingsBefore = readings();
      const first = store.changeToken();
      // Another process commits after the first ask: the reading that answers it must see the commit.
      other.exec('CREATE TABLE IF NOT EXISTS probe (x); INSERT INTO probe VALUES (1)');
      const tokens = await Promise.all([first, ...Array.from({ length: 9 }, () => store.changeToken())]);
      expect(new Set(tokens).size).toBe(1);
      expect(tokens[0]).not.toBe(before);
      expect(readings() - readingsBefore).toBe(1);
      // A later ask gets a reading of its own.
      other.exec('INSERT INTO probe VALUES (2)');
      expect(await store.changeToken()).not.toBe(tokens[0]);
    } finally {
      get.mockRestore();
      other.close();
      await store.close();
      await rm(directory, { recursive: true, force: true });
    }
  });
});
