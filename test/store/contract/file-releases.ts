import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { RepositoryStore } from '../../../src/core/repositories.js';
import { characterRecord, jobRecord } from '../repository-fixtures.js';
import type { ContractContext } from './contract-context.js';

/** A key no other test uses, in the store's shape. */
const fileKey = (name: string) => `${randomUUID().replaceAll('-', '')}${name}.png`;

/**
 * The sweep's `takeUnheld` takes every due release in the database, other tests' too: each
 * test looks only at its own keys, released far in the past at times of its own.
 */
function sweep(store: RepositoryStore, releasedBeforeMicros: number): Promise<{ taken: number; unheld: string[] }> {
  return store.transaction(({ fileReleases }) => fileReleases.takeUnheld(releasedBeforeMicros, 1000));
}

/** Files let go of: taken by one sweeper once due, unless stored again since; answered only if nothing holds them. */
export function fileReleasesContract(context: ContractContext): void {
  describe('file releases', () => {
    it('answer a due release nothing holds, and drop the release of a file a character, a message or the account’s job holds', async () => {
      const store = context.store();
      const { account, character } = await context.createAccount('releaser');
      const [unheld, avatar, jobOutput, notYetDue] = ['unheld', 'avatar', 'output', 'later'].map(fileKey) as [string, string, string, string];
      await store.characters.create(characterRecord(account.id, 'Holder', { avatar: { key: avatar, mimeType: 'image/png' } }));
      const job = jobRecord(account.id);
      await store.jobs.create({ ...job, outputFiles: [{ name: 'image-1.png', key: jobOutput, mimeType: 'image/png', size: 1, createdMillis: 1, feedback: { like: null, feedback: null } }] });
      await store.fileReleases.release([unheld, avatar, jobOutput, unheld], account.id, 1_000);
      await context.other().fileReleases.release([notYetDue], character.accountId, 3_000);

      const first = await sweep(store, 2_000);
      expect(first.unheld).toContain(unheld);
      expect(first.unheld).not.toContain(avatar);
      expect(first.unheld).not.toContain(jobOutput);
      expect(first.unheld).not.toContain(notYetDue);
      // Taken once: a held file's release is gone, and whoever lets go of it again records another.
      expect((await sweep(context.other(), 2_000)).unheld).not.toContain(unheld);
      expect((await sweep(store, 4_000)).unheld).toContain(notYetDue);
      await store.fileReleases.release([avatar], account.id, 5_000);
      expect((await sweep(store, 6_000)).unheld).not.toContain(avatar);
    });

    it('keep a file stored again within the grace period: its release starts anew', async () => {
      const [store, other] = [context.store(), context.other()];
      const { account } = await context.createAccount('renewer');
      const [renewed, left] = [fileKey('renewed'), fileKey('left')];
      await store.fileReleases.release([renewed, left], account.id, 10_000);
      // The same bytes stored by another process, as a card with this avatar is imported.
      await other.fileReleases.renew(renewed, 30_000);
      await other.fileReleases.renew(fileKey('never-released'), 30_000);

      const swept = await sweep(store, 20_000);
      expect(swept.unheld).toContain(left);
      expect(swept.unheld).not.toContain(renewed);
      expect((await sweep(store, 40_000)).unheld).toContain(renewed);
    });

    it('record a release, of no one, of the files found on disk that no row holds nor release records; a job of any account keeps one', async () => {
      const [store, other] = [context.store(), context.other()];
      const { account } = await context.createAccount('scanner');
      const { account: stranger } = await context.createAccount('stranger');
      const [output, photos, avatar, unheld, released] = ['output', 'photos', 'avatar', 'unheld', 'released'].map(fileKey) as [string, string, string, string, string];
      await store.characters.create(characterRecord(account.id, 'Holder', { avatar: { key: avatar, mimeType: 'image/png' } }));
      // Another account's job holds the output: a file found on disk has no account to narrow to.
      await store.jobs.create({ ...jobRecord(stranger.id), outputFiles: [{ name: 'image-1.png', key: output, mimeType: 'image/png', size: 1, createdMillis: 1, feedback: { like: null, feedback: null } }] });
      await store.jobs.create({ ...jobRecord(stranger.id, 'FACE_MODEL_TRAINING'), photos: { key: photos, mimeType: 'application/zip' } });
      await store.fileReleases.release([released], account.id, 65_000);

      const byJobs = await other.fileReleases.heldByJobs();
      expect(byJobs.has(output) && byJobs.has(photos)).toBe(true);
      const adopted = await other.fileReleases.adoptUnheld([output, avatar, unheld, released, unheld], 70_000);
      expect(adopted.sort()).toEqual([output, unheld].sort());
      expect(await store.fileReleases.adoptUnheld([unheld], 75_000)).toEqual([]);
      const swept = await sweep(store, 80_000);
      expect(swept.unheld).toContain(unheld);
      expect(swept.unheld).toContain(released);
      expect(swept.unheld).not.toContain(output);
      expect(swept.unheld).not.toContain(avatar);
    });

    it('let two sweepers run at once, each release taken by one of them', async () => {
      const [store, other] = [context.store(), context.other()];
      const { account } = await context.createAccount('sweepers');
      const keys = Array.from({ length: 40 }, (_, index) => fileKey(`swept-${index}`));
      await store.fileReleases.release(keys, account.id, 50_000);

      // Small batches, many transactions each, interleaved between the two pools.
      const sweeper = async (each: RepositoryStore) => {
        const removed: string[] = [];
        for (;;) {
          const { taken, unheld } = await each.transaction(({ fileReleases }) => fileReleases.takeUnheld(60_000, 3));
          removed.push(...unheld);
          if (taken < 3) return removed;
        }
      };
      const [mine, theirs] = await Promise.all([sweeper(store), sweeper(other)]);
      const ours = [...mine, ...theirs].filter((key) => keys.includes(key));
      expect(ours.sort()).toEqual([...keys].sort());
    });
  });
}
