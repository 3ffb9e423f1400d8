import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conversationPlace } from '../../../src/core/learning/places.js';
import type { RepositoryStore } from '../../../src/core/repositories.js';
import { openSqlStore } from '../../../src/store/sql/sql-store.js';
import { newAccountRecords, uniqueUsername } from '../../store/repository-fixtures.js';

describe('the place of a conversation, as memories see it', () => {
  let directory: string;
  let store: RepositoryStore & { close(): Promise<void> };
  let owner: ReturnType<typeof newAccountRecords>;
  const open = async () => {
    const id = crypto.randomUUID();
    await store.conversations.create({ id, accountId: owner.account.id, characterId: owner.character.id, createdMicros: 1, updatedMicros: 1, summary: null, summaryThroughPosition: null }, owner.account.id);
    return id;
  };

  beforeAll(async () => {
    directory = await mkdtemp(path.join(os.tmpdir(), 'likeness-places-'));
    store = await openSqlStore(`sqlite://${path.join(directory, 'store.sqlite')}`);
    owner = newAccountRecords(uniqueUsername('manager'));
    await store.accounts.create(owner);
  });
  afterAll(async () => {
    await store.close();
    await rm(directory, { recursive: true, force: true });
  });

  it("is a server's for a character channel, even while its manager is the only one talking there", async () => {
    const conversationId = await open();
    await store.discordChannels.addCharacter({ channelId: 'channel-1', guildId: 'guild-1', conversationId }, owner.character.id, 1);
    expect(await conversationPlace(store, conversationId, [owner.account.id])).toEqual({ kind: 'shared', origin: 'server:guild-1' });
  });

  it("is a server's for a thread, private for a DM, and private for an API conversation of one person", async () => {
    const thread = await open();
    await store.discordLinks.link({ conversationId: thread, channelId: 'thread-1', guildId: 'guild-2' });
    expect(await conversationPlace(store, thread, [owner.account.id])).toEqual({ kind: 'shared', origin: 'server:guild-2' });
    const dm = await open();
    await store.discordLinks.link({ conversationId: dm, channelId: 'dm-1', guildId: null });
    expect(await conversationPlace(store, dm, [owner.account.id])).toEqual({ kind: 'private' });
    expect(await conversationPlace(store, await open(), [owner.account.id])).toEqual({ kind: 'private' });
  });
});
