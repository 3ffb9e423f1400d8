/**
 * Sharding against the fake, driven by the real discord.js Client: each guild's events reach only
 * the shard owning it, DMs only shard 0, identifies wait for their `max_concurrency` bucket, and
 * two clients with one token share the global REST limit, which the fake's counters show.
 */
import { once } from 'node:events';
import { Client, Events, type Interaction, type Message } from 'discord.js';
import { Routes } from 'discord-api-types/v10';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { guildIdForShard, shardOf, startFakeDiscord, type FakeDiscord } from '../fakes/discord/fake-discord.js';
import { loginClient } from './harness.js';
import { patient } from '../support/patience.js';

/** Every message and interaction a client saw, by content or command name. */
function recordEvents(client: Client): { messages: Message[]; interactions: Interaction[] } {
  const seen = { messages: [] as Message[], interactions: [] as Interaction[] };
  client.on(Events.MessageCreate, (message) => void seen.messages.push(message));
  client.on(Events.InteractionCreate, (interaction) => void seen.interactions.push(interaction));
  return seen;
}

const settle = (milliseconds: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, milliseconds));

/** Polls a condition on what the clients saw (client events do not wake the fake's `waitFor`). */
async function until(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + patient(timeoutMs);
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await settle(20);
  }
}

/** Identifies on a raw socket; resolves with the first answer: a dispatch or op 9 frame, or the close code. */
async function identifyRaw(fake: FakeDiscord, shard: unknown): Promise<{ op?: number; t?: string; d?: unknown; closeCode?: number; socket: WebSocket }> {
  const socket = new WebSocket(`${fake.gatewayUrl}?v=10&encoding=json`);
  await once(socket, 'message');
  socket.send(JSON.stringify({ op: 2, d: { token: fake.token, intents: 1, properties: {}, ...(shard === undefined ? {} : { shard }) } }));
  return new Promise((resolve) => {
    socket.once('message', (data) => resolve({ ...(JSON.parse(data.toString()) as { op: number; t?: string; d: unknown }), socket }));
    socket.once('close', (code) => resolve({ closeCode: code, socket }));
  });
}

describe('fake Discord sharding: two clients, one shard each', () => {
  let fake: FakeDiscord;
  let shardZero: Client;
  let shardOne: Client;
  let seenByZero: ReturnType<typeof recordEvents>;
  let seenByOne: ReturnType<typeof recordEvents>;
  let user: ReturnType<FakeDiscord['createUser']>;

  beforeAll(async () => {
    fake = await startFakeDiscord({
      guilds: [{ id: guildIdForShard(0, 2), name: 'zero' }, { id: guildIdForShard(1, 2), name: 'one' }],
      // Two identify buckets, so both shards may start at once.
      sharding: { recommendedShards: 2, maxConcurrency: 2 },
    });
    user = fake.createUser({ username: 'alice' });
    [shardZero, shardOne] = await Promise.all([
      loginClient(fake, { shards: [0], shardCount: 2 }),
      loginClient(fake, { shards: [1], shardCount: 2 }),
    ]);
    seenByZero = recordEvents(shardZero);
    seenByOne = recordEvents(shardOne);
  });
  afterAll(async () => {
    await Promise.all([shardZero.destroy(), shardOne.destroy()]);
    await fake.close();
  });

  it('picks guild ids per shard and lists each guild only in its shard READY', () => {
    const [zero, one] = fake.guilds;
    expect(shardOf(zero!.id, 2)).toBe(0);
    expect(shardOf(one!.id, 2)).toBe(1);
    expect([...shardZero.guilds.cache.keys()]).toEqual([zero!.id]);
    expect([...shardOne.guilds.cache.keys()]).toEqual([one!.id]);
    expect(shardZero.guilds.cache.get(zero!.id)?.shardId).toBe(0);
    expect(shardOne.guilds.cache.get(one!.id)?.shardId).toBe(1);
    expect(fake.shardingStats.identifiesByShard).toEqual({ 0: 1, 1: 1 });
    expect(fake.shardingStats.concurrencyRefusals).toBe(0);
  });

  it('sends a guild message and a slash command only to the owning shard', async () => {
    const [zero, one] = fake.guilds;
    fake.sendMessage({ channelId: zero!.textChannelId, author: user, content: 'for zero' });
    fake.sendMessage({ channelId: one!.textChannelId, author: user, content: 'for one' });
    fake.sendSlashCommand({ user, channelId: one!.textChannelId, name: 'ask', options: { question: 'hi' } });
    await until(() => seenByOne.interactions.length === 1 && seenByOne.messages.length === 1 && seenByZero.messages.length === 1);
    await settle(200);
    expect(seenByZero.messages.map((message) => message.content)).toEqual(['for zero']);
    expect(seenByOne.messages.map((message) => message.content)).toEqual(['for one']);
    expect(seenByZero.interactions).toHaveLength(0);
    expect(seenByOne.interactions[0]?.guildId).toBe(one!.id);
  });

  it('sends a DM and a DM slash command to shard 0 only', async () => {
    const dmId = fake.openDm(user);
    const before = { zero: seenByZero.messages.length, one: seenByOne.messages.length };
    fake.sendMessage({ channelId: dmId, author: user, content: 'private' });
    fake.sendSlashCommand({ user, channelId: dmId, name: 'ask', options: { question: 'dm' } });
    await until(() => seenByZero.messages.length === before.zero + 1 && seenByZero.interactions.length === 1);
    await settle(200);
    expect(seenByZero.messages.at(-1)?.content).toBe('private');
    expect(seenByZero.interactions[0]?.guildId).toBeNull();
    expect(seenByOne.messages).toHaveLength(before.one);
    expect(seenByOne.interactions).toHaveLength(1);
  });

  it('lets both shards resume their own sessions after the connections drop, and keeps routing by shard', async () => {
    const [zero, one] = fake.guilds;
    fake.dropGatewayConnections();
    await fake.waitFor((state) => state.gatewayStats.resumes === 2 && state.gatewayStats.openConnections === 2);
    const before = { zero: seenByZero.messages.length, one: seenByOne.messages.length };
    fake.sendMessage({ channelId: one!.textChannelId, author: user, content: 'after the drop' });
    fake.sendMessage({ channelId: zero!.textChannelId, author: user, content: 'zero after the drop' });
    await until(() => seenByOne.messages.length === before.one + 1 && seenByZero.messages.length === before.zero + 1);
    expect([seenByZero.messages.at(-1)?.content, seenByOne.messages.at(-1)?.content]).toEqual(['zero after the drop', 'after the drop']);
    expect(fake.shardingStats.identifiesByShard).toEqual({ 0: 1, 1: 1 });
  });

  it('reports the recommended shards and a session start limit spent by each identify', async () => {
    const answer = (await shardZero.rest.get(Routes.gatewayBot())) as { shards: number; session_start_limit: Record<string, number> };
    expect(answer.shards).toBe(2);
    expect(answer.session_start_limit).toMatchObject({ total: 1000, remaining: 998, max_concurrency: 2 });
    expect(answer.session_start_limit['reset_after']).toBeGreaterThan(0);
  });
});

