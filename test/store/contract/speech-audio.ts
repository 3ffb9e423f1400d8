import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ContractContext } from './contract-context.js';

const audio = (size: number) => ({ key: `${randomUUID().replaceAll('-', '')}${'0'.repeat(32)}.mp3`, mimeType: 'audio/mpeg', size });

/** Spoken audio kept to be reused: asked for again renews it; taken once by age, then by size, oldest first. */
export function speechAudioContract(context: ContractContext): void {
  describe('spoken audio', () => {
    it('answer the audio kept for a hash and renew it; let go of the stale, then the oldest past the bytes, each to one sweeper', async () => {
      const [store, other] = [context.store(), context.other()];
      const { account } = await context.createAccount('speaker');
      const [stale, old, newer, newest] = [audio(100), audio(300), audio(300), audio(300)];
      const hashes = Object.fromEntries(['stale', 'old', 'newer', 'newest'].map((name) => [name, randomUUID()])) as Record<'stale' | 'old' | 'newer' | 'newest', string>;
      await store.speechAudio.record(hashes.stale, { file: stale, accountId: account.id }, 1_000);
      await store.speechAudio.record(hashes.old, { file: old, accountId: account.id }, 5_000);
      await other.speechAudio.record(hashes.newer, { file: newer, accountId: account.id }, 3_000);
      await store.speechAudio.record(hashes.newest, { file: newest, accountId: account.id }, 7_000);
      expect(await store.speechAudio.use(randomUUID(), 8_000)).toBeUndefined();
      // Asked for again: the newer is now the newest.
      expect(await other.speechAudio.use(hashes.newer, 9_000)).toEqual(newer);

      const take = (each: typeof store, maxBytes: number) => each.transaction(({ speechAudio }) => speechAudio.takeExpired(2_000, maxBytes, 10));
      // The stale one by its age; then, of 900 bytes left over 700, the one asked for longest ago.
      const [mine, theirs] = await Promise.all([take(store, 700), take(other, 700)]);
      const taken = [...mine, ...theirs].map((row) => row.fileKey);
      expect(taken.sort()).toEqual([stale.key, old.key].sort());
      expect([...mine, ...theirs].every((row) => row.accountId === account.id)).toBe(true);
      expect(await store.speechAudio.use(hashes.old, 10_000)).toBeUndefined();
      expect(await take(store, 600)).toEqual([]);
      expect((await take(store, 300)).map((row) => row.fileKey)).toEqual([newest.key]);
      expect(await store.speechAudio.use(hashes.newer, 11_000)).toEqual(newer);
      expect((await take(store, 0)).map((row) => row.fileKey)).toEqual([newer.key]);
    });
  });
}
