/**
 * DISCORD_SHARDS=2: the service process (ROLES=bot,api) becomes a shard manager forking one
 * process per shard, all on one PostgreSQL database, behind its one REST proxy. Against a fake
 * Discord that shards as Discord does (guild events only to the owning shard, DMs to shard 0,
 * one identify per 5 s bucket), each message is answered once, and nothing is refused.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { APIChannel, APIUser } from 'discord-api-types/v10';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployCommands } from '../../src/bot/deploy-commands.js';
import { type ServiceProcess, startServing, stopService, waitUntilReady } from '../e2e/service-processes.js';
import { type FakeDiscord, type FakeGuild, guildIdForShard, startFakeDiscord } from '../fakes/discord/fake-discord.js';
import { type FakeVoice, startFakeVoice } from '../fakes/discord-voice/fake-voice.js';
import { type FakeCog, startFakeCog } from '../fakes/images/fake-cog.js';
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
  let cog: FakeCog;
  let voice: FakeVoice;
  let service: ServiceProcess;
  let worker: ServiceProcess;
  let dataDir: string | undefined;

  // The bot's replies; without Manage Webhooks it also says once per channel how to enable personas.
  const botTexts = (channelId: string) =>
    discord
      .messages(channelId)
      .filter((message) => message.author.id === discord.botUser.id && message.content !== '' && !message.content.includes('Manage Webhooks'))
      .map((message) => message.content);

  async function openThread(user: APIUser, guild: FakeGuild, channelId = guild.textChannelId): Promise<APIChannel> {
    const choices = await discord.sendAutocomplete({ user, channelId, name: 'chat', options: { character: '' }, focused: 'character' });
    const own = choices.find((choice) => choice.name.endsWith('(yours)'))!;
    const before = discord.threads.length;
    const sent = discord.sendSlashCommand({ user, channelId, name: 'chat', options: { character: String(own.value) } });
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
    cog = await startFakeCog({ capacity: 2, steps: 2, stepMs: 50 });
    voice = await startFakeVoice(discord);
    await deployCommands({ token: discord.token, apiBase: discord.apiBase });
    // One files directory, as processes on shared storage have: the worker writes the images the shards upload.
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'likeness-sharded-'));
    const shared = { DATA_DIR: dataDir, STORE_URL: database.url, LLM_BASE_URL: llm.baseURL, LLM_MODEL: 'fake-model', IMAGE_ENGINE: 'cog', COG_BASE_URL: cog.url, LEARNING: 'off' };
    // Images are made by a worker process of their own; the shards only deliver them.
    const startingWorker = startServing('worker', { ...shared, ROLES: 'worker' });
    // The shard processes trust the fake voice server's certificate, as this process does.
    const voiceCertificate = path.join(dataDir, 'fake-voice-ca.pem');
    await writeFile(voiceCertificate, voice.certificatePem);
    const startingService = startServing('sharded', {
      ...shared,
      NODE_EXTRA_CA_CERTS: voiceCertificate,
      ROLES: 'bot,api',
      DISCORD_SHARDS: 'auto',
      DISCORD_TOKEN: discord.token,
      DISCORD_API_BASE: discord.apiBase,
      DISCORD_EDIT_INTERVAL_MS: '200',
    });
    [worker, service] = await Promise.all([startingWorker, startingService]);
    await waitUntilReady(service);
  });

  afterAll(async () => {
    if (service) await stopService(service);
    if (worker) await stopService(worker);
    await cog?.close();
    await voice?.close();
    await llm?.close();
    await discord?.close();
    await database?.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

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
  });

  it('delivers an /imagine made by the worker once, from the shard of the guild it was asked in', async () => {
    const bob = discord.createUser({ username: 'bob' });
    const asked = discord.guilds.map((guild) => discord.sendSlashCommand({ user: bob, channelId: guild.textChannelId, name: 'imagine', options: { prompt: `a lighthouse in ${guild.name}`, width: 64, height: 64 } }));
    for (const sent of asked) expect(await sent.response).not.toBeNull();
    const replyOf = (interactionId: string) => {
      const messageId = discord.interactionResponses(interactionId).find((record) => record.messageId)?.messageId;
      return messageId ? discord.message(messageId) : undefined;
    };
    await discord.waitFor(() => asked.every((sent) => (replyOf(sent.interactionId)?.attachments.length ?? 0) === 1), 20_000);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    // One upload per job: the edit of its reply; no second process posted it again.
    const uploads = discord.requests.filter((request) => request.path.startsWith('/webhooks/') && request.files.length > 0);
    expect(uploads).toHaveLength(2);
    discord.guilds.forEach((guild, index) => {
      const withImages = discord.messages(guild.textChannelId).filter((message) => message.author.id === discord.botUser.id && message.attachments.length > 0);
      expect(withImages.map((message) => message.id)).toEqual([replyOf(asked[index]!.interactionId)!.id]);
    });
    expect(cog.predictions).toHaveLength(2);
    expect(discord.rateLimitHits.total).toBe(0);
  });

  it('/speak plays in the guild of the second shard, from the shard that holds it', async () => {
    const guild = discord.guilds[1]!;
    const dana = discord.createUser({ username: 'dana' });
    const voiced = discord.sendSlashCommand({ user: dana, channelId: guild.textChannelId, name: 'character', subcommand: 'voice', options: { preset: 'en-us+f3' } });
    await voiced.response;
    await discord.waitFor(() => JSON.stringify(discord.interactionResponses(voiced.interactionId)).includes('now speaks'), 10_000);
    voice.joinVoice(dana, guild.voiceChannelId!);
    const since = performance.now();
    const spoken = discord.sendSlashCommand({ user: dana, channelId: guild.textChannelId, name: 'speak', options: { text: 'Hello from the second shard.' } });
    expect(await spoken.response).not.toBeNull();
    // Only shard 1 hears this guild's interaction and holds its gateway session, so the voice
    // connection (op 4, then the voice server) can only have come from there.
    const heard = await voice.waitForAudio(guild.id, (audio) => audio.durationMs > 500 && audio.silenceFrames >= 4, { since, timeoutMs: 30_000 });
    expect(heard.rms).toBeGreaterThan(0.02);
    const joins = voice.voiceStateRequests.filter((request) => request.channelId === guild.voiceChannelId);
    expect(new Set(joins.map((request) => request.gatewaySessionId)).size).toBe(1);
    expect(voice.voiceStateRequests.some((request) => request.guildId === discord.guilds[0]!.id)).toBe(false);
  });

  it('posts characters as themselves in each shard’s guild, through that channel’s webhook, once each', async () => {
    const erin = discord.createUser({ username: 'erin' });
    const channels = discord.guilds.map((guild) => discord.createTextChannel(guild.id, `personas-${guild.name}`));
    for (const channel of channels) discord.setManageWebhooks(channel.id, true);
    const threads: APIChannel[] = [];
    for (const [index, guild] of discord.guilds.entries()) threads.push(await openThread(erin, guild, channels[index]!.id));
    for (const thread of threads) discord.sendMessage({ channelId: thread.id, author: erin, content: `as yourself ${thread.id}` });
    const personaTexts = (channelId: string) => discord.messages(channelId).filter((message) => message.webhook_id !== undefined).map((message) => [message.author.username, message.content]);
    await discord.waitFor(() => threads.every((thread) => personaTexts(thread.id).length > 0 && personaTexts(thread.id)[0]![1] === `Echo: as yourself ${thread.id}`), 20_000);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    for (const thread of threads) {
      // The character's own name (erin's default character is named after her), once, and nothing from the bot itself.
      expect(personaTexts(thread.id)).toEqual([[expect.stringContaining('erin'), `Echo: as yourself ${thread.id}`]]);
      expect(botTexts(thread.id)).toEqual([]);
    }
    // Each channel's webhook was made by the shard holding its guild, and only once.
    for (const channel of channels) expect(discord.webhooks(channel.id).map((webhook) => webhook.applicationId !== null)).toEqual([true]);
    expect(discord.rateLimitHits.total).toBe(0);
  });

  it('starts a shard again when its process dies, and it answers again', async () => {
    // The manager's children running the service are its shard processes (tsx runs esbuild beside them).
    const shards = execFileSync('pgrep', ['-P', String(service.child.pid), '-f', 'src/main.ts'], { encoding: 'utf8' }).trim().split('\n').map(Number);
    expect(shards).toHaveLength(2);
    process.kill(shards[0]!, 'SIGKILL');
    await discord.waitFor((fake) => Object.values(fake.shardingStats.identifiesByShard).reduce((sum, count) => sum + count, 0) === 3, 30_000);
    await expect.poll(async () => (await fetch(`${service.url}/readyz`)).status, { timeout: 60_000, interval: 250 }).toBe(200);
    const carol = discord.createUser({ username: 'carol' });
    const dm = discord.openDm(carol);
    const threads = [];
    for (const guild of discord.guilds) threads.push(await openThread(carol, guild));
    const channels = [...threads.map((thread) => thread.id), dm];
    for (const channelId of channels) discord.sendMessage({ channelId, author: carol, content: `again ${channelId}` });
    await discord.waitFor(() => channels.every((channelId) => botTexts(channelId).includes(`Echo: again ${channelId}`)), 20_000);
    expect(discord.shardingStats.concurrencyRefusals).toBe(0);
  });

  it('stops its shard processes with it on SIGTERM', async () => {
    await stopService(service);
    expect(service.child.exitCode).toBe(0);
    // The shards' sessions end with their processes.
    await discord.waitFor((fake) => fake.gatewayStats.openConnections === 0 || undefined, 10_000);
  });
});
