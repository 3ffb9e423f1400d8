import type { APIUser } from 'discord-api-types/v10';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeMessage } from '../fakes/discord/driver.js';
import { v2Png } from '../cards/card-fixtures.js';
import { type BotHarness, latestAnswer, runCommand, startBotHarness } from './harness.js';

/** The buttons under a message: custom ids, the position label, which are disabled. */
function buttons(message: FakeMessage): { ids: string[]; position: string | undefined; disabled: boolean[] } {
  const components = (message.components ?? []).flatMap((row) => ('components' in row ? (row.components as unknown as Array<Record<string, unknown>>) : []));
  return {
    ids: components.map((component) => String(component['custom_id'])),
    position: components.find((component) => typeof component['label'] === 'string')?.['label'] as string | undefined,
    disabled: components.map((component) => component['disabled'] === true),
  };
}

/** A card's greetings open its conversations on Discord: in a /chat thread, and in a DM. */
describe('greetings on Discord', () => {
  let bot: BotHarness;
  let alice: APIUser;
  let bram: string;

  beforeAll(async () => {
    bot = await startBotHarness({ script: { reply: 'Aye.' }, environment: { DISCORD_MESSAGES_PER_MINUTE: '100', DISCORD_COMMANDS_PER_MINUTE: '100' } });
    alice = bot.discord.createUser({ username: 'alice' });
    bot.discord.setManageWebhooks(bot.discord.guild.textChannelId, true);
    // Bram's card greets with "Who goes there?", and two alternate greetings.
    const sent = bot.discord.sendSlashCommand({
      user: alice, channelId: bot.discord.guild.textChannelId, name: 'character', subcommand: 'import',
      options: { file: { filename: 'bram.png', contentType: 'image/png', bytes: Buffer.from(v2Png()) } },
    });
    await sent.response;
    await bot.discord.waitFor(() => latestAnswer(bot, sent.interactionId).includes('Made **Bram**'));
    const choices = await bot.discord.sendAutocomplete({ user: alice, channelId: bot.discord.guild.textChannelId, name: 'chat', options: { character: 'bram' }, focused: 'character' });
    bram = String(choices[0]!.value);
  });
  afterAll(async () => {
    await bot.close();
  });

  it('opens a /chat thread with the greeting as the character, before the first answer', async () => {
    const { discord } = bot;
    const before = discord.threads.length;
    await runCommand(bot, alice, 'chat', { character: bram, message: 'Hello?' });
    const thread = await discord.waitFor((fake) => fake.threads.length > before && fake.threads.at(-1));
    const answered = await discord.waitFor(() => {
      const messages = discord.messages(thread.id);
      return messages.some((message) => message.content === 'Aye.' && buttons(message).position) && messages;
    });
    const texts = answered.map((message) => message.content);
    // The card, then the greeting, then alice's question's answer.
    const greetingIndex = texts.indexOf('Who goes there?');
    expect(greetingIndex).toBeGreaterThan(-1);
    expect(texts.indexOf('Aye.')).toBeGreaterThan(greetingIndex);
    const greeting = answered[greetingIndex]!;
    expect(greeting.webhook_id).toBeTruthy();
    expect(greeting.author.username).toBe('Bram');
    // The prompt carried it as Bram's line.
    const prompt = bot.llm.requests.at(-1)!.body.messages!.filter((message) => message.role !== 'system');
    // (The card's post-history instructions, "Stay terse.", come after the history.)
    expect(prompt.map((message) => message.content)).toEqual(['Who goes there?', 'Hello?\n\nStay terse.']);
  });

  it('swipes a greeting with ◀ ▶, stopping at the last, and the conversation goes on from the one shown', async () => {
    const { discord } = bot;
    const before = discord.threads.length;
    await runCommand(bot, alice, 'chat', { character: bram });
    const thread = await discord.waitFor((fake) => fake.threads.length > before && fake.threads.at(-1));
    const greeting = await discord.waitFor(() => discord.messages(thread.id).find((message) => message.content === 'Who goes there?'));
    expect(buttons(greeting)).toMatchObject({ position: '1/3', disabled: [true, true, false] });
    expect(buttons(greeting).ids.some((id) => id.startsWith('chat:again'))).toBe(false);
    for (const [content, position] of [['Another ship lost.', '2/3'], ['Tea?', '3/3']] as const) {
      const now = discord.message(greeting.id)!;
      await discord.sendButton({ user: alice, message: now, customId: buttons(now).ids[2]! }).response;
      await discord.waitFor(() => discord.message(greeting.id)!.content === content && buttons(discord.message(greeting.id)!).position === position);
    }
    // At the last, ▶ is off: a greeting is swiped, never written anew.
    expect(buttons(discord.message(greeting.id)!).disabled).toEqual([false, true, true]);
    const calls = bot.llm.requests.length;
    discord.sendMessage({ channelId: thread.id, author: alice, content: 'Tea, please.' });
    await discord.waitFor(() => bot.llm.requests.length > calls);
    const prompt = bot.llm.requests.at(-1)!.body.messages!.filter((message) => message.role !== 'system');
    expect(prompt.map((message) => message.content)).toEqual(['Tea?', 'Tea, please.\n\nStay terse.']);
  });

  it('greets in a DM before answering the first message there', async () => {
    const { discord } = bot;
    const dm = discord.openDm(alice);
    await runCommand(bot, alice, 'chat', { character: bram }, undefined, dm);
    discord.sendMessage({ channelId: dm, author: alice, content: 'Anyone home?' });
    const messages = await discord.waitFor(() => {
      const all = discord.messages(dm).filter((message) => message.author.id !== alice.id && !message.interaction_metadata);
      return all.some((message) => message.content === 'Aye.') && all;
    });
    const contents = messages.map((message) => message.content);
    expect(contents.indexOf('Who goes there?')).toBeGreaterThan(-1);
    expect(contents.indexOf('Who goes there?')).toBeLessThan(contents.indexOf('Aye.'));
  });
});
