import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { openSqlStore } from '../../src/store/sql/sql-store.js';
import { describeRepositories } from './repositories-contract.js';

describeRepositories('SQLite (node:sqlite, one file, two connections)', async () => {
  const directory = await mkdtemp(path.join(os.tmpdir(), 'likeness-sqlite-'));
  return {
    open: () => openSqlStore(`sqlite://${path.join(directory, 'store.db')}`),
    destroy: () => rm(directory, { recursive: true, force: true }),
  };
});
