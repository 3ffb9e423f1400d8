/**
 * DISCORD_SHARDS=2: the service process (ROLES=bot,api) becomes a shard manager forking one
 * process per shard, all on one PostgreSQL database, behind its one REST proxy. Against a fake
 * Discord that shards as Discord does (guild events only to the owning shard, DMs to shard 0,
 * one identify per 5 s bucket), each message is answered once, and nothing is refused.
 */
import type { APIChannel, APIUser } from 'discord-api-types/v10';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployCommands } from '../../src/bot/deploy-commands.js';
import { type ServiceProcess, startService, stopService, waitUntilServing } from '../e2e/service-processes.js';
import { type FakeDiscord, type FakeGuild, guildIdForShard, startFakeDiscord } from '../fakes/discord/fake-discord.js';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/fake-openai.js';
import { createTestDatabase } from '../store/postgres-database.js';

/** The fake engine echoes the newest user line. */
function echo(body: { messages?: Array<{ role: string; content: unknown }> }) {
  const last = body.messages?.at(-1)?.content;
  return { reply: `Echo: ${typeof last === 'string' ? last.split('\n').at(-1) : 'something'}`, tokensPerSecond: 200 };
}

describe('DISCORD_SHARDS: one process per shard under a manager', () => {
  let database: { url: string; drop(): Promise<void> };
  let discord: FakeDiscord;
  let llm: FakeOpenAI;
  let service: ServiceProcess;

  const botTexts = (channelId: string) =>
    discord.messages(channelId).filter((message) => message.author.id === discord.botUser.id && message.content !== '').map((message) => message.content);

  async function openThread(user: APIUser, guild: FakeGuild): Promise<APIChannel> {
    const choices = await discord.sendAutocomplete({ user, channelId: guild.textChannelId, name: 'chat', options: { character: '' }, focused: 'character' });
    const own = choices.find((choice) => choice.name.endsWith('(yours)'))!;
    const before = discord.threads.length;
    const sent = discord.sendSlashCommand({ user, channelId: guild.textChannelId, name: 'chat', options: { character: String(own.value) } });
    expect((await sent.response)?.type).toBe(5);
    const thread = await discord.waitFor((fake) => fake.threads.length > before && fake.threads.at(-1), 10_000);
    // The thread is the conversation's once the reply links to it.
    await discord.waitFor((fake) => fake.interactionResponses(sent.interactionId).some((record) => JSON.stringify(record.body ?? '').includes(`<#${thread.id}>`)), 10_000);
    return thread;
  }

  beforeAll(async () => {
    database = await createTestDatabase();
    discord = await startFakeDiscord({
      guilds: [{ id: guildIdForShard(0, 2), name: 'zero' }, { id: guildIdForShard(1, 2), name: 'one' }],
      // Discord's 5 s identify bucket, one identify at a time: the manager must space the shards.
      sharding: { recommendedShards: 2, maxConcurrency: 1, identifyBucketMs: 5_000 },
    });
    llm = await startFakeOpenAI({ script: echo });
    await deployCommands({ token: discord.token, apiBase: discord.apiBase });
    service = await startService('sharded', {
      ROLES: 'bot,api',
      DISCORD_SHARDS: 'auto',
      DISCORD_TOKEN: discord.token,
      DISCORD_API_BASE: discord.apiBase,
      STORE_URL: database.url,
      LLM_BASE_URL: llm.baseURL,
      LLM_MODEL: 'fake-model',
      DISCORD_EDIT_INTERVAL_MS: '200',
    });
    await waitUntilServing(service);
    const deadline = Date.now() + 60_000;
    while ((await fetch(`${service.url}/readyz`)).status !== 200) {
      if (Date.now() > deadline) throw new Error(`the shards did not become ready:\n${service.output()}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }, 90_000);

  afterAll(async () => {
    if (service) await stopService(service);
    await llm?.close();
    await discord?.close();
    await database?.drop();
  }, 60_000);

  it('reports every shard ready, each identified once, none refused', async () => {
    const health = (await (await fetch(`${service.url}/healthz`)).json()) as unknown;
    expect(health).toEqual({ status: 'ok', discord: 'ready', shards: { 0: 'ready', 1: 'ready' } });
    expect(discord.shardingStats.identifiesByShard).toEqual({ 0: 1, 1: 1 });
    expect(discord.shardingStats.concurrencyRefusals).toBe(0);
    expect(discord.shardingStats.sessionLimitRefusals).toBe(0);
  });

  it('answers a thread message in a guild of each shard, and a DM, once each', async () => {
    const alice = discord.createUser({ username: 'alice' });
    const threads = [];
    for (const guild of discord.guilds) threads.push(await openThread(alice, guild));
    const dm = discord.openDm(alice);
    const channels = [...threads.map((thread) => thread.id), dm];
    for (const channelId of channels) discord.sendMessage({ channelId, author: alice, content: `hello ${channelId}` });
    await discord.waitFor(() => channels.every((channelId) => botTexts(channelId).includes(`Echo: hello ${channelId}`)), 20_000);
    // Time for a second process to answer too, were it to hear the same message.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(channels.map(botTexts)).toEqual(channels.map((channelId) => [`Echo: hello ${channelId}`]));
    expect(discord.rateLimitHits.total).toBe(0);
    expect(discord.shardingStats.identifiesByShard).toEqual({ 0: 1, 1: 1 });
  }, 40_000);

  it('stops its shard processes with it on SIGTERM', async () => {
    await stopService(service);
    expect(service.child.exitCode).toBe(0);
    // The shards' sessions end with their processes.
    await discord.waitFor((fake) => fake.gatewayStats.openConnections === 0 || undefined, 10_000);
  }, 60_000);
});
