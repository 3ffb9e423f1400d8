/** The pieces of DISCORD_SHARDS that need no shard processes: who owns a guild, and the shared REST proxy. */
import { Client, REST, RESTEvents, Routes } from 'discord.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RestProxy, startRestProxy } from '../../src/bot/sharding/rest-proxy.js';
import { holdsShardOf, shardOf, shareOfShards } from '../../src/bot/sharding/shard-of.js';
import { type FakeDiscord, guildIdForShard, startFakeDiscord } from '../fakes/discord/fake-discord.js';
import { shardOf as fakeShardOf } from '../fakes/discord/sharding.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };

describe('the shard of a guild', () => {
  it('is Discord’s (guild id >> 22) % count, and 0 for DMs', () => {
    for (const count of [1, 2, 5]) {
      for (let shard = 0; shard < count; shard += 1) {
        const guildId = guildIdForShard(shard, count);
        expect(shardOf(guildId, count)).toBe(shard);
        expect(shardOf(guildId, count)).toBe(fakeShardOf(guildId, count));
      }
    }
    expect(shardOf(null, 4)).toBe(0);
  });

  it('is held by the client given that shard, and by any client holding every shard', () => {
    const second = new Client({ intents: [], shards: [1], shardCount: 2 });
    const whole = new Client({ intents: [] });
    expect(holdsShardOf(second, guildIdForShard(1, 2))).toBe(true);
    expect(holdsShardOf(second, guildIdForShard(0, 2))).toBe(false);
    expect(holdsShardOf(second, null)).toBe(false);
    expect(holdsShardOf(whole, guildIdForShard(1, 2))).toBe(true);
    expect(holdsShardOf(whole, null)).toBe(true);
  });

  it('gives each process its shards’ part of the token’s shared budgets', () => {
    expect(shareOfShards(new Client({ intents: [], shards: [1], shardCount: 2 }))).toBe(0.5);
    expect(shareOfShards(new Client({ intents: [], shards: [0, 2], shardCount: 4 }))).toBe(0.5);
    expect(shareOfShards(new Client({ intents: [] }))).toBe(1);
  });
});

describe('the shard manager’s REST proxy', () => {
  let discord: FakeDiscord;
  let proxy: RestProxy;

  beforeAll(async () => {
    discord = await startFakeDiscord({ rateLimits: { retryAfterHeader: 'fractional' } });
    proxy = await startRestProxy({ upstream: discord.apiBase, token: discord.token, logger: silent });
  });
  afterAll(async () => {
    await proxy.close();
    await discord.close();
  });

  it('forwards a shard’s requests, with its token, to Discord and back', async () => {
    const rest = new REST({ version: '10', api: proxy.url }).setToken(discord.token);
    const me = (await rest.get(Routes.user())) as { id: string };
    expect(me.id).toBe(discord.botUser.id);
    const channelId = discord.guild.textChannelId;
    await rest.post(Routes.channelMessages(channelId), { body: { content: 'through the proxy' } });
    expect(discord.messages(channelId).at(-1)?.content).toBe('through the proxy');
    expect(discord.requests.filter((request) => request.path === `/channels/${channelId}/messages`)).toHaveLength(1);
  });

  it('sends a request again with its body when Discord answered 429', async () => {
    // A final edit once went out empty on its second try, and Discord kept the text before it.
    const rest = new REST({ version: '10', api: proxy.url }).setToken(discord.token);
    const channelId = discord.guild.textChannelId;
    const { id } = (await rest.post(Routes.channelMessages(channelId), { body: { content: 'growing ▌' } })) as { id: string };
    discord.forceRateLimit({ method: 'PATCH', routeTemplate: '/channels/{channel.id}/messages/{message.id}', count: 1, retryAfterMs: 100 });
    await rest.patch(Routes.channelMessage(channelId, id), { body: { content: 'the final text' } });
    expect(discord.message(id)?.content).toBe('the final text');
  });

  it('answers with Discord’s rate-limit headers, which the shard’s pacer follows', async () => {
    const rest = new REST({ version: '10', api: proxy.url }).setToken(discord.token);
    const answers: Array<string | null> = [];
    rest.on(RESTEvents.Response, (_request, response) => answers.push(response.headers.get('x-ratelimit-remaining')));
    await rest.post(Routes.channelMessages(discord.guild.textChannelId), { body: { content: 'counted' } });
    expect(answers).toHaveLength(1);
    expect(answers[0]).toMatch(/^\d+$/);
  });

  it('passes Discord’s refusals through', async () => {
    const rest = new REST({ version: '10', api: proxy.url, retries: 0 }).setToken('not-the-token');
    await expect(rest.get(Routes.user())).rejects.toMatchObject({ status: 401 });
  });
});
