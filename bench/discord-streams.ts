import { mkdir } from 'node:fs/promises';
import { deployCommands } from '../src/bot/deploy-commands.js';
import { guildIdForShard, startFakeDiscord } from '../test/fakes/discord/fake-discord.js';
import type { GlobalUsage } from '../test/fakes/discord/rate-limiter.js';
import { startProcess, startServiceProcess } from './processes.js';
import { megabytes, percentile, round } from './stats.js';

const threads = Number(process.env.BENCH_THREADS ?? 100);
const tokensPerReply = 80;
const tokensPerSecond = 40;

export interface DiscordStreamsOptions {
  /** Shard processes (`DISCORD_SHARDS`) when more than 1 (default 1). */
  shards?: number;
  /** Parent channels the threads are spread over (default 10). */
  channels?: number;
  /** The bot has Manage Webhooks in every channel, so characters answer through webhooks (issue 13). */
  personas?: boolean;
}

/**
 * Issue 3's benchmark: 100 conversation threads at once through the real bot (the service
 * as `npm start` runs it, with DISCORD_TOKEN) against the fake Discord's rate limits, the
 * fake engine streaming 40 tokens/s per reply. With `shards` > 1 (issue 12) the bot runs as
 * that many shard processes (`DISCORD_SHARDS`), the threads spread over one guild per shard;
 * the service's CPU and memory are then the manager's alone and left out. With `personas`
 * (issue 13) the replies are persona messages, one webhook per parent channel.
 */
