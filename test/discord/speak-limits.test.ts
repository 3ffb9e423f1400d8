/**
 * Issue 28, item 4, on Discord: /speak says plainly when a text is too long to speak and when a
 * person has asked for too much speech this minute, and speaks nothing then.
 */
import type { APIUser } from 'discord-api-types/v10';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BotHarness, startBotHarness } from './harness.js';

/** How an answer carrying the mp3 looks in the fake's record of it. */
const audio = '"attachments":[{"id"';

describe('/speak within its bounds', () => {
  let bot: BotHarness;

  /** The text of the command's answer (its first reply or the edit of it), once there is one. */
  async function command(user: APIUser, name: string, options: Record<string, string> = {}, subcommand?: string): Promise<string> {
    const sent = bot.discord.sendSlashCommand({ user, channelId: bot.discord.guild.textChannelId, name, options, ...(subcommand ? { subcommand } : {}) });
    await sent.response;
    await bot.discord.waitFor(() => bot.discord.interactionResponses(sent.interactionId).some((record) => record.kind === 'original-edit' || record.callbackType === 4));
    return JSON.stringify(bot.discord.interactionResponses(sent.interactionId));
  }

  async function speaker(username: string): Promise<APIUser> {
    const user = bot.discord.createUser({ username });
    expect(await command(user, 'character', { preset: 'en-us' }, 'voice')).toContain('now speaks');
    return user;
  }

  beforeAll(async () => {
    bot = await startBotHarness({ environment: { SPEECH_MAX_TEXT_CHARACTERS: '40', SPEECH_RATE_LIMIT_PER_MINUTE: '2' } });
  });
  afterAll(() => bot.close());

  it('refuses a text past the bound, naming it, and speaks nothing', async () => {
    const user = await speaker('wordy');
    const answer = await command(user, 'speak', { text: 'This sentence is certainly longer than forty characters.' });
    expect(answer).toContain('at most 40');
    expect(answer).not.toContain(audio);
  });

  it('tells a person past their texts a minute when to try again', async () => {
    const user = await speaker('chatty');
    expect(await command(user, 'speak', { text: 'One.' })).toContain(audio);
    expect(await command(user, 'speak', { text: 'Two.' })).toContain(audio);
    const limited = await command(user, 'speak', { text: 'Three.' });
    expect(limited).toMatch(/at most 2 texts a minute[^"]*Try again in \d+ s/);
    expect(limited).not.toContain(audio);
    // Someone else is not held back by it.
    expect(await command(await speaker('quiet'), 'speak', { text: 'Three.' })).toContain(audio);
  });
});
