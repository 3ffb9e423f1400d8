import path from 'node:path';
import { createRandomIds, createSystemClock } from '../src/core/clock.js';
import { Characters } from '../src/core/characters.js';
import { Conversations } from '../src/core/conversations.js';
import { createSharpImageCodec } from '../src/media/sharp-image-codec.js';
import { DiskFileStore } from '../src/store/file-store.js';
import { openStore } from '../src/store/create-keyv.js';
import { round } from './stats.js';

/** 4. Message appends per second on the default SQLite store (WAL), through the core. */
export async function benchmarkAppends(dataDir: string) {
  const store = await openStore(`sqlite://${path.join(dataDir, 'likeness.sqlite')}`);
  const clock = createSystemClock();
  const ids = createRandomIds();
  const conversations = new Conversations(store, new Characters(store, new DiskFileStore(path.join(dataDir, 'files')), clock, ids, createSharpImageCodec()), clock, ids);
  const message = (index: number) => ({
    content: `Message ${index}: a line of ordinary chat, about as long as people write.`,
    mimeType: 'text/plain',
    participantId: '00000000-0000-4000-8000-000000000001',
    participantType: 'account' as const,
    file: null,
  });
  try {
    // Many conversations at once, as a busy service sees them.
    const parallelConversations = 64;
    const perConversation = 300;
    let started = performance.now();
    await Promise.all(
      Array.from({ length: parallelConversations }, async (_, conversation) => {
        for (let index = 0; index < perConversation; index++) await conversations.appendMessage(`parallel-${conversation}`, message(index));
      }),
    );
    const parallelRate = (parallelConversations * perConversation) / ((performance.now() - started) / 1000);
    // One conversation, one message after another: the worst case for batching.
    const sequentialCount = 3000;
    started = performance.now();
    for (let index = 0; index < sequentialCount; index++) await conversations.appendMessage('sequential', message(index));
    const sequentialRate = sequentialCount / ((performance.now() - started) / 1000);
    const stored = (await conversations.bounds('sequential')).end;
    const result = {
      store: 'sqlite (WAL, synchronous=NORMAL)',
      parallelConversations,
      parallelMessagesPerSecond: round(parallelRate, 0),
      sequentialMessagesPerSecond: round(sequentialRate, 0),
      sequentialStored: stored,
      target: '>= 2000 messages/s',
    };
    console.error('appends', result);
    return result;
  } finally {
    await store.close();
  }
}
