import { openSqlStore } from '../../src/store/sql/sql-store.js';
import { createTestDatabase } from './postgres-database.js';
import { describeRepositories } from './repositories-contract.js';

describeRepositories('PostgreSQL', async () => {
  const database = await createTestDatabase();
  return { open: () => openSqlStore(database.url, { poolSize: 8 }), destroy: database.drop };
});
