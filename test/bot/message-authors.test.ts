import { describe, expect, it } from 'vitest';
import { forgetOldMessageAuthors, messageAuthorRetentionMs } from '../../src/bot/personas/message-authors.js';

/** Records by creation time, forgotten as the store forgets them: oldest first, a batch at a time. */
function records(createdMillis: number[]) {
  const kept = [...createdMillis].sort((a, b) => a - b);
  const calls: Array<{ before: number; limit: number }> = [];
  return {
    kept,
    calls,
    async forgetCharacterMessages(before: number, limit: number) {
      calls.push({ before, limit });
      const old = kept.filter((created) => created < before).slice(0, limit);
      kept.splice(0, old.length);
      return old.length;
    },
  };
}

describe('forgetting who wrote old bot messages', () => {
  it('forgets everything past the retention, batch after batch, and keeps the rest', async () => {
    const now = 1_000 * messageAuthorRetentionMs;
    const store = records([...Array.from({ length: 7 }, (_, index) => now - messageAuthorRetentionMs - 1 - index), now - 5, now]);
    expect(await forgetOldMessageAuthors(store, { now: () => now, batch: 3 })).toBe(7);
    expect(store.kept).toEqual([now - 5, now]);
    // Batches of 3 until one comes back short: 3, 3, 1.
    expect(store.calls).toEqual(Array(3).fill({ before: now - messageAuthorRetentionMs, limit: 3 }));
    expect(await forgetOldMessageAuthors(store, { now: () => now, batch: 3 })).toBe(0);
  });
});
