import { PNG } from 'pngjs';
import type { APIUser } from 'discord-api-types/v10';
import { PermissionFlagsBits } from 'discord.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BotHarness, type CommandOptions, latestAnswer, runCommand, startBotHarness } from './harness.js';

describe('Discord commands, end to end', () => {
  let bot: BotHarness;
  let alice: APIUser;
  let owner: APIUser;
  const channel = () => bot.discord.guild.textChannelId;

  const run = (user: APIUser, name: string, options: CommandOptions = {}, subcommand?: string, channelId = channel()) =>
    runCommand(bot, user, name, options, subcommand, channelId);
  const lastAnswer = latestAnswer;

  beforeAll(async () => {
    bot = await startBotHarness({
      script: { reply: 'Noted.' },
      environment: { DISCORD_COMMANDS_PER_MINUTE: '200', DISCORD_MESSAGES_PER_MINUTE: '3' },
      owners: ['owner'],
    });
    alice = bot.discord.createUser({ username: 'alice' });
    owner = bot.users.owner!;
  });
  afterAll(async () => {
    await bot.close();
  });

  it('/character edit, remember, memories and forget shape the user’s character', async () => {
    const edited = await run(alice, 'character', { name: 'Captain Alice', description: 'Sails the seven seas.', public: true }, 'edit');
    expect(edited.text).toContain('Captain Alice');
    expect(edited.text).toContain('Sails the seven seas.');
    await run(alice, 'character', { fact: 'Has a parrot named Polly' }, 'remember');
    await run(alice, 'character', { fact: 'Fears the kraken' }, 'remember');
    const listed = await run(alice, 'character', {}, 'memories');
    expect(listed.text).toContain('1. Has a parrot named Polly');
    expect(listed.text).toContain('2. Fears the kraken');
    const choices = await bot.discord.sendAutocomplete({ user: alice, channelId: channel(), name: 'character', subcommand: 'forget', options: { memory: 'kraken' }, focused: 'memory' });
    expect(choices.map((choice) => choice.name)).toEqual(['Fears the kraken']);
    await run(alice, 'character', { memory: String(choices[0]!.value) }, 'forget');
    expect((await run(alice, 'character', {}, 'memories')).text).not.toContain('kraken');
    const shown = await run(alice, 'character', {}, 'show');
    expect(shown.text).toContain('Public character');
  });

  it('lets others find a public character, and refuses changes by non-owners with a clear message', async () => {
    const bob = bot.discord.createUser({ username: 'bob' });
    const choices = await bot.discord.sendAutocomplete({ user: bob, channelId: channel(), name: 'chat', options: { character: 'capt' }, focused: 'character' });
    expect(choices.map((choice) => choice.name)).toEqual(['Captain Alice']);
    const shown = await run(bob, 'character', { character: String(choices[0]!.value) }, 'show');
    expect(shown.text).toContain('Captain Alice');
    const missing = await run(bob, 'character', { character: 'Nobody Such' }, 'show');
    expect(missing.text).toContain('No character called');
  });

  it('/character avatar replaces the picture from an attachment', async () => {
    const image = new PNG({ width: 6, height: 6 });
    image.data.fill(120);
    const bytes = PNG.sync.write(image);
    const sent = bot.discord.sendSlashCommand({
      user: alice,
      channelId: channel(),
      name: 'character',
      subcommand: 'avatar',
      options: { image: { filename: 'me.png', contentType: 'image/png', bytes } },
    });
    await sent.response;
    await bot.discord.waitFor(() => lastAnswer(bot, sent.interactionId).includes('New picture saved.'));
    const notImage = bot.discord.sendSlashCommand({
      user: alice,
      channelId: channel(),
      name: 'character',
      subcommand: 'avatar',
      options: { image: { filename: 'notes.txt', contentType: 'text/plain', bytes: Buffer.from('hello') } },
    });
    await notImage.response;
    await bot.discord.waitFor(() => lastAnswer(bot, notImage.interactionId).includes('must be a PNG, JPEG or WebP image'));
  });

  it('/account shows the account and its button sends a working new API key privately', async () => {
    const account = await run(alice, 'account');
    expect(account.text).toContain('alice');
    expect(account.text).toContain('100 credits');
    const message = bot.discord.interactionResponses(account.id).find((record) => record.messageId)!.messageId!;
    const pressed = bot.discord.sendButton({ user: alice, message, customId: 'account:new-key' });
    await pressed.response;
    const keyText = await bot.discord.waitFor(() => {
      const text = lastAnswer(bot, pressed.interactionId);
      return text.includes('lk_') && text;
    });
    const key = /lk_[A-Za-z0-9_-]+/.exec(keyText)![0];
    const me = await fetch(`${bot.url()}/api/v0/accounts`, { headers: { authorization: `Bearer ${key}` } });
    expect(me.status).toBe(200);
    expect(((await me.json()) as { accounts: { username: string }[] }).accounts[0]!.username).toBe('alice');
  });

  it('/admin credit works for owners only, and /balance shows the result', async () => {
    const refused = await run(alice, 'admin', { user: alice.id, amount: 50, reason: 'please' }, 'credit');
    expect(refused.text).toContain('Only the bot owners');
    const credited = await run(owner, 'admin', { user: alice.id, amount: 50, reason: 'contest prize' }, 'credit');
    expect(credited.text).toContain('balance is 150');
    expect((await run(alice, 'balance')).text).toContain('**150** credits');
  });

  it('/conversations lists the user’s conversations with links to their threads', async () => {
    await run(alice, 'chat', { character: 'Captain Alice' });
    const thread = bot.discord.threads.at(-1)!;
    const listed = await run(alice, 'conversations');
    expect(listed.text).toContain(`<#${thread.id}>`);
    expect(listed.text).toContain('Captain Alice');
  });

  it('names the permissions it lacks instead of failing silently', async () => {
    const denied = bot.discord.sendSlashCommand({
      user: alice,
      channelId: channel(),
      name: 'chat',
      options: { character: 'Captain Alice' },
      appPermissions: (PermissionFlagsBits.ViewChannel | PermissionFlagsBits.SendMessages).toString(),
    });
    await denied.response;
    const text = await bot.discord.waitFor(() => {
      const answer = lastAnswer(bot, denied.interactionId);
      return answer.includes('I need the') && answer;
    });
    expect(text).toContain('CreatePublicThreads');
    expect(text).toContain(`<#${channel()}>`);
  });

  it('tells a user who writes too fast to slow down, once', async () => {
    await run(alice, 'chat', { character: 'Captain Alice' });
    const thread = bot.discord.threads.at(-1)!;
    for (let count = 0; count < 5; count++) bot.discord.sendMessage({ channelId: thread.id, author: alice, content: `message ${count}` });
    const notices = await bot.discord.waitFor(() => {
      const found = bot.botTexts(thread.id).filter((text) => text.includes('Slow down'));
      return found.length > 0 && found;
    });
    expect(notices[0]).toContain('at most 3 a minute');
    await bot.discord.waitFor(() => bot.botTexts(thread.id).filter((text) => text === 'Noted.').length === 3, 10_000);
    expect(bot.botTexts(thread.id).filter((text) => text.includes('Slow down'))).toHaveLength(1);
  });

  it('sends image attachments to the character as images', async () => {
    const carol = bot.discord.createUser({ username: 'carol' });
    await run(carol, 'chat', { character: 'carol' });
    const thread = bot.discord.threads.at(-1)!;
    const image = new PNG({ width: 3, height: 3 });
    image.data.fill(200);
    const bytes = PNG.sync.write(image);
    bot.discord.sendMessage({ channelId: thread.id, author: carol, content: 'What do you see?', attachments: [{ filename: 'photo.png', contentType: 'image/png', bytes }] });
    await bot.discord.waitFor(() => bot.botTexts(thread.id).includes('Noted.'), 10_000);
    const sent = JSON.stringify(bot.llm.requests.at(-1)!.body.messages!.at(-1));
    // Re-encoded at ingest (downscaled when larger than 1024 pixels): the same 3×3 picture.
    const url = /data:image\/png;base64,([A-Za-z0-9+/=]+)/.exec(sent)?.[1];
    expect(PNG.sync.read(Buffer.from(url ?? '', 'base64'))).toMatchObject({ width: 3, height: 3 });
    expect(sent).toContain('What do you see?');
  });

  it('reconnects after the gateway drops and keeps answering', async () => {
    const dave = bot.discord.createUser({ username: 'dave' });
    await run(dave, 'chat', { character: 'dave' });
    const thread = bot.discord.threads.at(-1)!;
    const before = bot.discord.gatewayStats.connections;
    bot.discord.dropGatewayConnections();
    await bot.discord.waitFor(() => bot.discord.gatewayStats.connections > before && bot.discord.gatewayStats.openConnections > 0, 15_000);
    bot.discord.sendMessage({ channelId: thread.id, author: dave, content: 'still listening?' });
    await bot.discord.waitFor(() => bot.botTexts(thread.id).includes('Noted.'), 15_000);
  });
});
