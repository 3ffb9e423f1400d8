/**
 * Two shard processes stream replies at once through the manager's REST proxy (DISCORD_SHARDS=2,
 * real discord.js in each). Discord counts 50 requests a second per bot token, whichever process
 * sends them: the fake sees no more, refuses nothing, and sees ordinary edits (the ones still
 * showing the cursor) within the one budget the shards share, which leaves the rest for final
 * edits. A shard that kept the whole budget to itself fails the last check.
 */
import type { APIUser } from 'discord-api-types/v10';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ordinaryEditShare } from '../../src/bot/pacing/channel-pacer.js';
import { proxyRequestsPerSecond } from '../../src/bot/sharding/rest-proxy.js';
import { deployCommands } from '../../src/bot/deploy-commands.js';
import { type ServiceProcess, startServing, stopService } from '../e2e/service-processes.js';
import { type FakeDiscord, guildIdForShard, startFakeDiscord } from '../fakes/discord/fake-discord.js';
import type { RecordedRequest } from '../fakes/discord/http-server.js';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/fake-openai.js';

const threadsPerShard = 8;
const tokensPerReply = 200;
/** Each reply streams for 10 s, and each thread would take 5 edits a second (DISCORD_EDIT_INTERVAL_MS): 80 a second wanted in all. */
const tokensPerSecond = 20;

/**
 * Requests a second over the 8 s after the first second of `requests`: away from the edges,
 * where paced requests reach Discord a little apart or together (loopback, two busy cores).
 */
function steadyRate(requests: RecordedRequest[]): number {
  const from = requests[0]!.timestamp + 1000;
  return requests.filter((request) => request.timestamp >= from && request.timestamp < from + 8000).length / 8;
}

const isOrdinaryEdit = (request: RecordedRequest) =>
  request.method === 'PATCH' && request.route?.endsWith('/messages/{message.id}') === true && String((request.body as { content?: unknown } | null)?.content ?? '').endsWith('▌');

describe('two shards streaming at once', () => {
  let discord: FakeDiscord;
  let llm: FakeOpenAI;
  let service: ServiceProcess;

  beforeAll(async () => {
    discord = await startFakeDiscord({
      guilds: [{ id: guildIdForShard(0, 2), name: 'zero' }, { id: guildIdForShard(1, 2), name: 'one' }],
      sharding: { recommendedShards: 2, maxConcurrency: 2 },
      // A channel takes 10 edits a second here, so the shared budget, not each channel's bucket, is what binds.
      rateLimits: { buckets: { 'message-edit': { limit: 50, windowMs: 5000 } }, retryAfterHeader: 'fractional' },
    });
    llm = await startFakeOpenAI({
      script: (body: { messages?: Array<{ content: unknown }> }) => {
        const name = String(body.messages?.at(-1)?.content ?? '').split('\n').at(-1)!;
        return { tokens: Array.from({ length: tokensPerReply }, (_, token) => `${name}:${token} `), tokensPerSecond };
      },
    });
    for (const guild of discord.guilds) await deployCommands({ token: discord.token, apiBase: discord.apiBase, guildId: guild.id });
    service = await startServing('paced-shards', {
      ROLES: 'bot',
      DISCORD_SHARDS: '2',
      DISCORD_TOKEN: discord.token,
      DISCORD_API_BASE: discord.apiBase,
      DISCORD_EDIT_INTERVAL_MS: '200',
      DISCORD_MESSAGES_PER_MINUTE: '1000',
      DISCORD_COMMANDS_PER_MINUTE: '1000',
      LLM_BASE_URL: llm.baseURL,
      LLM_MODEL: 'fake-model',
      LEARNING: 'off',
    });
    await discord.waitFor(() => Object.keys(discord.shardingStats.identifiesByShard).length === 2, 60_000);
  });

  afterAll(async () => {
    if (service) await stopService(service);
    await llm?.close();
    await discord?.close();
  });

  it('stays within the global limit, provokes no 429, and keeps ordinary edits within one shared budget', async () => {
    const users: APIUser[] = [];
    const threadIds: string[] = [];
    await Promise.all(
      Array.from({ length: threadsPerShard * 2 }, async (_, index) => {
        const user = discord.createUser({ username: `streamer${index}` });
        users[index] = user;
        const guild = discord.guilds[index % 2]!;
        discord.sendSlashCommand({ user, channelId: guild.textChannelId, name: 'chat', options: { character: user.username } });
        const thread = await discord.waitFor((fake) => fake.threads.find((candidate) => candidate.name === `${user.username} · ${user.username}`), 30_000);
        threadIds[index] = thread.id;
      }),
    );
    // Thread creation is not what is measured.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const from = discord.requests.length;
    const hitsBefore = discord.rateLimitHits.total;
    users.forEach((user, index) => discord.sendMessage({ channelId: threadIds[index]!, author: user, content: `s${index}` }));
    const expected = (index: number) => Array.from({ length: tokensPerReply }, (_, token) => `s${index}:${token}`).join(' ');
    await discord.waitFor(
      () => threadIds.every((threadId, index) => discord.messages(threadId).some((message) => message.author.id === discord.botUser.id && message.content === expected(index))),
      60_000,
    );
    const streamed = discord.requests.slice(from);
    const ordinary = streamed.filter(isOrdinaryEdit);
    const usage = discord.globalUsage.windows.filter((window) => window.startedAt + 1000 > streamed[0]!.timestamp);
    expect(discord.rateLimitHits.total - hitsBefore).toBe(0);
    // Discord's global limit, counted as the fake counts it: fixed windows of 1 s per bot token.
    expect(Math.max(...usage.map((window) => window.requests))).toBeLessThanOrEqual(50);
    // Both shards edited, and together within the one budget: 80 % of what the proxy passes,
    // 36 a second. Shards keeping a budget each fill all the proxy passes with ordinary edits
    // instead: 45 a window of 1.05 s (REST's offset), 42.9 a second. Over 8 s the edges move
    // the figure by a quarter at most.
    expect(new Set(ordinary.map((request) => threadIds.indexOf(request.path.split('/')[2]!) % 2))).toEqual(new Set([0, 1]));
    expect(steadyRate(ordinary)).toBeLessThanOrEqual(ordinaryEditShare * proxyRequestsPerSecond + 1);
  });
});
