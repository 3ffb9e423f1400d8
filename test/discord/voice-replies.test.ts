import type { APIChannel, APIUser } from 'discord-api-types/v10';
import { PermissionFlagsBits } from 'discord-api-types/v10';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_BOT_PERMISSIONS } from '../fakes/discord/permissions.js';
import { type BotHarness, startBotHarness } from './harness.js';

describe('/voice replies, through discord.js and the fake Discord', () => {
  let bot: BotHarness;
  let alice: APIUser;
  let thread: APIChannel;

  /** Sends `/voice replies` (switching, or `on` as given) and waits for the answer's text. */
  async function replies(user: APIUser, channelId: string, on?: boolean): Promise<string> {
    const sent = bot.discord.sendSlashCommand({ user, channelId, name: 'voice', subcommand: 'replies', ...(on === undefined ? {} : { options: { on } }) });
    await sent.response;
    return bot.discord.waitFor(() => {
      const text = bot.discord
        .interactionResponses(sent.interactionId)
        .map((record) => JSON.stringify(record.body ?? ''))
        .join(' ');
      return /voice messages|text again|Use \/voice replies|Only the people/.test(text) && text;
    });
  }

  beforeAll(async () => {
    bot = await startBotHarness({ script: { reply: 'Hello back.' } });
    alice = bot.discord.createUser({ username: 'alice' });
    const opened = bot.discord.sendSlashCommand({ user: alice, channelId: bot.discord.guild.textChannelId, name: 'chat', options: { character: 'alice' } });
    await opened.response;
    thread = await bot.discord.waitFor(() => bot.discord.threads.find((candidate) => candidate.name?.startsWith('alice')));
    await bot.discord.waitFor(() => JSON.stringify(bot.discord.interactionResponses(opened.interactionId)).includes(`<#${thread.id}>`));
  });
  afterAll(async () => {
    await bot.close();
  });

  it('switches voice-message replies in a conversation thread, kept across a restart, saying what is missing', async () => {
    const first = await replies(alice, thread.id);
    expect(first).toContain('alice will answer your voice messages in this thread with voice messages.');
    expect(first).toContain('alice has no voice yet; its owner can give it one with /character voice.');
    expect(first).toContain('I also need the Send Voice Messages permission in this channel.');

    expect(await replies(alice, thread.id)).toContain('alice answers voice messages in this thread in text again.');
    expect(await replies(alice, thread.id, false)).toContain('in text again');

    const voiced = bot.discord.sendSlashCommand({ user: alice, channelId: bot.discord.guild.textChannelId, name: 'character', subcommand: 'voice', options: { preset: 'en-us+f3' } });
    await voiced.response;
    await bot.discord.waitFor(() => JSON.stringify(bot.discord.interactionResponses(voiced.interactionId)).includes('now speaks'), 10_000);
    bot.discord.setBotPermissions(bot.discord.guild.textChannelId, DEFAULT_BOT_PERMISSIONS | PermissionFlagsBits.SendVoiceMessages);
    const on = await replies(alice, thread.id, true);
    expect(on).toContain('alice will answer your voice messages in this thread with voice messages.');
    expect(on).not.toContain('no voice');
    expect(on).not.toContain('permission');

    // The switch is in the database: after a restart, switching turns it off.
    await bot.restart();
    expect(await replies(alice, thread.id)).toContain('in text again');
  });

  it("refuses someone who does not take part in the thread's conversation, and leaves the switch as it was", async () => {
    const mallory = bot.discord.createUser({ username: 'mallory' });
    expect(await replies(alice, thread.id, false)).toContain('in text again');
    expect(await replies(mallory, thread.id, true)).toContain("Only the people taking part in this thread's conversation can switch its voice replies.");
    // Still off: switching turns it on.
    expect(await replies(alice, thread.id)).toContain('alice will answer your voice messages in this thread with voice messages.');
  });

  it('works in DMs, on the conversation the DM messages go to', async () => {
    const bob = bot.discord.createUser({ username: 'bob' });
    const dm = bot.discord.openDm(bob);
    expect(await replies(bob, dm, true)).toContain('bob will answer your voice messages in our DMs with voice messages. bob has no voice yet');
    bot.discord.sendMessage({ channelId: dm, author: bob, content: 'Hi there' });
    await bot.discord.waitFor(() => bot.botTexts(dm).includes('Hello back.'), 10_000);
    // The DM message went to the conversation the switch was set on: switching now turns it off.
    expect(await replies(bob, dm)).toContain('bob answers voice messages in our DMs in text again.');
    expect(bot.discord.messages(dm).filter((message) => message.content.includes('⚠️'))).toHaveLength(0);
  });

  it('refuses outside a conversation thread or DM, and keeps the voice-channel subcommands to servers', async () => {
    expect(await replies(alice, bot.discord.guild.textChannelId)).toContain('Use /voice replies inside a conversation thread (start one with /chat) or in a DM with me.');
    const dm = bot.discord.openDm(alice);
    const stop = bot.discord.sendSlashCommand({ user: alice, channelId: dm, name: 'voice', subcommand: 'stop' });
    await stop.response;
    await bot.discord.waitFor(() => JSON.stringify(bot.discord.interactionResponses(stop.interactionId)).includes('Voice works in servers, not in DMs.'));
  });
});