describe("fake Discord sharding: shards 'auto'", () => {
  it('reads the recommended count and runs both shards in one client, each guild on its own', async () => {
    const fake = await startFakeDiscord({
      guilds: [{ id: guildIdForShard(0, 2) }, { id: guildIdForShard(1, 2) }],
      sharding: { recommendedShards: 2, maxConcurrency: 2 },
    });
    const user = fake.createUser({ username: 'bob' });
    const client = await loginClient(fake, { shards: 'auto' });
    try {
      const seen = recordEvents(client);
      expect(fake.shardingStats.identifiesByShard).toEqual({ 0: 1, 1: 1 });
      expect(client.guilds.cache.size).toBe(2);
      for (const guild of fake.guilds) fake.sendMessage({ channelId: guild.textChannelId, author: user, content: guild.id });
      await until(() => seen.messages.length >= 2);
      await settle(200);
      // Two sockets: the order between shards is not defined, so compare as a map.
      expect(new Map(seen.messages.map((message) => [message.content, message.guild?.shardId]))).toEqual(
        new Map([
          [fake.guilds[0]!.id, 0],
          [fake.guilds[1]!.id, 1],
        ]),
      );
      expect(seen.messages).toHaveLength(2);
    } finally {
      await client.destroy();
      await fake.close();
    }
  });
});

describe('fake Discord sharding: identify concurrency', () => {
  it('refuses a second identify in the same 5 s bucket; the client waits and starts that shard later', async () => {
    const fake = await startFakeDiscord({
      guilds: [{ id: guildIdForShard(0, 2) }, { id: guildIdForShard(1, 2) }],
      sharding: { recommendedShards: 2, maxConcurrency: 1 },
    });
    // Two clients (as two processes would be): each paces only its own identifies, so the fake refuses one.
    const clients = await Promise.all([loginClient(fake, { shards: [0], shardCount: 2 }), loginClient(fake, { shards: [1], shardCount: 2 })]);
    try {
      const { identifies, concurrencyRefusals } = fake.shardingStats;
      expect(identifies).toHaveLength(2);
      expect(concurrencyRefusals).toBeGreaterThanOrEqual(1);
      expect(identifies[1]!.at - identifies[0]!.at).toBeGreaterThanOrEqual(5000);
      expect(clients.map((client) => client.guilds.cache.size)).toEqual([1, 1]);
    } finally {
      await Promise.all(clients.map((client) => client.destroy()));
      await fake.close();
    }
  });
});

