/**
 * discord.js's ShardingManager forks two shard processes (test/fakes/discord/shard-process.mjs)
 * against one fake: each guild's message is answered once, by the process owning its shard, and a
 * DM once, by shard 0. The fake sees both processes as one bot token.
 */
import { fileURLToPath } from 'node:url';
import { ShardingManager } from 'discord.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { guildIdForShard, startFakeDiscord, type FakeDiscord } from '../fakes/discord/fake-discord.js';

const shardScript = fileURLToPath(new URL('../fakes/discord/shard-process.mjs', import.meta.url));

describe('fake Discord with ShardingManager across processes', () => {
  let fake: FakeDiscord;
  let manager: ShardingManager;

  beforeAll(async () => {
    fake = await startFakeDiscord({
      guilds: [{ id: guildIdForShard(0, 2), name: 'zero' }, { id: guildIdForShard(1, 2), name: 'one' }],
      sharding: { recommendedShards: 2, maxConcurrency: 2 },
    });
    // totalShards is set, not 'auto': the manager's 'auto' asks discord.com itself, whatever the client's rest options.
    manager = new ShardingManager(shardScript, { totalShards: 2, token: fake.token, mode: 'process', respawn: false, shardArgs: [fake.apiBase, fake.cdnBase] });
    await manager.spawn({ delay: 0, timeout: 20_000 });
  });
  afterAll(async () => {
    for (const shard of manager.shards.values()) shard.kill();
    await fake.close();
  });

  it('starts one identified session per process, each holding its own guild', async () => {
    expect(fake.shardingStats.identifiesByShard).toEqual({ 0: 1, 1: 1 });
    const guildCounts = await manager.fetchClientValues('guilds.cache.size');
    expect(guildCounts).toEqual([1, 1]);
  });

  it('answers a message in each guild once, from the owning shard, and a DM once, from shard 0', async () => {
    const user = fake.createUser({ username: 'carol' });
    const dmId = fake.openDm(user);
    const channels = [fake.guilds[0]!.textChannelId, fake.guilds[1]!.textChannelId, dmId];
    for (const channelId of channels) fake.sendMessage({ channelId, author: user, content: `hello ${channelId}` });
    const botReplies = (channelId: string): string[] =>
      fake.messages(channelId).filter((message) => message.author.id === fake.botUser.id).map((message) => message.content);
    await fake.waitFor(() => channels.every((channelId) => botReplies(channelId).length >= 1), 10_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(channels.map(botReplies)).toEqual([
      [`shard 0 of 2 heard: hello ${channels[0]}`],
      [`shard 1 of 2 heard: hello ${channels[1]}`],
      [`shard 0 of 2 heard: hello ${channels[2]}`],
    ]);
    expect(fake.rateLimitHits.total).toBe(0);
  });
});
