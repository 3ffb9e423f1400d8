import path from 'node:path';
import { adminActor } from '../src/core/actor.js';
import { createRandomIds, createSystemClock } from '../src/core/clock.js';
import { Accounts } from '../src/core/accounts.js';
import { Characters } from '../src/core/characters.js';
import { Conversations } from '../src/core/conversations.js';
import { Ledger } from '../src/core/ledger.js';
import { createSharpImageCodec } from '../src/media/sharp-image-codec.js';
import { DiskFileStore } from '../src/store/file-store.js';
import { openSqlStore } from '../src/store/sql/sql-store.js';
import { round } from './stats.js';

/** 4. Message appends per second on a SQL store (SQLite by default), through the core. */
export async function benchmarkAppends(dataDir: string, storeUrl = `sqlite://${path.join(dataDir, 'likeness.sqlite')}`) {
  const store = await openSqlStore(storeUrl);
  const clock = createSystemClock();
  const ids = createRandomIds();
  const characters = new Characters(store, new DiskFileStore(path.join(dataDir, 'files')), clock, ids, createSharpImageCodec());
  const conversations = new Conversations(store, characters, clock, ids);
  const accounts = new Accounts(store, clock, ids, characters, new Ledger(store, clock, ids), { startingBalance: 0, adminApiKey: undefined });
  const { account } = await accounts.create(adminActor, { username: `bench-${Date.now()}` });
  const open = async () => (await conversations.create(adminActor, account.id, account.characterId)).id;
  const message = (index: number) => ({
    content: `Message ${index}: a line of ordinary chat, about as long as people write.`,
    mimeType: 'text/plain',
    participantId: account.id,
    participantType: 'account' as const,
    file: null,
  });
  try {
    // Many conversations at once, as a busy service sees them.
    const parallelConversations = 64;
    const perConversation = 300;
    let started = performance.now();
    const parallel = await Promise.all(Array.from({ length: parallelConversations }, open));
    started = performance.now();
    await Promise.all(
      parallel.map(async (conversationId) => {
        for (let index = 0; index < perConversation; index++) await conversations.appendMessage(conversationId, message(index));
      }),
    );
    const parallelRate = (parallelConversations * perConversation) / ((performance.now() - started) / 1000);
    // One conversation, one message after another: the worst case for batching.
    const sequentialCount = 3000;
    const sequential = await open();
    started = performance.now();
    for (let index = 0; index < sequentialCount; index++) await conversations.appendMessage(sequential, message(index));
    const sequentialRate = sequentialCount / ((performance.now() - started) / 1000);
    const stored = (await store.conversations.countMessages(sequential));
    const result = {
      store: store.dialect,
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