describe('fake Discord sharding: the global REST limit across clients', () => {
  /** 40 authenticated reads from each client at once, in a bucket roomy enough that only the global limit bites. */
  async function burst(options: { globalRequestsPerSecond?: number }): Promise<FakeDiscord> {
    const fake = await startFakeDiscord({
      guilds: [{ id: guildIdForShard(0, 2) }, { id: guildIdForShard(1, 2) }],
      sharding: { recommendedShards: 2, maxConcurrency: 2 },
      rateLimits: { buckets: { 'user-read': { limit: 1000, windowMs: 1000 } }, retryAfterHeader: 'fractional' },
    });
    const rest = options.globalRequestsPerSecond === undefined ? {} : { globalRequestsPerSecond: options.globalRequestsPerSecond };
    const clients = await Promise.all([
      loginClient(fake, { shards: [0], shardCount: 2, rest: { ...fake.restOptions, ...rest } }),
      loginClient(fake, { shards: [1], shardCount: 2, rest: { ...fake.restOptions, ...rest } }),
    ]);
    try {
      await Promise.all(clients.flatMap((client) => Array.from({ length: 40 }, () => client.rest.get(Routes.user('@me')))));
    } finally {
      await Promise.all(clients.map((client) => client.destroy()));
    }
    return fake;
  }

  it('answers two clients that each keep to 50/s with global 429s, counted per route', async () => {
    const fake = await burst({});
    try {
      const usage = fake.globalUsage;
      expect(usage.limit).toBe(50);
      expect(usage.peak).toBeGreaterThan(50);
      for (const window of usage.windows) expect(window.requests - window.refused).toBeLessThanOrEqual(50);
      expect(fake.rateLimitHits.global).toBeGreaterThan(0);
      expect(fake.rateLimitHits.byRoute['GET /users/@me']).toBe(fake.rateLimitHits.global);
    } finally {
      await fake.close();
    }
  });

  it('serves two clients that split the limit between them without a single 429', async () => {
    const fake = await burst({ globalRequestsPerSecond: 25 });
    try {
      expect(fake.rateLimitHits.total).toBe(0);
      expect(fake.globalUsage.windows.reduce((sum, window) => sum + window.requests, 0)).toBeGreaterThanOrEqual(80);
      expect(fake.globalUsage.peak).toBeLessThanOrEqual(50);
    } finally {
      await fake.close();
    }
  });
});

describe('fake Discord sharding: identify on the wire', () => {
  it('closes with 4010 on an invalid shard and 4011 when a session would hold too many guilds', async () => {
    const fake = await startFakeDiscord({
      guilds: [{ id: guildIdForShard(0, 2) }, { id: guildIdForShard(1, 2) }],
      sharding: { maxGuildsPerShard: 1, identifyBucketMs: 0 },
    });
    try {
      for (const shard of [[2, 2], [0, 0], [-1, 2], [0.5, 2], [0], 'zero']) {
        expect((await identifyRaw(fake, shard)).closeCode, JSON.stringify(shard)).toBe(4010);
      }
      expect((await identifyRaw(fake, undefined)).closeCode).toBe(4011);
      expect((await identifyRaw(fake, [0, 1])).closeCode).toBe(4011);
      const sharded = await identifyRaw(fake, [1, 2]);
      expect(sharded).toMatchObject({ t: 'READY', d: { shard: [1, 2], guilds: [{ id: fake.guilds[1]!.id, unavailable: true }] } });
      sharded.socket.close();
    } finally {
      await fake.close();
    }
  });

  it('answers op 9 to an identify in a busy bucket or past the session start limit, and spends one start per session', async () => {
    const fake = await startFakeDiscord({ sharding: { maxConcurrency: 2, identifyBucketMs: 300, sessionStartTotal: 3, sessionStartResetAfterMs: 60_000 } });
    const sockets: WebSocket[] = [];
    try {
      const first = await identifyRaw(fake, [0, 4]);
      const otherBucket = await identifyRaw(fake, [1, 4]);
      const sameBucket = await identifyRaw(fake, [2, 4]);
      sockets.push(first.socket, otherBucket.socket, sameBucket.socket);
      expect([first.t, otherBucket.t]).toEqual(['READY', 'READY']);
      expect(sameBucket).toMatchObject({ op: 9, d: false });
      await settle(300);
      const later = await identifyRaw(fake, [2, 4]);
      sockets.push(later.socket);
      expect(later.t).toBe('READY');
      const spent = await fetch(`${fake.apiBase}/v10/gateway/bot`, { headers: { authorization: `Bot ${fake.token}` } });
      expect(((await spent.json()) as { session_start_limit: unknown }).session_start_limit).toMatchObject({ total: 3, remaining: 0, max_concurrency: 2 });
      await settle(300);
      const overLimit = await identifyRaw(fake, [3, 4]);
      sockets.push(overLimit.socket);
      expect(overLimit).toMatchObject({ op: 9, d: false });
      expect(fake.shardingStats).toMatchObject({ concurrencyRefusals: 1, sessionLimitRefusals: 1, identifiesByShard: { 0: 1, 1: 1, 2: 1 } });
    } finally {
      for (const socket of sockets) socket.close();
      await fake.close();
    }
  });
});
