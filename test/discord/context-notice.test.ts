import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BotHarness, startBotHarness } from './harness.js';

describe('Discord: a message longer than the character’s context', () => {
  let bot: BotHarness;
  beforeAll(async () => {
    bot = await startBotHarness({ script: { reply: 'Heard you.' }, environment: { LLM_CONTEXT_TOKENS: '512', LLM_MAX_REPLY_TOKENS: '128' } });
  });
  afterAll(async () => {
    await bot.close();
  });

  it('gets a clear notice with the limit in characters, and is not stored or sent', async () => {
    const erin = bot.discord.createUser({ username: 'erin' });
    const dm = bot.discord.openDm(erin);
    bot.discord.sendMessage({ channelId: dm, author: erin, content: 'word '.repeat(300).trim() });
    const notice = await bot.discord.waitFor(() => bot.botTexts(dm).find((text) => text.startsWith('⚠️')), 10_000);
    expect(notice).toMatch(/at most about \d+ characters fit/);
    expect(bot.llm.requests.filter((request) => request.path.endsWith('/chat/completions'))).toHaveLength(0);
    bot.discord.sendMessage({ channelId: dm, author: erin, content: 'Short then.' });
    await bot.discord.waitFor(() => bot.botTexts(dm).includes('Heard you.'), 10_000);
    expect(JSON.stringify(bot.llm.requests.at(-1)!.body.messages)).not.toContain('word word');
  });
});
