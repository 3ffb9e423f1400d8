/**
 * Discord's rate limits as the fake models them: per-channel and per-token buckets with the real
 * headers, the global limit, forced 429s that @discordjs/rest must wait out and retry, and counts
 * of every 429 for benchmarks.
 */
import { ChannelType, type TextChannel } from 'discord.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { FakeDiscord, StartFakeDiscordOptions } from '../fakes/discord/fake-discord.js';
import { bucketHash } from '../fakes/discord/rate-limiter.js';
import { startWithClient } from './harness.js';

type Setup = Awaited<ReturnType<typeof startWithClient>>;

/** A raw request as the bot, bypassing discord.js's own pacing so the fake's limits show. */
function raw(fake: FakeDiscord, method: string, path: string, body?: unknown, auth = true): Promise<Response> {
  return fetch(`${fake.apiBase}/v10${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(auth ? { authorization: `Bot ${fake.token}` } : {}) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

async function postMessage(fake: FakeDiscord, channelId: string, content: string): Promise<string> {
  const response = await raw(fake, 'POST', `/channels/${channelId}/messages`, { content });
  expect(response.status).toBe(200);
  return ((await response.json()) as { id: string }).id;
}

describe('fake Discord rate limits', () => {
  let setup: Setup;

  async function start(options: StartFakeDiscordOptions): Promise<Setup> {
    setup = await startWithClient(options);
    return setup;
  }
  const general = (): TextChannel => {
    const channel = setup.client.channels.cache.get(setup.fake.guild.textChannelId);
    if (channel?.type !== ChannelType.GuildText) throw new Error('general is missing');
    return channel;
  };

  afterEach(() => setup.stop());

  it('lets @discordjs/rest retry forced 429s until the message arrives, and counts them', async () => {
    const { fake } = await start({ rateLimits: { retryAfterHeader: 'fractional' } });
    fake.forceRateLimit({ method: 'POST', routeTemplate: '/channels/{channel.id}/messages', count: 2, retryAfterMs: 60 });
    const message = await general().send('persistent');
    expect(fake.message(message.id)?.content).toBe('persistent');
    const attempts = fake.requests.filter((request) => request.route === 'POST /channels/{channel.id}/messages');
    expect(attempts.map((request) => request.status)).toEqual([429, 429, 200]);
    expect(fake.rateLimitHits).toMatchObject({ total: 2, forced: 2, global: 0, byRoute: { 'POST /channels/{channel.id}/messages': 2 } });
  });

  it('sends Discord’s 429 body and headers, with Retry-After rounded up to whole seconds by default', async () => {
    const { fake } = await start({});
    fake.forceRateLimit({ routeTemplate: 'GET /users/@me', count: 1, retryAfterMs: 250 });
    const response = await raw(fake, 'GET', '/users/@me');
    expect(response.status).toBe(429);
    expect(await response.json()).toEqual({ message: 'You are being rate limited.', retry_after: 0.25, global: false });
    expect(response.headers.get('retry-after')).toBe('1');
    expect(response.headers.get('x-ratelimit-scope')).toBe('user');
    expect(response.headers.get('x-ratelimit-bucket')).toBe(bucketHash('user-read'));
    expect((await raw(fake, 'GET', '/users/@me')).status).toBe(200);
  });

  it('limits message edits to 5 per 5 s per channel, leaving other channels alone', async () => {
    const { fake } = await start({});
    const other = fake.createTextChannel(fake.guild.id, 'other');
    const busyMessage = await postMessage(fake, fake.guild.textChannelId, 'busy');
    const otherMessage = await postMessage(fake, other.id, 'calm');
    const path = `/channels/${fake.guild.textChannelId}/messages/${busyMessage}`;
    const remaining: Array<string | null> = [];
    for (let edit = 1; edit <= 5; edit += 1) {
      const response = await raw(fake, 'PATCH', path, { content: `edit ${edit}` });
      expect(response.status).toBe(200);
      remaining.push(response.headers.get('x-ratelimit-remaining'));
    }
    expect(remaining).toEqual(['4', '3', '2', '1', '0']);
    const refused = await raw(fake, 'PATCH', path, { content: 'edit 6' });
    expect(refused.status).toBe(429);
    const body = (await refused.json()) as { retry_after: number; global: boolean; message: string };
    expect(body.global).toBe(false);
    expect(body.retry_after).toBeGreaterThan(4);
    expect(body.retry_after).toBeLessThanOrEqual(5);
    expect(refused.headers.get('x-ratelimit-limit')).toBe('5');
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(Number(refused.headers.get('x-ratelimit-reset-after'))).toBeCloseTo(body.retry_after, 2);
    expect(Number(refused.headers.get('x-ratelimit-reset')) * 1000).toBeGreaterThan(Date.now());
    expect(refused.headers.get('x-ratelimit-bucket')).toBe(bucketHash('message-edit'));
    expect(refused.headers.get('x-ratelimit-scope')).toBe('user');
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(fake.message(busyMessage)?.content).toBe('edit 5');

    const calm = await raw(fake, 'PATCH', `/channels/${other.id}/messages/${otherMessage}`, { content: 'still fine' });
    expect(calm.status).toBe(200);
    expect(calm.headers.get('x-ratelimit-remaining')).toBe('4');
    expect(fake.rateLimitHits.byRoute).toEqual({ 'PATCH /channels/{channel.id}/messages/{message.id}': 1 });
  });

  it('gives headers discord.js paces itself by, so its edits never hit a 429', async () => {
    const { fake } = await start({ rateLimits: { buckets: { 'message-edit': { limit: 2, windowMs: 400 } } } });
    const message = await general().send('v0');
    const started = Date.now();
    for (let version = 1; version <= 5; version += 1) await message.edit(`v${version}`);
    expect(Date.now() - started).toBeGreaterThanOrEqual(700);
    expect(fake.rateLimitHits.total).toBe(0);
    expect(fake.messageHistory(message.id)).toHaveLength(6);
  });

  it('applies the global limit per token, but not to interaction callbacks', async () => {
    // A long window, so the callback below surely arrives while the token is globally limited.
    const { fake, client, user } = await start({ rateLimits: { global: { limit: 3, windowMs: 60_000 } } });
    // The client's own start-up requests may share this window; use up the rest.
    let refused: Response | undefined;
    for (let attempt = 0; attempt < 5 && refused === undefined; attempt += 1) {
      const response = await raw(fake, 'GET', '/users/@me');
      if (response.status === 429) refused = response;
    }
    expect(refused?.headers.get('x-ratelimit-global')).toBe('true');
    expect(refused?.headers.get('x-ratelimit-scope')).toBe('global');
    expect(((await refused?.json()) as { global: boolean }).global).toBe(true);

    client.once('interactionCreate', (interaction) => {
      if (interaction.isChatInputCommand()) void interaction.reply('exempt');
    });
    const sent = fake.sendSlashCommand({ user, channelId: fake.guild.textChannelId, name: 'ping' });
    expect((await sent.response)?.type).toBe(4);
    expect(fake.rateLimitHits.global).toBeGreaterThanOrEqual(1);
  });

  it('limits requests without a token per IP address, apart from the bot token, and never interaction callbacks', async () => {
    const { fake, client, user } = await start({ rateLimits: { global: { limit: 3, windowMs: 60_000 } } });
    // Three webhooks, so no webhook's own bucket (5 per 2 s) is what refuses.
    const hooks = [0, 1, 2].map((index) => fake.createUserWebhook(fake.guild.textChannelId, `hook ${index}`));
    const statuses: number[] = [];
    for (const hook of [...hooks, hooks[0]!]) {
      const response = await raw(fake, 'POST', `/webhooks/${hook.id}/${hook.token}?wait=true`, { content: 'hi' }, false);
      statuses.push(response.status);
      if (response.status === 429) {
        expect(response.headers.get('x-ratelimit-global')).toBe('true');
        expect(((await response.json()) as { global: boolean }).global).toBe(true);
      }
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect(fake.unauthenticatedGlobalUsage).toMatchObject({ limit: 3, peak: 4 });
    expect(fake.unauthenticatedGlobalUsage.windows.at(-1)).toMatchObject({ requests: 4, refused: 1 });

    // The address's limit is not the token's: the bot's own requests still go through…
    expect((await raw(fake, 'GET', '/users/@me')).status).not.toBe(429);
    // …and an interaction callback counts against neither.
    client.once('interactionCreate', (interaction) => {
      if (interaction.isChatInputCommand()) void interaction.reply('exempt');
    });
    const sent = fake.sendSlashCommand({ user, channelId: fake.guild.textChannelId, name: 'ping' });
    expect((await sent.response)?.type).toBe(4);
  });

  it('counts a webhook request that carries the bot token against the token, and refuses a wrong token', async () => {
    const { fake } = await start({ rateLimits: { global: { limit: 3, windowMs: 60_000 } } });
    const hooks = [0, 1, 2, 3].map((index) => fake.createUserWebhook(fake.guild.textChannelId, `hook ${index}`));
    const execute = (hook: (typeof hooks)[number], authorization?: string) =>
      fetch(`${fake.apiBase}/v10/webhooks/${hook.id}/${hook.token}?wait=true`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
        body: JSON.stringify({ content: 'hi' }),
      });
    const tokenBefore = fake.globalUsage.windows.at(-1)?.requests ?? 0;
    // The address's window takes three; with the token a fourth goes, counted on the token's.
    for (const hook of hooks.slice(0, 3)) expect((await execute(hook)).status).toBe(200);
    expect((await execute(hooks[3]!)).status).toBe(429);
    expect((await execute(hooks[3]!, `Bot ${fake.token}`)).status).toBe(200);
    expect(fake.unauthenticatedGlobalUsage.windows.at(-1)).toMatchObject({ requests: 4, refused: 1 });
    expect(fake.globalUsage.windows.at(-1)!.requests).toBe(tokenBefore + 1);
    const wrong = await execute(hooks[3]!, 'Bot not-the-token');
    expect(wrong.status).toBe(401);
    expect(fake.messages(fake.guild.textChannelId).filter((message) => message.content === 'hi')).toHaveLength(4);
  });

  it('limits interaction webhooks to 5 per 2 s per token', async () => {
    const { fake, client, user } = await start({});
    client.on('interactionCreate', (interaction) => {
      if (interaction.isChatInputCommand()) void interaction.deferReply();
    });
    const first = fake.sendSlashCommand({ user, channelId: fake.guild.textChannelId, name: 'one' });
    const second = fake.sendSlashCommand({ user, channelId: fake.guild.textChannelId, name: 'two' });
    await Promise.all([first.response, second.response]);
    const edit = (token: string, content: string): Promise<Response> =>
      raw(fake, 'PATCH', `/webhooks/${fake.applicationId}/${token}/messages/%40original`, { content }, false);
    const statuses: number[] = [];
    for (let attempt = 1; attempt <= 6; attempt += 1) statuses.push((await edit(first.token, `part ${attempt}`)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    expect((await edit(second.token, 'other token')).status).toBe(200);
    expect(fake.rateLimitHits.byRoute).toEqual({ 'PATCH /webhooks/{application.id}/{interaction.token}/messages/@original': 1 });
  });
});
