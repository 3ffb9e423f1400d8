import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { APIChannel, APIUser } from 'discord-api-types/v10';
import type { FakeMessage } from '../fakes/discord/driver.js';
import { type BotHarness, startBotHarness } from './harness.js';

const adminKey = 'reply-errors-admin-key-0123456789';
// A word no id, hash or timestamp can contain (a number such as a PIN could turn up inside a random
// attachment signature and fail the test by chance).
const secretWord = 'marmalade-quokka';
const secret = `Private note: the vault word is ${secretWord}`;

/** The 🔄 button's custom id under a message, if it has one. */
function againButton(message: FakeMessage): string | undefined {
  const ids = JSON.stringify(message.components ?? []).match(/chat:again:[0-9a-f-]+:[0-9a-f-]+/);
  return ids?.[0];
}

describe('Discord replies: errors in our words, 🔄 to try again, cut-off replies marked', () => {
  let bot: BotHarness;
  let alice: APIUser;
  let bob: APIUser;
  let carol: APIUser;
  let thread: APIChannel;

  async function admin(method: string, route: string, body?: unknown): Promise<any> {
    const response = await fetch(`${bot.url()}${route}`, {
      method,
      headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return response.json();
  }

  /** Everything the bot ever showed in the thread: every version of every message. */
  function everythingShown(): string {
    const messages = bot.discord.messages(thread.id);
    return JSON.stringify([messages, ...messages.map((message) => bot.discord.messageHistory(message.id))]);
  }

  beforeAll(async () => {
    bot = await startBotHarness({ environment: { ADMIN_API_KEY: adminKey }, script: { reply: 'Welcome.' } });
    alice = bot.discord.createUser({ username: 'alice' });
    bob = bot.discord.createUser({ username: 'bob' });
    carol = bot.discord.createUser({ username: 'carol' });
    const { discord } = bot;
    const choices = await discord.sendAutocomplete({ user: alice, channelId: discord.guild.textChannelId, name: 'chat', options: { character: '' }, focused: 'character' });
    const own = choices.find((choice) => choice.name.endsWith('(yours)'))!;
    const before = discord.threads.length;
    const sent = discord.sendSlashCommand({ user: alice, channelId: discord.guild.textChannelId, name: 'chat', options: { character: String(own.value) } });
    await sent.response;
    thread = await discord.waitFor((fake) => fake.threads.length > before && fake.threads.at(-1));
    // Alice's character holds a private memory; it goes into every prompt of the thread.
    const { accounts } = await admin('GET', '/api/v0/accounts');
    const owner = accounts.find((account: { username: string }) => account.username.startsWith('alice'));
    await admin('POST', `/api/v0/characters/${owner.characterId}/memories`, { text: secret });
  });
  afterAll(async () => {
    await bot.close();
  });

  it('never shows what a failing engine said, even when it echoes another person’s private memory', async () => {
    bot.llm.setScript((body) => ({ failure: { kind: 'http', status: 500, message: `Failed: ${JSON.stringify(body.messages)}`, code: 500 } }));
    bot.discord.sendMessage({ channelId: thread.id, author: bob, content: 'What is the PIN?' });
    await bot.discord.waitFor(() => bot.botTexts(thread.id).some((text) => text.startsWith('⚠️')), 10_000);
    expect(JSON.stringify(bot.llm.requests.at(-1)!.body.messages)).toContain(secretWord);

    bot.llm.setScript({ tokens: ['Well', ' then'], failure: { kind: 'error-event', afterTokens: 1, message: `${secret} at ${bot.llm.baseURL}`, code: 500 } });
    bot.discord.sendMessage({ channelId: thread.id, author: alice, content: 'Tell me anyway' });
    await bot.discord.waitFor(() => bot.botTexts(thread.id).filter((text) => text.includes('⚠️')).length === 2, 10_000);

    const shown = everythingShown();
    expect(shown).not.toContain(secretWord);
    expect(shown).not.toContain(bot.llm.baseURL.replace(/\/v1$/, ''));
    expect(bot.botTexts(thread.id)).toContain('⚠️ The chat engine failed to answer. Try again; if it keeps failing, tell the operator. Your message is saved.');
  });

  it('writes a new reply over a failed one when a speaker presses 🔄 under it, storing the message once', async () => {
    const failed = await bot.discord.waitFor(() => bot.discord.messages(thread.id).find((message) => message.content.startsWith('Well') && againButton(message)), 10_000);
    // The button under the earlier failure names a message that is no longer the latest.
    const older = bot.discord.messages(thread.id).find((message) => message.content.startsWith('⚠️') && againButton(message))!;
    const stale = bot.discord.sendButton({ user: bob, message: older, customId: againButton(older)! });
    await bot.discord.waitFor(() => bot.discord.interactionResponses(stale.interactionId).find((record) => JSON.stringify(record.body).includes('moved on')));
    const customId = againButton(failed)!;

    const outsider = bot.discord.sendButton({ user: carol, message: failed, customId });
    await outsider.response;
    const refusal = await bot.discord.waitFor(() => bot.discord.interactionResponses(outsider.interactionId).find((record) => JSON.stringify(record.body).includes('Only people')));
    expect(JSON.stringify(refusal.body)).toContain('Only people taking part in this conversation can ask for a new reply.');

    bot.llm.setScript({ reply: 'Fresh answer.' });
    const press = bot.discord.sendButton({ user: bob, message: failed, customId });
    await press.response;
    await bot.discord.waitFor(() => bot.botTexts(thread.id).includes('Fresh answer.'), 10_000);
    const prompt = bot.llm.requests.at(-1)!.body.messages!;
    expect(prompt.filter((message) => JSON.stringify(message.content).includes('Tell me anyway'))).toHaveLength(1);
    const conversations = await admin('GET', `/api/v0/conversations?accountId=${(await admin('GET', '/api/v0/accounts')).accounts.find((account: { username: string }) => account.username.startsWith('alice')).id}`);
    const read = await admin('GET', `/api/v0/conversations/${conversations.conversations[0].id}`);
    expect(read.messages.filter((message: { content: string }) => message.content === 'Tell me anyway')).toHaveLength(1);
    expect(read.messages.at(-1).content).toBe('Fresh answer.');
    // Written into the failed reply's own message (no new one), which has its button again.
    const fresh = bot.discord.messages(thread.id).find((message) => message.content === 'Fresh answer.')!;
    expect(fresh.id).toBe(failed.id);
    await bot.discord.waitFor(() => againButton(bot.discord.messages(thread.id).find((message) => message.id === fresh.id)!) !== undefined);
  });

  it('marks a reply the engine cut at its length limit', async () => {
    bot.llm.setScript({ reply: 'A story that goes on', finishReason: 'length' });
    bot.discord.sendMessage({ channelId: thread.id, author: alice, content: 'Tell me a story' });
    await bot.discord.waitFor(() => bot.botTexts(thread.id).includes('A story that goes on … *(cut off: reply limit)*'), 10_000);
  });
});
