import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { APIUser } from 'discord-api-types/v10';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commands } from '../../commands/index.js';
import { type BotHarness, startBotHarness } from './harness.js';

const commandsDirectory = path.resolve(import.meta.dirname, '../../commands');

describe('the router owns deferral', () => {
  let bot: BotHarness;
  let alice: APIUser;
  beforeAll(async () => {
    bot = await startBotHarness({ script: { reply: 'Hello.' }, environment: { DISCORD_COMMANDS_PER_MINUTE: '200' } });
    alice = bot.discord.createUser({ username: 'alice' });
  });
  afterAll(async () => bot.close());

  it('no command defers by itself: each declares its deferral instead', async () => {
    const files = (await readdir(commandsDirectory)).filter((name) => name.endsWith('.ts'));
    for (const file of files) {
      const source = await readFile(path.join(commandsDirectory, file), 'utf8');
      expect({ file, defers: /deferReply|deferOnce/.test(source) }).toEqual({ file, defers: false });
    }
    for (const command of commands) {
      if (typeof command.defer !== 'object') continue;
      const subcommands = (command.data.options ?? []).map((option) => option.name);
      for (const name of Object.keys(command.defer)) expect(subcommands).toContain(name);
    }
  });

  it('defers a slow subcommand once, privately, before it runs, and the answer edits that deferral', async () => {
    const image = new PNG({ width: 6, height: 6 });
    image.data.fill(200);
    const sent = bot.discord.sendSlashCommand({
      user: alice,
      channelId: bot.discord.guild.textChannelId,
      name: 'character',
      subcommand: 'avatar',
      options: { image: { filename: 'me.png', contentType: 'image/png', bytes: PNG.sync.write(image) } },
    });
    await sent.response;
    await bot.discord.waitFor(() => bot.discord.interactionResponses(sent.interactionId).some((record) => record.kind === 'original-edit'));
    const records = bot.discord.interactionResponses(sent.interactionId);
    const callbacks = records.filter((record) => record.kind === 'callback');
    expect(callbacks).toHaveLength(1);
    expect(callbacks[0]).toMatchObject({ callbackType: 5, body: { flags: 64 } });
    expect(JSON.stringify(records.at(-1)?.body)).toContain('New picture saved.');
  });

  it('answers a quick subcommand with a plain reply, no deferral', async () => {
    const sent = bot.discord.sendSlashCommand({ user: alice, channelId: bot.discord.guild.textChannelId, name: 'character', subcommand: 'show', options: {} });
    await sent.response;
    const callbacks = bot.discord.interactionResponses(sent.interactionId).filter((record) => record.kind === 'callback');
    expect(callbacks.map((record) => record.callbackType)).toEqual([4]);
  });
});
