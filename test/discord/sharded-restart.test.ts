/**
 * An /imagine asked of a sharded bot whose processes stop before the worker finishes: the
 * delivery stays stored with its guild, and when the shards come back the one that owns the
 * guild delivers it, once. And shards that die together come back one identify bucket apart.
 * Shards on PostgreSQL, the worker a process of its own.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployCommands } from '../../src/bot/deploy-commands.js';
import { type ServiceProcess, startServing, stopService, waitUntilReady } from '../e2e/service-processes.js';
import { type FakeDiscord, guildIdForShard, startFakeDiscord } from '../fakes/discord/fake-discord.js';
import { type FakeCog, startFakeCog } from '../fakes/images/fake-cog.js';
import { createTestDatabase } from '../store/postgres-database.js';

/** Until every shard of the service is ready (its /readyz answers 200). */
describe('a pending /imagine delivery across a restart of the shards', () => {
  let database: { url: string; drop(): Promise<void> };
  let discord: FakeDiscord;
  let cog: FakeCog;
  let worker: ServiceProcess;
  let shards: ServiceProcess | undefined;
  let dataDir: string | undefined;
  let environment: Record<string, string>;

  async function startShards(): Promise<ServiceProcess> {
    const service = await startServing('restarted-shards', environment);
    await waitUntilReady(service);
    return service;
  }

  beforeAll(async () => {
    database = await createTestDatabase();
    discord = await startFakeDiscord({
      guilds: [{ id: guildIdForShard(0, 2), name: 'zero' }, { id: guildIdForShard(1, 2), name: 'one' }],
      // One identify at a time, per Discord's 5 s: both shards share bucket 0.
      sharding: { recommendedShards: 2, maxConcurrency: 1, identifyBucketMs: 5_000 },
    });
    // Slow enough that the shards are down before the image is made.
    cog = await startFakeCog({ capacity: 1, steps: 10, stepMs: 500 });
    await deployCommands({ token: discord.token, apiBase: discord.apiBase });
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'likeness-sharded-restart-'));
    const shared = { DATA_DIR: dataDir, STORE_URL: database.url, LLM_BASE_URL: 'http://127.0.0.1:9/v1', LLM_MODEL: 'fake-model', IMAGE_ENGINE: 'cog', COG_BASE_URL: cog.url, LEARNING: 'off' };
    environment = { ...shared, ROLES: 'bot,api', DISCORD_SHARDS: '2', DISCORD_TOKEN: discord.token, DISCORD_API_BASE: discord.apiBase };
    worker = await startServing('restart-worker', { ...shared, ROLES: 'worker' });
    shards = await startShards();
  });

  afterAll(async () => {
    if (shards) await stopService(shards);
    if (worker) await stopService(worker);
    await cog?.close();
    await discord?.close();
    await database?.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('is delivered once, by the shard of its guild, when the shards are back', async () => {
    const guild = discord.guilds[1]!;
    const dana = discord.createUser({ username: 'dana' });
    const sent = discord.sendSlashCommand({ user: dana, channelId: guild.textChannelId, name: 'imagine', options: { prompt: 'a harbour at night', width: 64, height: 64 } });
    expect(await sent.response).not.toBeNull();
    await discord.waitFor(() => cog.predictions.length === 1 || undefined, 20_000);
    await stopService(shards!);
    shards = undefined;
    const uploads = () => discord.requests.filter((request) => request.path.startsWith('/webhooks/') && request.files.length > 0);
    expect(uploads()).toHaveLength(0);
    // The image is made while no shard is up.
    await expect.poll(() => cog.predictions[0]?.status, { timeout: 60_000, interval: 250 }).toBe('succeeded');
    shards = await startShards();
    const replyOf = () => {
      const messageId = discord.interactionResponses(sent.interactionId).find((record) => record.messageId)?.messageId;
      return messageId ? discord.message(messageId) : undefined;
    };
    await discord.waitFor(() => (replyOf()?.attachments.length ?? 0) === 1 || undefined, 30_000);
    // Time for the other shard to deliver it too, were it to think it its own.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(uploads()).toHaveLength(1);
    expect(replyOf()?.channel_id).toBe(guild.textChannelId);
  }, 150_000);

  it('starts shards that died together again, one identify bucket apart', async () => {
    const before = discord.shardingStats.identifies.length;
    const refusedBefore = discord.shardingStats.concurrencyRefusals;
    const children = execFileSync('pgrep', ['-P', String(shards!.child.pid), '-f', 'src/main.ts'], { encoding: 'utf8' }).trim().split('\n').map(Number);
    expect(children).toHaveLength(2);
    for (const pid of children) process.kill(pid, 'SIGKILL');
    await discord.waitFor((fake) => fake.shardingStats.identifies.length === before + 2 || undefined, 60_000);
    const [first, second] = discord.shardingStats.identifies.slice(before);
    expect(new Set([first!.shard[0], second!.shard[0]])).toEqual(new Set([0, 1]));
    // Discord takes one identify per bucket per 5 s (the fake allows 250 ms for discord.js's own wait).
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(4_750);
    // The manager starts them again through its identify buckets, so Discord refuses none.
    expect(discord.shardingStats.concurrencyRefusals).toBe(refusedBefore);
    await waitUntilReady(shards!);
  });
});
