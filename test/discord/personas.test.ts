import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { APIChannel, APIUser } from 'discord-api-types/v10';
import { defaultAvatarPng } from '../../src/core/default-avatar.js';
import type { FakeMessage } from '../fakes/discord/driver.js';
import { type BotHarness, echo, startBotHarness } from './harness.js';

/** Where the service says it is reachable; a public name, so personas carry their picture. */
const publicBaseUrl = 'https://likeness.example';

const againButton = (message: FakeMessage): string | undefined => JSON.stringify(message.components ?? []).match(/chat:again:[0-9a-f-]+:[0-9a-f-]+/)?.[0];

describe('Characters as themselves: persona replies through channel webhooks', () => {
  let bot: BotHarness;
  let alice: APIUser;
  let characterId: string;

  /** Opens a /chat thread with alice's own character in `channelId`. */
  async function openThread(channelId: string, first?: string): Promise<APIChannel> {
    const { discord } = bot;
    const choices = await discord.sendAutocomplete({ user: alice, channelId, name: 'chat', options: { character: '' }, focused: 'character' });
    const own = choices.find((choice) => choice.name.endsWith('(yours)'))!;
    characterId = String(own.value);
    const before = discord.threads.length;
    const sent = discord.sendSlashCommand({ user: alice, channelId, name: 'chat', options: { character: characterId, ...(first ? { message: first } : {}) } });
    await sent.response;
    const thread = await discord.waitFor((fake) => fake.threads.length > before && fake.threads.at(-1));
    await discord.waitFor((fake) => fake.interactionResponses(sent.interactionId).some((record) => JSON.stringify(record.body ?? '').includes(`<#${thread.id}>`)));
    return thread;
  }

  /** Messages in a channel written by a webhook, oldest first. */
  const personaMessages = (channelId: string): FakeMessage[] => bot.discord.messages(channelId).filter((message) => message.webhook_id);
  const personaTexts = (channelId: string): string[] => personaMessages(channelId).map((message) => message.content);
  const executes = () => bot.discord.requests.filter((request) => request.route === 'POST /webhooks/{webhook.id}/{webhook.token}');

  beforeAll(async () => {
    // alice writes more than the default 20 messages a minute here.
    bot = await startBotHarness({ script: echo('Echo:'), environment: { PUBLIC_BASE_URL: publicBaseUrl, DISCORD_MESSAGES_PER_MINUTE: '100' } });
    alice = bot.discord.createUser({ username: 'alice' });
    bot.discord.setManageWebhooks(bot.discord.guild.textChannelId, true);
  });
  beforeEach(() => bot.llm.setScript(echo('Echo:')));
  afterAll(async () => {
    await bot.close();
  });

  it('streams a reply in a /chat thread by editing a webhook message with the character’s name and picture', async () => {
    const thread = await openThread(bot.discord.guild.textChannelId);
    const words = Array.from({ length: 40 }, (_, index) => `word${index}`);
    bot.llm.setScript({ tokens: words.map((word) => `${word} `), tokensPerSecond: 40 });
    bot.discord.sendMessage({ channelId: thread.id, author: alice, content: 'Tell me forty words' });
    const final = words.join(' ');
    await bot.discord.waitFor(() => personaTexts(thread.id).includes(final), 10_000);
    const reply = personaMessages(thread.id).find((message) => message.content === final)!;
    expect(reply.author.username).toBe('alice');
    expect(reply.author.bot).toBe(true);
    const versions = bot.discord.messageHistory(reply.id).map((version) => version.content);
    expect(versions.length).toBeGreaterThan(2);
    expect(versions.slice(0, -1).every((version) => version.endsWith('▌'))).toBe(true);
    // Posted through the parent channel's one webhook, into the thread.
    expect(bot.discord.webhooks(bot.discord.guild.textChannelId).filter((webhook) => webhook.applicationId !== null)).toHaveLength(1);
    const edits = bot.discord.requests.filter((request) => request.route === 'PATCH /webhooks/{webhook.id}/{webhook.token}/messages/{message.id}' && request.path.includes(reply.id));
    expect(edits.length).toBeGreaterThan(1);
    expect(edits.every((request) => request.query.get('thread_id') === thread.id)).toBe(true);
    const execute = executes().findLast((request) => request.query.get('thread_id') === thread.id)!;
    const avatarUrl = (execute.body as { avatar_url: string }).avatar_url;
    expect(avatarUrl).toMatch(new RegExp(`^${publicBaseUrl}/avatars/${characterId}/[A-Za-z0-9_-]{43}\\.png$`));
    expect(avatarUrl).not.toContain('expires');
    // The bot wrote nothing of the reply as itself.
    expect(bot.botTexts(thread.id).some((text) => text.includes('word1'))).toBe(false);
  });

  it('continues a reply past 2,000 characters in a new persona message', async () => {
    const thread = await openThread(bot.discord.guild.textChannelId);
    const sentence = 'The lighthouse keeper counted the waves again. ';
    const story = sentence.repeat(100).trim();
    bot.llm.setScript({ reply: story, tokensPerSecond: 2000 });
    bot.discord.sendMessage({ channelId: thread.id, author: alice, content: 'A long story, please' });
    await bot.discord.waitFor(() => personaTexts(thread.id).join(' ').replace(/\s+/g, ' ') === story && personaTexts(thread.id).every((text) => !text.endsWith('▌')), 15_000);
    const parts = personaMessages(thread.id);
    expect(parts.length).toBeGreaterThanOrEqual(3);
    expect(parts.every((message) => message.content.length <= 2000 && message.author.username === 'alice')).toBe(true);
  });

  it('streams five threads of one channel at once without a 429, and grows the channel’s webhooks so later replies stream apart', async () => {
    const channel = bot.discord.createTextChannel(bot.discord.guild.id, 'five-threads');
    bot.discord.setManageWebhooks(channel.id, true);
    const threads: APIChannel[] = [];
    for (let index = 0; index < 5; index++) threads.push(await openThread(channel.id));
    const words = Array.from({ length: 30 }, (_, index) => `w${index}`);
    bot.llm.setScript({ tokens: words.map((word) => `${word} `), tokensPerSecond: 15 });
    const before = { ...bot.discord.rateLimitHits.byRoute };
    const live = () => bot.discord.webhooks(channel.id).filter((webhook) => !webhook.deleted);
    const round = async (content: string) => {
      const seen = new Map(threads.map((thread) => [thread.id, personaMessages(thread.id).length]));
      for (const thread of threads) bot.discord.sendMessage({ channelId: thread.id, author: alice, content });
      const final = words.join(' ');
      await bot.discord.waitFor(() => threads.every((thread) => personaMessages(thread.id).length > seen.get(thread.id)! && personaTexts(thread.id).at(-1) === final), 20_000);
      // Streamed, not just posted once: each reply was edited as it grew.
      for (const thread of threads) expect(bot.discord.messageHistory(personaMessages(thread.id).at(-1)!.id).length).toBeGreaterThan(1);
      // Each reply ends with its 🔄 button, and frees its webhook then.
      await bot.discord.waitFor(() => threads.every((thread) => (personaMessages(thread.id).at(-1)!.components?.length ?? 0) > 0), 10_000);
      return new Set(threads.map((thread) => personaMessages(thread.id).at(-1)!.webhook_id));
    };
    // Cold: the channel has no webhook; the first is made before the first reply, more while they stream.
    await round('Go');
    const grown = live().length;
    expect(grown).toBeGreaterThan(1);
    expect(grown).toBeLessThanOrEqual(5);
    // Warm: the next five replies spread over every webhook the channel has (the pool may still
    // be growing by one, made after the last reply started).
    const before2 = live().length;
    const used = await round('Again');
    expect(used.size).toBeGreaterThanOrEqual(before2);
    expect(live().length).toBeLessThanOrEqual(5);
    const webhookHits = Object.entries(bot.discord.rateLimitHits.byRoute).filter(([route, count]) => route.includes('/webhooks/') && count > (before[route] ?? 0));
    expect(webhookHits).toEqual([]);
  });

  it('serves the avatar at its URL for good, and nothing at a tampered one', async () => {
    const execute = executes().at(-1)!;
    const avatarUrl = (execute.body as { avatar_url: string }).avatar_url;
    const local = avatarUrl.replace(publicBaseUrl, bot.url());
    const response = await fetch(local);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('image/png');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.headers.get('cache-control')).toMatch(/public, max-age=\d{7,}, immutable/);
    expect(Buffer.from(await response.arrayBuffer()).equals(defaultAvatarPng(characterId))).toBe(true);
    const tampered = local.replace(/\/([A-Za-z0-9_-])([A-Za-z0-9_-]{42}\.png)$/, (_, first: string, rest: string) => `/${first === 'A' ? 'B' : 'A'}${rest}`);
    expect(tampered).not.toBe(local);
    expect((await fetch(tampered)).status).toBe(404);
    expect((await fetch(local.replace(/\.png$/, '.jpg'))).status).toBe(404);
    expect((await fetch(local.replace(characterId, '00000000-0000-4000-8000-000000000000'))).status).toBe(404);
  });

  it('never answers its own persona’s message, and answers a person’s', async () => {
    const thread = await openThread(bot.discord.guild.textChannelId);
    bot.discord.sendMessage({ channelId: thread.id, author: alice, content: 'First' });
    await bot.discord.waitFor(() => personaTexts(thread.id).includes('Echo: First'), 10_000);
    const asked = bot.llm.requests.length;
    // The persona's webhook posts again (as another copy of the bot would): not answered.
    const webhook = bot.discord.webhooks(bot.discord.guild.textChannelId).find((candidate) => !candidate.deleted && candidate.applicationId !== null)!;
    const posted = await fetch(`${bot.discord.apiBase}/v10/webhooks/${webhook.id}/${webhook.token}?wait=true&thread_id=${thread.id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ content: 'I am talking to myself', username: 'alice' }),
    });
    expect(posted.status).toBe(200);
    // Nor another webhook's (a person's, or another bot's): author.bot holds for every webhook message.
    const personal = bot.discord.createUserWebhook(bot.discord.guild.textChannelId, 'Captain Hook');
    const hooked = await fetch(`${bot.discord.apiBase}/v10/webhooks/${personal.id}/${personal.token}?wait=true&thread_id=${thread.id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ content: 'Arr, answer me' }),
    });
    expect(((await hooked.json()) as { author: { bot: boolean } }).author.bot).toBe(true);
    bot.discord.sendMessage({ channelId: thread.id, author: alice, content: 'Second' });
    await bot.discord.waitFor(() => personaTexts(thread.id).includes('Echo: Second'), 10_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(bot.llm.requests.length).toBe(asked + 1);
    expect(personaTexts(thread.id).filter((text) => text.startsWith('Echo: I am talking'))).toHaveLength(0);
  });

  it('writes the persona reply again in its own message when 🔄 is pressed under it', async () => {
    const thread = await openThread(bot.discord.guild.textChannelId);
    bot.llm.setScript({ reply: 'First try.' });
    bot.discord.sendMessage({ channelId: thread.id, author: alice, content: 'Say something' });
    const first = await bot.discord.waitFor(() => personaMessages(thread.id).find((message) => message.content === 'First try.' && againButton(message)), 10_000);
    const count = personaMessages(thread.id).length;
    bot.llm.setScript({ reply: 'Second try.' });
    const press = bot.discord.sendButton({ user: alice, message: first, customId: againButton(first)! });
    await press.response;
    // No new message: the webhook message under the button shows the new alternative, with its buttons.
    const second = await bot.discord.waitFor(() => personaMessages(thread.id).find((message) => message.content === 'Second try.' && againButton(message)), 10_000);
    expect(second.id).toBe(first.id);
    expect(second.author.username).toBe('alice');
    expect(personaMessages(thread.id)).toHaveLength(count);
  });

  it('goes on in a new message when its webhook is deleted while a reply streams: the reply whole, nothing repeated', async () => {
    const thread = await openThread(bot.discord.guild.textChannelId);
    const words = Array.from({ length: 60 }, (_, index) => `part${index}`);
    bot.llm.setScript({ tokens: words.map((word) => `${word} `), tokensPerSecond: 30 });
    bot.discord.sendMessage({ channelId: thread.id, author: alice, content: 'Talk for a while' });
    const streaming = await bot.discord.waitFor(() => personaMessages(thread.id).find((message) => message.content.endsWith('▌')), 10_000);
    const webhook = bot.discord.webhooks(bot.discord.guild.textChannelId).find((candidate) => candidate.id === streaming.webhook_id)!;
    expect((await fetch(`${bot.discord.apiBase}/v10/webhooks/${webhook.id}/${webhook.token}`, { method: 'DELETE' })).status).toBe(204);
    const final = words.join(' ');
    // The old message keeps the words it showed (its cursor too: only its webhook could edit it); the new one goes on after them.
    const readsWhole = () => personaTexts(thread.id).map((text) => text.replace(/\s*▌$/, '')).join(' ') === final;
    await bot.discord.waitFor(() => readsWhole() && personaMessages(thread.id).length > 1, 10_000);
    const ending = personaMessages(thread.id).at(-1)!;
    expect(personaMessages(thread.id).map((message) => message.id)).toEqual([streaming.id, ending.id]);
    expect(ending.webhook_id).not.toBe(webhook.id);
    expect(ending.author.username).toBe(streaming.author.username);
    expect(bot.botTexts(thread.id).filter((text) => text.startsWith('⚠️'))).toEqual([]);
  });

  it('makes the webhook again when someone deleted it between replies', async () => {
    const thread = await openThread(bot.discord.guild.textChannelId);
    bot.discord.sendMessage({ channelId: thread.id, author: alice, content: 'Before' });
    await bot.discord.waitFor(() => personaTexts(thread.id).includes('Echo: Before'), 10_000);
    const webhook = bot.discord.webhooks(bot.discord.guild.textChannelId).find((candidate) => !candidate.deleted && candidate.applicationId !== null)!;
    expect((await fetch(`${bot.discord.apiBase}/v10/webhooks/${webhook.id}/${webhook.token}`, { method: 'DELETE' })).status).toBe(204);
    bot.discord.sendMessage({ channelId: thread.id, author: alice, content: 'After' });
    await bot.discord.waitFor(() => personaTexts(thread.id).includes('Echo: After'), 10_000);
    const live = bot.discord.webhooks(bot.discord.guild.textChannelId).filter((candidate) => !candidate.deleted && candidate.applicationId !== null);
    expect(live).toHaveLength(1);
    expect(live[0]!.id).not.toBe(webhook.id);
    expect(personaMessages(thread.id).find((message) => message.content === 'Echo: After')!.webhook_id).toBe(live[0]!.id);
  });

  it('falls back to the bot without Manage Webhooks, says how to enable personas once, and uses them once granted', async () => {
    const channel = bot.discord.createTextChannel(bot.discord.guild.id, 'no-webhooks');
    const thread = await openThread(channel.id);
    bot.discord.sendMessage({ channelId: thread.id, author: alice, content: 'One' });
    await bot.discord.waitFor(() => bot.botTexts(thread.id).includes('Echo: One'), 10_000);
    bot.discord.sendMessage({ channelId: thread.id, author: alice, content: 'Two' });
    await bot.discord.waitFor(() => bot.botTexts(thread.id).includes('Echo: Two'), 10_000);
    const explanations = bot.botTexts(thread.id).filter((text) => text.includes('Manage Webhooks'));
    expect(explanations).toHaveLength(1);
    expect(bot.botTexts(thread.id).indexOf(explanations[0]!)).toBeLessThan(bot.botTexts(thread.id).indexOf('Echo: One'));
    expect(personaMessages(thread.id)).toHaveLength(0);

    bot.discord.setManageWebhooks(channel.id, true);
    bot.discord.sendMessage({ channelId: thread.id, author: alice, content: 'Three' });
    await bot.discord.waitFor(() => personaTexts(thread.id).includes('Echo: Three'), 10_000);
    expect(bot.botTexts(thread.id).filter((text) => text.includes('Manage Webhooks'))).toHaveLength(1);
  });

  it('answers in DMs as the bot, as before', async () => {
    const dm = bot.discord.openDm(alice);
    bot.discord.sendMessage({ channelId: dm, author: alice, content: 'Hi in private' });
    await bot.discord.waitFor(() => bot.botTexts(dm).includes('Echo: Hi in private'), 10_000);
    expect(personaMessages(dm)).toHaveLength(0);
  });
});
