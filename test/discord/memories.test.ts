/**
 * `/memories` on the fake Discord: a person sees and deletes what a character learned about
 * them, and an owner approves what their character learned from them, with buttons.
 */
import type { APIUser } from 'discord-api-types/v10';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { extractionAnswer, isExtraction } from '../fakes/fake-extractor.js';
import type { FakeRequestBody } from '../fakes/fake-openai.js';
import { type BotHarness, type CommandOptions, latestAnswer, runCommand, startBotHarness } from './harness.js';

describe('/memories', () => {
  let bot: BotHarness;
  let alice: APIUser;
  let bob: APIUser;

  const run = (user: APIUser, name: string, options: CommandOptions = {}, subcommand?: string, channelId = bot.discord.guild.textChannelId) =>
    runCommand(bot, user, name, options, subcommand, channelId);
  const latest = (interactionId: string) => latestAnswer(bot, interactionId);
  const messageOf = (interactionId: string) => bot.discord.interactionResponses(interactionId).find((record) => record.messageId)!.messageId!;

  async function openThread(user: APIUser, pick: (name: string) => boolean, first: string) {
    const { discord } = bot;
    const choices = await discord.sendAutocomplete({ user, channelId: discord.guild.textChannelId, name: 'chat', options: { character: '' }, focused: 'character' });
    const choice = choices.find((each) => pick(each.name))!;
    const before = discord.threads.length;
    const sent = discord.sendSlashCommand({ user, channelId: discord.guild.textChannelId, name: 'chat', options: { character: String(choice.value), message: first } });
    await sent.response;
    return discord.waitFor((fake) => fake.threads.length > before && fake.threads.at(-1));
  }

  beforeAll(async () => {
    bot = await startBotHarness({
      script: (body: FakeRequestBody) => (isExtraction(body) ? extractionAnswer(body) : { reply: 'Aye.' }),
      environment: { LEARNING: 'on', LEARNING_BATCH_MESSAGES: '2', LEARNING_QUIET_SECONDS: '1', DISCORD_COMMANDS_PER_MINUTE: '200' },
    });
    alice = bot.discord.createUser({ username: 'alice' });
    bob = bot.discord.createUser({ username: 'bob' });
    await run(alice, 'character', { public: true }, 'edit');
  });
  afterAll(async () => {
    await bot.close();
  });

  it('shows a person what a character learned about them, only to them, and deletes it for good with a button', async () => {
    const thread = await openThread(bob, (name) => name.startsWith('alice'), 'My sister is called Mia.');
    await expect.poll(async () => (await run(bob, 'memories', {}, 'about-me')).text, { timeout: 60_000, interval: 200 }).toContain("bob's sister is called Mia.");
    // The next reply in the thread is written knowing it; /memories used there says so.
    const replies = () => bot.botTexts(thread.id).filter((text) => text === 'Aye.').length;
    const before = replies();
    bot.discord.sendMessage({ channelId: thread.id, author: bob, content: 'Do you remember my family?' });
    await bot.discord.waitFor(() => replies() > before || undefined, 15_000);
    expect((await run(bob, 'memories', {}, 'used', thread.id)).text).toContain("bob's sister is called Mia. *(about you)*");
    const shown = await run(bob, 'memories', {}, 'about-me');
    expect(shown.text).toContain('only you see this');
    // Alice owns the character, and still does not see what it learned about bob.
    expect((await run(alice, 'memories', {}, 'about-me')).text).not.toContain('Mia');
    const press = bot.discord.sendButton({ user: bob, message: messageOf(shown.id), customId: JSON.parse(shown.text).components[0].components[0].custom_id });
    await press.response;
    await bot.discord.waitFor(() => latest(press.interactionId).includes('Deleted for good'));
    expect((await run(bob, 'memories', {}, 'about-me')).text).toContain('No character remembers anything about you.');
  });

  it('lets the owner approve what their character learned from them', async () => {
    await openThread(alice, (name) => name.endsWith('(yours)'), 'I grew up in Porto.');
    await expect.poll(async () => (await run(alice, 'memories', {}, 'review')).text, { timeout: 60_000, interval: 200 }).toContain('I grew up in Porto.');
    const review = await run(alice, 'memories', {}, 'review');
    const approve = JSON.parse(review.text).components[0].components[0].custom_id as string;
    expect(approve).toMatch(/^memories:approve:/);
    // Only the owner can approve.
    const stranger = bot.discord.sendButton({ user: bob, message: messageOf(review.id), customId: approve });
    await stranger.response;
    await bot.discord.waitFor(() => latest(stranger.interactionId).includes('Only the owner'));
    const press = bot.discord.sendButton({ user: alice, message: messageOf(review.id), customId: approve });
    await press.response;
    await bot.discord.waitFor(() => latest(press.interactionId).includes('Approved'));
    expect((await run(alice, 'memories', {}, 'review')).text).toContain('Nothing from your conversations is waiting');
  });

  it('shows the owner which approved memory a contradiction replaces, and supersedes it on approval', async () => {
    await openThread(alice, (name) => name.endsWith('(yours)'), 'I grew up in Lisbon.');
    await expect.poll(async () => (await run(alice, 'memories', {}, 'review')).text, { timeout: 60_000, interval: 200 }).toContain('I grew up in Lisbon.');
    const review = await run(alice, 'memories', {}, 'review');
    expect(review.text).toContain('I grew up in Lisbon. — *replaces “I grew up in Porto.”*');
    const press = bot.discord.sendButton({ user: alice, message: messageOf(review.id), customId: JSON.parse(review.text).components[0].components[0].custom_id });
    await press.response;
    await bot.discord.waitFor(() => latest(press.interactionId).includes('Approved'));
    // The replaced memory is no longer used: the character's next prompt has Lisbon only.
    const thread = await openThread(bob, (name) => name.startsWith('alice'), 'Where did you grow up?');
    const prompt = () => bot.llm.requests.filter((request) => request.path.endsWith('/chat/completions') && !isExtraction(request.body)).map((request) => JSON.stringify(request.body.messages)).at(-1) ?? '';
    await bot.discord.waitFor(() => bot.botTexts(thread.id).includes('Aye.') || undefined, 15_000);
    expect(prompt()).toContain('I grew up in Lisbon.');
    expect(prompt()).not.toContain('Porto');
  });

  it('learns nothing from what a listening channel only keeps as context; what addresses the character is learned', async () => {
    const { discord } = bot;
    const channel = discord.createTextChannel(discord.guild.id, 'harbour').id;
    const manager = { id: discord.guild.ownerId } as APIUser;
    const choices = await discord.sendAutocomplete({ user: alice, channelId: discord.guild.textChannelId, name: 'chat', options: { character: '' }, focused: 'character' });
    const character = String(choices.find((each) => each.name.endsWith('(yours)'))!.value);
    const added = discord.sendSlashCommand({ user: manager, channelId: channel, name: 'channel', subcommandGroup: 'characters', subcommand: 'add', options: { character } });
    await added.response;
    await discord.waitFor(() => JSON.stringify(discord.interactionResponses(added.interactionId)).includes('may now speak'));
    const listened = discord.sendSlashCommand({ user: manager, channelId: channel, name: 'channel', subcommand: 'listen', options: { on: true } });
    await listened.response;
    await discord.waitFor(() => JSON.stringify(discord.interactionResponses(listened.interactionId)).includes('kept as context'));
    const extractions = () => bot.llm.requests.filter((request) => isExtraction(request.body)).map((request) => JSON.stringify(request.body.messages));
    const before = extractions().length;
    // Bob talks with people in the channel, then tells the character something.
    discord.sendMessage({ channelId: channel, author: bob, content: 'My cat is called Tom.' });
    discord.sendMessage({ channelId: channel, author: bob, content: `<@${discord.botUser.id}> My dog is called Rex.` });
    await expect.poll(async () => (await run(bob, 'memories', {}, 'about-me')).text, { timeout: 60_000, interval: 200 }).toContain("bob's dog is called Rex.");
    expect((await run(bob, 'memories', {}, 'about-me')).text).not.toContain('Tom');
    // The kept line was never even sent to be learned from, though the character's prompt had it.
    expect(extractions().slice(before).some((text) => text.includes('Rex'))).toBe(true);
    expect(extractions().slice(before).some((text) => text.includes('Tom'))).toBe(false);
  });

  it('turns learning off for the person who asks', async () => {
    expect((await run(bob, 'memories', { state: 'off' }, 'learning')).text).toContain('learn nothing more');
    expect((await run(bob, 'memories', {}, 'about-me')).text).toContain('Learning is **off** for you');
  });
});
