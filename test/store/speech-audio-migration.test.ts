import { describe, expect, it } from 'vitest';
import { openSqlStore } from '../../src/store/sql/sql-store.js';
import { migrationDatabases } from './migration-databases.js';
import { undo0016 } from './undo-migrations.js';

/**
 * Migration 0016 on a database where spoken audio was indexed as facts (`speech:<hash>`, the
 * stored file as JSON): each becomes a row, asked for as of the migration, so the sweep's
 * retention and size bound cover what was spoken before too; the facts go.
 */
describe.each(migrationDatabases)('migration 0016-speech-audio on $dialect', ({ database }) => {
  it('moves the spoken-audio facts into rows the cache then keeps and lets go of', async () => {
    const { url, run, drop } = await database();
    try {
      let store = await openSqlStore(url);
      await store.facts.set('health:probe', true);
      await store.close();

      const hash = 'ab'.repeat(32);
      const file = { key: `${'cd'.repeat(32)}.mp3`, mimeType: 'audio/mpeg', size: 4321 };
      await run([...undo0016, `insert into facts (key, value) values ('speech:${hash}', '${JSON.stringify(file)}')`]);
      const before = Date.now() * 1000;
      store = await openSqlStore(url);
      try {
        expect(await store.facts.get(`speech:${hash}`)).toBeUndefined();
        expect(await store.facts.get('health:probe')).toBe(true);
        expect(await store.speechAudio.use(hash, before + 1)).toEqual(file);
        // No one's: its release looks at every account's image jobs.
        const expired = await store.transaction(({ speechAudio }) => speechAudio.takeExpired(before + 2, Number.MAX_SAFE_INTEGER, 10));
        expect(expired).toEqual([{ fileKey: file.key, accountId: '' }]);
      } finally {
        await store.close();
      }
    } finally {
      await drop();
    }
  });
});
