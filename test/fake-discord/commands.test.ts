/**
 * Command registration through discord.js: bulk overwrite of global and guild commands, ids kept
 * across overwrites as Discord keeps them, and Discord's validation of definitions.
 */
import { ApplicationCommandOptionType, DiscordAPIError } from 'discord.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWithClient } from './harness.js';

describe('fake Discord command registration', () => {
  let setup: Awaited<ReturnType<typeof startWithClient>>;

  beforeAll(async () => {
    setup = await startWithClient();
  });
  afterAll(() => setup.stop());

  it('stores a global bulk overwrite and answers it with ids', async () => {
    const { client, fake } = setup;
    const registered = await client.application!.commands.set([
      { name: 'chat', description: 'Talk to a character', options: [{ name: 'text', description: 'What to say', type: ApplicationCommandOptionType.String, required: true }] },
      { name: 'character', description: 'Manage characters', options: [{ name: 'create', description: 'Create one', type: ApplicationCommandOptionType.Subcommand }] },
    ]);
    expect([...registered.values()].map((command) => command.name).sort()).toEqual(['character', 'chat']);
    expect(fake.commands.global.map((command) => command.name)).toEqual(['chat', 'character']);
    expect(fake.commands.global.every((command) => /^\d{17,20}$/.test(command.id) && command.application_id === fake.applicationId)).toBe(true);
    const fetched = await client.application!.commands.fetch();
    expect(fetched.size).toBe(2);
  });

  it('keeps a command’s id when a later overwrite keeps its name', async () => {
    const { client, fake } = setup;
    const before = fake.commands.global.find((command) => command.name === 'chat')?.id;
    await client.application!.commands.set([{ name: 'chat', description: 'Talk, version two' }, { name: 'voice', description: 'Speak' }]);
    expect(fake.commands.global.find((command) => command.name === 'chat')?.id).toBe(before);
    expect(fake.commands.global.map((command) => command.name)).toEqual(['chat', 'voice']);
  });

  it('stores guild commands separately', async () => {
    const { client, fake } = setup;
    const guild = client.guilds.cache.get(fake.guild.id)!;
    await guild.commands.set([{ name: 'admin', description: 'Guild only' }]);
    expect(fake.commands.guilds[fake.guild.id]?.map((command) => [command.name, command.guild_id])).toEqual([['admin', fake.guild.id]]);
    expect(fake.commands.global.map((command) => command.name)).toEqual(['chat', 'voice']);
  });

  it('rejects invalid definitions with 50035', async () => {
    const { client } = setup;
    const error = await client.application!.commands
      .set([{ name: 'Bad Name', description: 'x' }, { name: 'ok', description: '' }])
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(DiscordAPIError);
    expect((error as DiscordAPIError).code).toBe(50035);
    expect((error as DiscordAPIError).rawError).toMatchObject({
      errors: { '0': { name: { _errors: [{ code: 'APPLICATION_COMMAND_INVALID_NAME' }] } }, '1': { description: { _errors: [{ code: 'BASE_TYPE_BAD_LENGTH' }] } } },
    });
  });
});
