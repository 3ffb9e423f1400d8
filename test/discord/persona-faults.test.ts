/**
 * Personas are an enhancement: when Discord answers 5xx on a channel's webhook routes (after
 * discord.js's own three retries), a reply in a thread still arrives whole, posted by the bot,
 * the next message is answered too, and replies go out as the character again once Discord recovers.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { APIChannel, APIUser } from 'discord-api-types/v10';
import type { FakeMessage } from '../fakes/discord/driver.js';
import { type BotHarness, echo, startBotHarness } from './harness.js';

const routes = {
  lookup: 'GET /channels/{channel.id}/webhooks',
  creation: 'POST /channels/{channel.id}/webhooks',
  execute: 'POST /webhooks/{webhook.id}/{webhook.token}',
  edit: 'PATCH /webhooks/{webhook.id}/{webhook.token}/messages/{message.id}',
} as const;

describe('persona replies when Discord fails the webhook routes', () => {
  let bot: BotHarness;
  let alice: APIUser;

  /** A new channel where the bot may manage webhooks (so its pool is looked up afresh), and a /chat thread in it. */
  async function freshThread(name: string): Promise<APIChannel> {
    const { discord } = bot;
    const channel = discord.createTextChannel(discord.guild.id, name);
    discord.setManageWebhooks(channel.id, true);
    const choices = await discord.sendAutocomplete({ user: alice, channelId: channel.id, name: 'chat', options: { character: '' }, focused: 'character' });
    const own = choices.find((choice) => choice.name.endsWith('(yours)'))!;
    const before = discord.threads.length;
    const sent = discord.sendSlashCommand({ user: alice, channelId: channel.id, name: 'chat', options: { character: String(own.value) } });
    await sent.response;
    const thread = await discord.waitFor((fake) => fake.threads.length > before && fake.threads.at(-1));
    await discord.waitFor((fake) => fake.interactionResponses(sent.interactionId).some((record) => JSON.stringify(record.body ?? '').includes(`<#${thread.id}>`)));
    return thread;
  }

  const personaMessages = (channelId: string): FakeMessage[] => bot.discord.messages(channelId).filter((message) => message.webhook_id);
  /** The messages written in answer since `after` (the bot's and its personas'), once they read `text` whole. */
  const reply = (threadId: string, after: FakeMessage, text: string): Promise<FakeMessage[]> =>
    bot.discord.waitFor(() => {
      const answer = bot.discord.messages(threadId).filter((message) => BigInt(message.id) > BigInt(after.id) && message.author.id !== alice.id);
      // A message the bot could not edit any more may keep its cursor; the words are what count.
      const words = answer.flatMap((message) => message.content.replace(/ ?▌$/, '').split(/\s+/).filter((word) => word !== ''));
      return words.join(' ') === text && answer;
    }, 15_000);
  /** Alice writes `content` in the thread; resolves with the answer once it reads as the echo. */
  const answer = (threadId: string, content: string): Promise<FakeMessage[]> =>
    reply(threadId, bot.discord.sendMessage({ channelId: threadId, author: alice, content }), `Echo: ${content}`);
  const byBot = (messages: FakeMessage[]): boolean => messages.every((message) => message.author.id === bot.discord.botUser.id && !message.webhook_id);
  const asPersona = (messages: FakeMessage[]): boolean => messages.every((message) => message.webhook_id && message.author.username === 'alice');
  const failedRequests = (route: string): number => bot.discord.requests.filter((request) => request.route === route && request.status === 500).length;

  beforeAll(async () => {
    // PUBLIC_BASE_URL a public name, so personas carry a picture as in production.
    bot = await startBotHarness({ script: echo('Echo:'), environment: { PUBLIC_BASE_URL: 'https://likeness.example', DISCORD_MESSAGES_PER_MINUTE: '100' } });
    alice = bot.discord.createUser({ username: 'alice' });
  });
  afterEach(() => {
    bot.discord.clearServerErrors();
    bot.llm.setScript(echo('Echo:'));
  });
  afterAll(async () => {
    await bot.close();
  });

  for (const failing of ['lookup', 'creation', 'execute'] as const) {
    it(`posts the reply as the bot while the webhook ${failing} answers 500, answers the next message, and speaks as the character once it recovers`, async () => {
      const thread = await freshThread(`failing-${failing}`);
      // For execute, the channel's webhook exists already: only posting through it fails.
      if (failing === 'execute') expect(asPersona(await answer(thread.id, 'Before'))).toBe(true);
      bot.discord.forceServerError({ route: routes[failing], status: 500 });
      expect(byBot(await answer(thread.id, 'One'))).toBe(true);
      expect(byBot(await answer(thread.id, 'Two'))).toBe(true);
      expect(failedRequests(routes[failing])).toBeGreaterThanOrEqual(4);
      // Nothing people should hear of: no error, no word on how to enable personas.
      expect(bot.botTexts(thread.id).filter((text) => !text.startsWith('Echo:'))).toEqual([]);

      bot.discord.clearServerErrors();
      expect(asPersona(await answer(thread.id, 'Three'))).toBe(true);
    });
  }

  it('goes on as the bot when its persona message can no longer be edited mid-stream: the reply whole, nothing doubled', async () => {
    const thread = await freshThread('failing-edit');
    const words = Array.from({ length: 60 }, (_, index) => `part${index}`);
    bot.llm.setScript({ tokens: words.map((word) => `${word} `), tokensPerSecond: 30 });
    const asked = bot.discord.sendMessage({ channelId: thread.id, author: alice, content: 'Talk for a while' });
    const streaming = await bot.discord.waitFor(() => personaMessages(thread.id).find((message) => message.content.endsWith('▌')), 10_000);
    bot.discord.forceServerError({ route: routes.edit, status: 500 });
    const written = await reply(thread.id, asked, words.join(' '));
    // The persona message keeps the words it showed, and the bot goes on after them.
    expect(written[0]!.id).toBe(streaming.id);
    expect(byBot(written.slice(1))).toBe(true);
    expect(written.length).toBeGreaterThan(1);
    expect(failedRequests(routes.edit)).toBeGreaterThanOrEqual(4);

    bot.llm.setScript(echo('Echo:'));
    await answer(thread.id, 'Still there?');
    bot.discord.clearServerErrors();
    expect(asPersona(await answer(thread.id, 'And now?'))).toBe(true);
  });
});
