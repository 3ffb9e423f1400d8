import type { APIUser } from 'discord-api-types/v10';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BotHarness, type CommandOptions, runCommand, startBotHarness } from './harness.js';

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
});