export async function benchmarkDiscordStreams(dataDir: string, options: DiscordStreamsOptions = {}) {
  const { shards = 1, channels: channelCount = 10, personas = false } = options;
  await mkdir(dataDir, { recursive: true });
  const discord = await startFakeDiscord({
    // Recorded to count each round's requests by route (the bench process's memory, not the service's).
    recordRequests: true,
    ...(shards > 1
      ? { sharding: { recommendedShards: shards }, guilds: Array.from({ length: shards }, (_, shard) => ({ id: guildIdForShard(shard, shards), name: `shard-${shard}` })) }
      : {}),
  });
  const engine = await startProcess('engine-process.ts', { BENCH_SCRIPT: `stream:${tokensPerReply}:${tokensPerSecond}`, BENCH_RECORD: '1' });
  for (const guild of discord.guilds) await deployCommands({ token: discord.token, apiBase: discord.apiBase, guildId: guild.id });
  // Discord lets a channel take 10 new threads per 10 s, so the threads are spread over 10 channels (and the guilds).
  const channels = Array.from({ length: channelCount }, (_, index) => discord.createTextChannel(discord.guilds[index % discord.guilds.length]!.id, `lobby-${index}`).id);
  if (personas) for (const channelId of channels) discord.setManageWebhooks(channelId, true);
  const service = await startServiceProcess({
    PORT: '0',
    DATA_DIR: dataDir,
    LLM_BASE_URL: engine.url,
    LLM_MODEL: 'fake-model',
    DISCORD_TOKEN: discord.token,
    DISCORD_API_BASE: discord.apiBase,
    DISCORD_MESSAGES_PER_MINUTE: '1000',
    DISCORD_COMMANDS_PER_MINUTE: '1000',
    LOG_LEVEL: 'info',
    // A public name, so persona messages carry their avatar URL as in production.
    ...(personas ? { PUBLIC_BASE_URL: 'https://likeness.example' } : {}),
    ...(shards > 1 ? { DISCORD_SHARDS: String(shards) } : {}),
  });
  try {
    // Each shard logs that it is ready; wait for all of them, identified one bucket after another.
    if (shards > 1) await discord.waitFor(() => Object.keys(discord.shardingStats.identifiesByShard).length === shards, 60_000);
    await new Promise((resolve) => setTimeout(resolve, shards > 1 ? 2_000 : 0));
    const users = Array.from({ length: threads }, (_, index) => discord.createUser({ username: `bench${index}` }));
    const threadIds: string[] = [];
    await Promise.all(
      users.map(async (user, index) => {
        const channelId = channels[index % channels.length]!;
        discord.sendSlashCommand({ user, channelId, name: 'chat', options: { character: user.username } });
        const thread = await discord.waitFor((fake) => fake.threads.find((candidate) => candidate.name === `${user.username} · ${user.username}`), 60_000);
        threadIds[index] = thread.id;
      }),
    );
    // Let thread-creation traffic settle so it does not count against the streams.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    // The bot's own message, or with personas a webhook's (its author is the webhook).
    const isReply = (message: { author: { id: string }; webhook_id?: string }) => (personas ? message.webhook_id !== undefined : message.author.id === discord.botUser.id);
    const expected = (index: number) => Array.from({ length: tokensPerReply }, (_, token) => `stream-${index}:${token}`).join(' ');

    /** Every user writes at the same moment; measured until every final text is shown. */
    const measureRound = async () => {
      const earlier = new Set(threadIds.flatMap((threadId) => discord.messages(threadId).map((message) => message.id)));
      const finalMessage = (index: number) => discord.messages(threadIds[index]!).find((message) => !earlier.has(message.id) && isReply(message) && message.content === expected(index));
      const hitsBefore = discord.rateLimitHits;
      const requestsBefore = discord.requests.length;
      const usageBefore = await service.usage();
      const started = Date.now();
      users.forEach((user, index) => discord.sendMessage({ channelId: threadIds[index]!, author: user, content: `stream ${index}` }));
      await discord.waitFor(() => users.every((_, index) => finalMessage(index)), 120_000).catch((error: unknown) => {
        // Which replies never got their final text, and how each of their messages read over time.
        for (const [index, threadId] of threadIds.entries()) {
          if (finalMessage(index)) continue;
          const messages = discord.messages(threadId).filter((message) => !earlier.has(message.id) && isReply(message));
          const versions = messages.map((message) => discord.messageHistory(message.id).map((version) => ({ afterMs: version.timestamp - started, ending: version.content.slice(-30) })));
          console.error('no final text', { thread: index, versions });
        }
        throw error;
      });
      const seconds = (Date.now() - started) / 1000;
      const requestsByRoute: Record<string, number> = {};
      for (const { route, path } of discord.requests.slice(requestsBefore)) requestsByRoute[route ?? path] = (requestsByRoute[route ?? path] ?? 0) + 1;
      // How full each of the fake's global windows (1 s from its first request) was during the round.
      const windowsOf = (usage: GlobalUsage) => usage.windows.filter((window) => window.startedAt >= started).map((window) => window.requests);
      const usageAfter = await service.usage();
      const { writtenAt } = await engine.ask<{ writtenAt: Array<[string, number]> }>('written');
      const lastTokenAt = new Map(writtenAt.filter(([token, at]) => at >= started && token.endsWith(`:${tokensPerReply - 1} `)).map(([token, at]) => [token.split(':')[0], at]));
      const delays: number[] = [];
      const editRates: number[] = [];
      users.forEach((_, index) => {
        const history = discord.messageHistory(finalMessage(index)!.id);
        const finalAt = history.at(-1)!.timestamp;
        delays.push(finalAt - lastTokenAt.get(`stream-${index}`)!);
        const span = (finalAt - history[0]!.timestamp) / 1000;
        editRates.push((history.length - 1) / Math.max(span, 0.001));
      });
      // Each reply's 🔄 button comes last; the next round starts after it, as a person would.
      await discord.waitFor(() => users.every((_, index) => (finalMessage(index)!.components?.length ?? 0) > 0), 30_000);
      return {
        ...(personas ? { webhooks: channels.reduce((sum, channelId) => sum + discord.webhooks(channelId).filter((webhook) => !webhook.deleted).length, 0) } : {}),
        wallSeconds: round(seconds, 2),
        finalTextCorrect: users.filter((_, index) => finalMessage(index)).length,
        rateLimit429s: discord.rateLimitHits.total - hitsBefore.total,
        rateLimit429sGlobal: discord.rateLimitHits.global - hitsBefore.global,
        rateLimit429sByRoute: Object.fromEntries(
          Object.entries(discord.rateLimitHits.byRoute)
            .map(([route, count]) => [route, count - (hitsBefore.byRoute[route] ?? 0)] as const)
            .filter(([, count]) => count > 0),
        ),
        requestsByRoute,
        globalWindowRequests: { token: windowsOf(discord.globalUsage), ip: windowsOf(discord.unauthenticatedGlobalUsage) },
        editsPerMessagePerSecondMean: round(editRates.reduce((sum, rate) => sum + rate, 0) / editRates.length, 2),
        editsPerMessagePerSecondMax: round(Math.max(...editRates), 2),
        lastTokenToFinalEditP50Ms: round(percentile(delays, 0.5), 0),
        lastTokenToFinalEditP99Ms: round(percentile(delays, 0.99), 0),
        serviceCpuSeconds: shards > 1 ? null : round((usageAfter.cpuMicros - usageBefore.cpuMicros) / 1e6, 2),
        servicePeakRssMB: shards > 1 ? null : megabytes(usageAfter.maxRssBytes),
      };
    };
    // Personas: the first round makes the channels' webhooks as the replies overlap (cold, once
    // per channel ever); the second finds them, as every later reply does (warm).
    const measured = personas ? { cold: await measureRound(), warm: await measureRound() } : await measureRound();
    const result = {
      shards,
      threads,
      channels: channelCount,
      ...(personas ? { personas: true } : {}),
      tokensPerReply,
      tokensPerSecond,
      ...measured,
      target: '0 429s, p99 last token to final edit < 2 s',
    };
    console.error(personas ? 'discord personas' : 'discord streams', result);
    return result;
  } finally {
    await service.stop();
    await engine.stop();
    await discord.close();
  }
}
