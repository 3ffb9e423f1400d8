import type { APIUser } from 'discord-api-types/v10';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCard } from '../../src/cards/index.js';
import { v2Png } from '../cards/card-fixtures.js';
import { type BotHarness, type CommandOptions, latestAnswer, runCommand, startBotHarness } from './harness.js';

/** `/character create` and `delete`, and a `character:` option on the subcommands that shape one. */
describe('many characters on Discord', () => {
  let bot: BotHarness;
  let alice: APIUser;
  let bob: APIUser;
  const run = (user: APIUser, options: CommandOptions, subcommand: string) => runCommand(bot, user, 'character', options, subcommand);
  const pick = (user: APIUser, command: string, typed: string, subcommand?: string) =>
    bot.discord.sendAutocomplete({ user, channelId: bot.discord.guild.textChannelId, name: command, options: { character: typed }, focused: 'character', ...(subcommand ? { subcommand } : {}) });

  beforeAll(async () => {
    bot = await startBotHarness({ script: { reply: 'Noted.' }, environment: { DISCORD_COMMANDS_PER_MINUTE: '200', MAX_CHARACTERS_PER_ACCOUNT: '3' } });
    alice = bot.discord.createUser({ username: 'alice' });
    bob = bot.discord.createUser({ username: 'bob' });
  });
  afterAll(async () => {
    await bot.close();
  });

  it('makes characters, offers the caller own first then public ones, and shapes the one chosen', async () => {
    await run(bob, { name: 'Narrator Bob', public: true }, 'create');
    const made = await run(alice, { name: 'Narrator', description: 'Tells the story.', greeting: 'Once upon a time…' }, 'create');
    expect(made.text).toContain('Made **Narrator**');
    await run(alice, { name: 'Nameless', public: false }, 'create');
    const full = await run(alice, { name: 'One too many' }, 'create');
    expect(full.text).toContain('at most 3 characters');

    const choices = await pick(alice, 'chat', 'na');
    expect(choices.map((choice) => choice.name)).toEqual(['Nameless (yours)', 'Narrator (yours)', 'Narrator Bob']);
    const narrator = String(choices[1]!.value);

    const edited = await run(alice, { character: narrator, personality: 'Dry wit.' }, 'edit');
    expect(edited.text).toContain('Dry wit.');
    await run(alice, { character: narrator, fact: 'Knows every ending' }, 'remember');
    expect((await run(alice, { character: narrator }, 'memories')).text).toContain('Knows every ending');
    expect((await run(alice, {}, 'memories')).text).toContain('remembers nothing yet');
    const refused = await run(bob, { character: narrator, fact: 'Mine now' }, 'remember');
    expect(refused.text).toMatch(/No character called|not found|does not exist/i);
  });

  it('deletes one of yours only when confirmed, never your own character', async () => {
    const narrator = String((await pick(alice, 'character', 'narr', 'delete')).find((choice) => choice.name === 'Narrator (yours)')!.value);
    const unconfirmed = await run(alice, { character: narrator, confirm: false }, 'delete');
    expect(unconfirmed.text).toContain('Nothing deleted');
    expect((await run(alice, { character: narrator }, 'show')).text).toContain('Narrator');

    const own = String((await pick(alice, 'character', 'alice', 'delete')).find((choice) => choice.name === 'alice (yours)')!.value);
    expect((await run(alice, { character: own, confirm: true }, 'delete')).text).toContain('deleted only with the account');
    expect((await run(bob, { character: narrator, confirm: true }, 'delete')).text).not.toContain('Deleted');

    expect((await run(alice, { character: narrator, confirm: true }, 'delete')).text).toContain('Deleted **Narrator**');
    expect((await run(alice, { character: narrator }, 'show')).text).toContain('was deleted by its owner');
    expect((await pick(alice, 'chat', 'narr')).map((choice) => choice.name)).toEqual(['Narrator Bob']);
    // Its place is free again.
    expect((await run(alice, { name: 'Understudy' }, 'create')).text).toContain('Made **Understudy**');
  });

  it('imports a card from an attachment and exports a character as a card file', async () => {
    const carol = bot.discord.createUser({ username: 'carol' });
    const sent = bot.discord.sendSlashCommand({
      user: carol,
      channelId: bot.discord.guild.textChannelId,
      name: 'character',
      subcommand: 'import',
      options: { file: { filename: 'bram.png', contentType: 'image/png', bytes: Buffer.from(v2Png()) } },
    });
    await sent.response;
    await bot.discord.waitFor(() => latestAnswer(bot, sent.interactionId).includes('Made **Bram** from the card'));
    const notCard = bot.discord.sendSlashCommand({
      user: carol,
      channelId: bot.discord.guild.textChannelId,
      name: 'character',
      subcommand: 'import',
      options: { file: { filename: 'notes.txt', contentType: 'text/plain', bytes: Buffer.from('hello') } },
    });
    await notCard.response;
    await bot.discord.waitFor(() => latestAnswer(bot, notCard.interactionId).includes('is not a character card'));

    const bram = String((await pick(carol, 'character', 'bram', 'export'))[0]!.value);
    const exported = await runCommand(bot, carol, 'character', { character: bram, format: 'png' }, 'export');
    expect(exported.text).toContain('**Bram** as a card (png)');
    const messageId = bot.discord.interactionResponses(exported.id).find((record) => record.messageId)!.messageId!;
    const attachment = bot.discord.message(messageId)!.attachments[0]!;
    expect(attachment.filename).toBe('Bram.png');
    const card = await readCard(new Uint8Array(await (await fetch(attachment.url)).arrayBuffer()), 'image/png');
    expect(card).toMatchObject({ name: 'Bram', specVersion: '3.0', definition: { scenario: 'A storm.', alternateGreetings: ['Another ship lost.', 'Tea?'] } });
    expect(card.lorebook?.entries).toHaveLength(2);
  });

  it('shows a card with a description longer than an embed holds, and deletes only the one named exactly', async () => {
    const dave = bot.discord.createUser({ username: 'dave' });
    const card = JSON.stringify({ name: 'Verbose', description: `${'A very long description. '.repeat(400)}The end.`, personality: 'p', scenario: '', first_mes: '', mes_example: '' });
    const sent = bot.discord.sendSlashCommand({
      user: dave,
      channelId: bot.discord.guild.textChannelId,
      name: 'character',
      subcommand: 'import',
      options: { file: { filename: 'verbose.json', contentType: 'application/json', bytes: Buffer.from(card) } },
    });
    await sent.response;
    const made = await bot.discord.waitFor(() => {
      const text = latestAnswer(bot, sent.interactionId);
      return (text.includes('Made **Verbose**') || text.includes('went wrong')) && text;
    });
    expect(made).toContain('Made **Verbose**');
    expect(made).toContain('…');

    const partial = await runCommand(bot, dave, 'character', { character: 'Verb', confirm: true }, 'delete');
    expect(partial.text).toContain('No character called \\"Verb\\" to delete');
    expect((await runCommand(bot, dave, 'character', { character: 'verbose', confirm: true }, 'delete')).text).toContain('Deleted **Verbose**');
  });
});
