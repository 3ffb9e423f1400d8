import { mkdir } from 'node:fs/promises';
import { deployCommands } from '../src/bot/deploy-commands.js';
import { startFakeDiscord } from '../test/fakes/discord/fake-discord.js';
import { startProcess, startServiceProcess } from './processes.js';
import { megabytes, percentile, round } from './stats.js';

const imagines = Number(process.env.BENCH_IMAGINES ?? 100);

/**
 * Issue 5's Discord benchmark: `imagines` /imagine commands at once from as many users
 * through the real bot (the service as `npm start` runs it) against the fake Discord's rate
 * limits, with an instant fake Cog engine in its own process. Measures, per job, the delay
 * from the engine's answer to the reply edit that carries the images.
 */
export async function benchmarkDiscordImages(dataDir: string) {
  await mkdir(dataDir, { recursive: true });
  const discord = await startFakeDiscord({ recordRequests: false });
  const engine = await startProcess('image-engine-process.ts', {});
  await deployCommands({ token: discord.token, apiBase: discord.apiBase, guildId: discord.guild.id });
  const channels = Array.from({ length: 5 }, (_, index) => discord.createTextChannel(discord.guild.id, `studio-${index}`).id);
  const service = await startServiceProcess({
    PORT: '0',
    DATA_DIR: dataDir,
    LLM_BASE_URL: 'http://127.0.0.1:9/v1',
    DISCORD_TOKEN: discord.token,
    DISCORD_API_BASE: discord.apiBase,
    DISCORD_COMMANDS_PER_MINUTE: '1000',
    IMAGE_ENGINE: 'cog',
    COG_BASE_URL: engine.url,
    IMAGE_CONCURRENCY: '8',
    LOG_LEVEL: 'info',
  });
  try {
    const users = Array.from({ length: imagines }, (_, index) => discord.createUser({ username: `artist${index}` }));
    const hitsBefore = discord.rateLimitHits.total;
    const usageBefore = await service.usage();
    const harnessCpuBefore = process.cpuUsage();
    const started = Date.now();
    const interactions = users.map((user, index) =>
      discord.sendSlashCommand({ user, channelId: channels[index % channels.length]!, name: 'imagine', options: { prompt: `bench image ${index}`, width: 512, height: 512 } }),
    );
    const replyId = (index: number) => discord.interactionResponses(interactions[index]!.interactionId).find((record) => record.messageId)?.messageId;
    const imagesShownAt = (index: number): number | undefined => {
      const messageId = replyId(index);
      return messageId ? discord.messageHistory(messageId).find((version) => version.attachmentIds.length > 0)?.timestamp : undefined;
    };
    await discord.waitFor(() => users.every((_, index) => imagesShownAt(index) !== undefined), 180_000);
    const seconds = (Date.now() - started) / 1000;
    const usageAfter = await service.usage();
    const harnessCpu = process.cpuUsage(harnessCpuBefore);
    const { answeredAt } = await engine.ask<{ answeredAt: Array<[string, number]> }>('answered');
    const answered = new Map(answeredAt);
    const delays = users.map((_, index) => imagesShownAt(index)! - answered.get(`bench image ${index}`)!);
    const result = {
      imagines,
      size: '512x512',
      engine: 'fake Cog, instant, 8 slots; IMAGE_CONCURRENCY=8',
      wallSeconds: round(seconds, 2),
      delivered: delays.filter((delay) => Number.isFinite(delay)).length,
      rateLimit429s: discord.rateLimitHits.total - hitsBefore,
      engineAnswerToImagesPostedP50Ms: round(percentile(delays, 0.5), 0),
      engineAnswerToImagesPostedP99Ms: round(percentile(delays, 0.99), 0),
      engineAnswerToImagesPostedMaxMs: round(Math.max(...delays), 0),
      serviceCpuSeconds: round((usageAfter.cpuMicros - usageBefore.cpuMicros) / 1e6, 2),
      servicePeakRssMB: megabytes(usageAfter.maxRssBytes),
      /** The fake Discord and the load run in this process, sharing the machine's two cores. */
      fakeDiscordCpuSeconds: round((harnessCpu.user + harnessCpu.system) / 1e6, 2),
      target: 'p99 engine completion to images on Discord < 2 s',
    };
    console.error('discord images', result);
    return result;
  } finally {
    await service.stop();
    await engine.stop();
    await discord.close();
  }
}
