import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { APIChannel, APIThreadChannel, APIUser } from 'discord-api-types/v10';
import { type BotHarness, echo, startBotHarness } from './harness.js';

describe('Discord conversations, end to end through discord.js and the fake Discord', () => {
  let bot: BotHarness;
  let alice: APIUser;
  let bob: APIUser;

  async function openThread(user: APIUser, first?: string): Promise<APIChannel> {
    const { discord } = bot;
    const choices = await discord.sendAutocomplete({
      user,
      channelId: discord.guild.textChannelId,
      name: 'chat',
      options: { character: '' },
      focused: 'character',
    });
    const own = choices.find((choice) => choice.name.endsWith('(yours)'))!;
    const before = discord.threads.length;
    const sent = discord.sendSlashCommand({
      user,
      channelId: discord.guild.textChannelId,
      name: 'chat',
      options: { character: String(own.value), ...(first ? { message: first } : {}) },
    });
    expect((await sent.response)?.type).toBe(5);
    const thread = await discord.waitFor((fake) => fake.threads.length > before && fake.threads.at(-1));
    await discord.waitFor((fake) =>
      fake.interactionResponses(sent.interactionId).some((record) => JSON.stringify(record.body ?? '').includes(`<#${thread.id}>`)),
    );
    return thread;
  }

  beforeAll(async () => {
    bot = await startBotHarness({ script: echo('Echo:') });
    alice = bot.discord.createUser({ username: 'alice' });
    bob = bot.discord.createUser({ username: 'bob' });
  });
  beforeEach(() => bot.llm.setScript(echo('Echo:')));
  afterAll(async () => {
    await bot.close();
  });

  it('offers the user’s own character in autocomplete, then /chat opens a thread with a header and answers the first message', async () => {
    const thread = await openThread(alice, 'Hello there');
    expect((thread as APIThreadChannel).parent_id).toBe(bot.discord.guild.textChannelId);
    expect(thread.type).toBe(11);
    const messages = bot.discord.messages(thread.id);
    expect(messages[0]!.embeds[0]!.title).toBe('alice');
    expect(messages[0]!.attachments[0]!.filename).toMatch(/^avatar\.png$/);
    const reply = await bot.discord.waitFor(() => bot.botTexts(thread.id).find((text) => text === 'Echo: Hello there'));
    expect(reply).toBe('Echo: Hello there');
  });

  it('streams a reply to a thread message by edits, ending with exactly the engine’s text', async () => {
    const thread = await openThread(alice);
    const words = Array.from({ length: 40 }, (_, index) => `word${index}`);
    // A slow start (prompt processing) shows the typing indicator until the first words.
    bot.llm.setScript({ tokens: words.map((word) => `${word} `), tokensPerSecond: 40, firstTokenDelayMs: 800 });
    bot.discord.sendMessage({ channelId: thread.id, author: alice, content: 'Tell me forty words' });
    const final = words.join(' ');
    await bot.discord.waitFor(() => bot.botTexts(thread.id).includes(final), 10_000);
    const reply = bot.discord.messages(thread.id).find((message) => message.content === final)!;
    const versions = bot.discord.messageHistory(reply.id).map((version) => version.content);
    expect(versions.length).toBeGreaterThan(2);
    expect(versions.slice(0, -1).every((version) => version.endsWith('▌'))).toBe(true);
    expect(versions.at(-1)).toBe(final);
    const typing = bot.discord.typingEvents(thread.id);
    expect(typing.length).toBeGreaterThan(0);
    expect(typing[0]!).toBeLessThan(bot.discord.messageHistory(reply.id)[0]!.timestamp);
    // The user's message and the reply are in the conversation, in order.
    expect(bot.llm.requests.at(-1)!.body.messages!.at(-1)).toEqual({ role: 'user', content: 'Tell me forty words' });
  });

  it('splits a long reply into messages of at most 2,000 characters', async () => {
    const thread = await openThread(alice);
    const paragraph = 'The harbour lights came on one by one as the boats returned. '.repeat(10).trim();
    const text = Array.from({ length: 8 }, () => paragraph).join('\n\n');
    bot.llm.setScript({ tokens: text.match(/\S+\s*/g)!, tokensPerSecond: 2000 });
    bot.discord.sendMessage({ channelId: thread.id, author: alice, content: 'A long story, please' });
    // The thread's first bot message is the character card, which has no content.
    const parts = await bot.discord.waitFor(() => {
      const texts = bot.botTexts(thread.id);
      return texts.join('\n\n') === text && texts;
    }, 15_000);
    expect(parts.length).toBe(3);
    expect(parts.every((part) => part.length <= 2000)).toBe(true);
  });

  it('delivers the full text even when Discord answers edits with 429s', async () => {
    const thread = await openThread(alice);
    bot.discord.forceRateLimit({ method: 'PATCH', routeTemplate: '/channels/{channel.id}/messages/{message.id}', count: 4, retryAfterMs: 300 });
    const hitsBefore = bot.discord.rateLimitHits.total;
    bot.llm.setScript({ tokens: Array.from({ length: 30 }, (_, index) => `t${index} `), tokensPerSecond: 30 });
    bot.discord.sendMessage({ channelId: thread.id, author: alice, content: 'Go' });
    const final = Array.from({ length: 30 }, (_, index) => `t${index}`).join(' ');
    await bot.discord.waitFor(() => bot.botTexts(thread.id).includes(final), 15_000);
    expect(bot.discord.rateLimitHits.total).toBeGreaterThanOrEqual(hitsBefore + 4);
  });

  it('answers several people in one thread, each as a speaker, in order', async () => {
    const thread = await openThread(alice);
    bot.llm.setScript((body) => ({ ...echo('Echo:')(body), tokensPerSecond: 20 }));
    bot.discord.sendMessage({ channelId: thread.id, author: alice, content: 'first from alice' });
    bot.discord.sendMessage({ channelId: thread.id, author: bob, content: 'then bob' });
    // Bob's line reaches the engine with his name: two people now share the conversation.
    const texts = await bot.discord.waitFor(() => {
      const found = bot.botTexts(thread.id);
      return found.includes('Echo: bob: then bob') && found;
    }, 15_000);
    const alicesReply = texts.findIndex((text) => /^Echo: (alice: )?first from alice$/.test(text));
    expect(alicesReply).toBeGreaterThanOrEqual(0);
    expect(alicesReply).toBeLessThan(texts.indexOf('Echo: bob: then bob'));
  });

  it('answers a second message after the first reply is complete, with its own reply', async () => {
    const thread = await openThread(alice);
    bot.llm.setScript((body) => ({ ...echo('Echo:')(body), tokensPerSecond: 8 }));
    bot.discord.sendMessage({ channelId: thread.id, author: alice, content: 'one two three four' });
    await bot.discord.waitFor(() => bot.discord.messages(thread.id).length >= 3);
    bot.discord.sendMessage({ channelId: thread.id, author: alice, content: 'second question' });
    await bot.discord.waitFor(() => bot.botTexts(thread.id).includes('Echo: second question'), 15_000);
    const replies = bot.discord.messages(thread.id).filter((message) => message.author.id === bot.discord.botUser.id && message.content.startsWith('Echo:'));
    expect(replies.map((message) => message.content)).toEqual(['Echo: one two three four', 'Echo: second question']);
    // The second reply began only after the first was finished.
    const firstDone = bot.discord.messageHistory(replies[0]!.id).at(-1)!.timestamp;
    expect(bot.discord.messageHistory(replies[1]!.id)[0]!.timestamp).toBeGreaterThanOrEqual(firstDone);
    // And the engine saw the second question after the first answer.
    const sent = bot.llm.requests.at(-1)!.body.messages!;
    expect(sent.at(-2)).toEqual({ role: 'assistant', content: 'Echo: one two three four' });
  });

  it('ends the reply with a short explanation when the engine fails, keeping the message', async () => {
    const thread = await openThread(alice);
    bot.llm.setScript({ tokens: ['Partial ', 'thought'], failure: { kind: 'error-event', message: 'GPU on fire', afterTokens: 1 } });
    bot.discord.sendMessage({ channelId: thread.id, author: alice, content: 'Will this work?' });
    const shown = await bot.discord.waitFor(() => bot.botTexts(thread.id).find((text) => text.includes('⚠️')), 10_000);
    expect(shown.startsWith('Partial')).toBe(true);
    // What the engine said goes to the log only.
    expect(shown).not.toContain('GPU on fire');
    expect(shown).not.toContain('▌');
    bot.llm.setScript(echo('Echo:'));
    bot.discord.sendMessage({ channelId: thread.id, author: alice, content: 'Again?' });
    await bot.discord.waitFor(() => bot.botTexts(thread.id).includes('Echo: Again?'), 10_000);
    const history = JSON.stringify(bot.llm.requests.at(-1)!.body.messages);
    expect(history).toContain('Will this work?');
  });

  it('/clear empties the thread’s conversation', async () => {
    const thread = await openThread(alice, 'remember the password swordfish');
    await bot.discord.waitFor(() => bot.botTexts(thread.id).includes('Echo: remember the password swordfish'));
    const sent = bot.discord.sendSlashCommand({ user: alice, channelId: thread.id, name: 'clear' });
    await sent.response;
    await bot.discord.waitFor(() => bot.botTexts(thread.id).some((text) => text.includes('cleared this conversation')));
    bot.discord.sendMessage({ channelId: thread.id, author: alice, content: 'What was it?' });
    await bot.discord.waitFor(() => bot.botTexts(thread.id).includes('Echo: What was it?'));
    expect(JSON.stringify(bot.llm.requests.at(-1)!.body.messages)).not.toContain('swordfish');
  });

  it('talks in DMs with the user’s own character', async () => {
    const dm = bot.discord.openDm(bob);
    bot.discord.sendMessage({ channelId: dm, author: bob, content: 'Hi in private' });
    await bot.discord.waitFor(() => bot.botTexts(dm).includes('Echo: Hi in private'), 10_000);
    const system = String(bot.llm.requests.at(-1)!.body.messages![0]!.content);
    expect(system).toContain('You are bob');
  });

  it('switches the DM character with /chat in DMs, and back', async () => {
    const carol = bot.discord.createUser({ username: 'carol' });
    const edited = bot.discord.sendSlashCommand({
      user: alice,
      channelId: bot.discord.guild.textChannelId,
      name: 'character',
      subcommand: 'edit',
      options: { name: 'Madame Alice', public: true },
    });
    await edited.response;
    await bot.discord.waitFor(() => JSON.stringify(bot.discord.interactionResponses(edited.interactionId)).includes('Madame Alice'));
    const dm = bot.discord.openDm(carol);
    const switched = bot.discord.sendSlashCommand({ user: carol, channelId: dm, name: 'chat', options: { character: 'Madame Alice', message: 'Bonjour' } });
    await switched.response;
    await bot.discord.waitFor(() => bot.botTexts(dm).includes('Echo: Bonjour'), 10_000);
    expect(String(bot.llm.requests.at(-1)!.body.messages![0]!.content)).toContain('You are Madame Alice');
    bot.discord.sendMessage({ channelId: dm, author: carol, content: 'Still you?' });
    await bot.discord.waitFor(() => bot.botTexts(dm).includes('Echo: Still you?'), 10_000);
    expect(String(bot.llm.requests.at(-1)!.body.messages![0]!.content)).toContain('You are Madame Alice');
    expect(JSON.stringify(bot.llm.requests.at(-1)!.body.messages)).toContain('Bonjour');
  });

  it('says so when the character someone talks with in DMs was made private by its owner, and asks the engine nothing', async () => {
    const [dave, erin] = [bot.discord.createUser({ username: 'dave' }), bot.discord.createUser({ username: 'erin' })];
    const edit = async (isPublic: boolean) => {
      const edited = bot.discord.sendSlashCommand({ user: dave, channelId: bot.discord.guild.textChannelId, name: 'character', subcommand: 'edit', options: { name: 'Shy Dave', public: isPublic } });
      await edited.response;
      await bot.discord.waitFor(() => JSON.stringify(bot.discord.interactionResponses(edited.interactionId)).includes('Saved.'));
    };
    await edit(true);
    const dm = bot.discord.openDm(erin);
    const started = bot.discord.sendSlashCommand({ user: erin, channelId: dm, name: 'chat', options: { character: 'Shy Dave', message: 'Hi Dave' } });
    await started.response;
    await bot.discord.waitFor(() => bot.botTexts(dm).includes('Echo: Hi Dave'), 10_000);
    await edit(false);
    const asked = bot.llm.requests.length;
    bot.discord.sendMessage({ channelId: dm, author: erin, content: 'Are you there?' });
    const refusal = await bot.discord.waitFor(() => bot.botTexts(dm).find((text) => text.startsWith('⚠️')), 10_000);
    expect(refusal).toContain('"Shy Dave" was made private by its owner');
    expect(bot.llm.requests.length).toBe(asked);
  });

  it('keeps threads working after a restart', async () => {
    const thread = await openThread(alice);
    await bot.restart();
    bot.discord.sendMessage({ channelId: thread.id, author: alice, content: 'still there?' });
    await bot.discord.waitFor(() => bot.botTexts(thread.id).includes('Echo: still there?'), 15_000);
  });
});
