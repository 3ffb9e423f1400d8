import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PermissionFlagsBits } from 'discord-api-types/v10';
import type { APIChannel, APIUser } from 'discord-api-types/v10';
import { encodeVoiceMessage } from '../../src/audio/voice-message.js';
import { type BotHarness, startBotHarness } from './harness.js';

type Body = { messages?: Array<{ role: string; content: unknown }> };

/** The fake engine answers as whoever the system prompt says it is, echoing the newest line. */
function asCharacter(body: Body) {
  const system = String(body.messages?.[0]?.content ?? '');
  const name = /^You are ([^.]+)\./.exec(system)?.[1] ?? 'nobody';
  const last = body.messages?.at(-1)?.content;
  const line = typeof last === 'string' ? last.split('\n').at(-1) : 'something';
  return { reply: `[${name}] ${line}`, tokensPerSecond: 80 };
}

describe('characters in server channels and scenes, through discord.js and the fake Discord', () => {
  let bot: BotHarness;
  let alice: APIUser;
  let bob: APIUser;
  let owner: APIUser;

  /** Runs a slash command and waits for its answer's text. */
  async function command(user: APIUser, channelId: string, name: string, spec: { group?: string; subcommand?: string; options?: Record<string, string | boolean> }): Promise<string> {
    const sent = bot.discord.sendSlashCommand({ user, channelId, name, ...(spec.group ? { subcommandGroup: spec.group } : {}), ...(spec.subcommand ? { subcommand: spec.subcommand } : {}), options: spec.options ?? {} });
    await sent.response;
    return bot.discord.waitFor(() => {
      const text = bot.discord.interactionResponses(sent.interactionId).map((record) => JSON.stringify(record.body ?? '')).join('\n');
      return /"content":"[^"]/.test(text) && text;
    });
  }

  /**
   * The characters' replies in a channel (bot or persona messages in the fake engine's `[Name] …`
   * form), oldest first, without the `**Name:** ` the bot puts before a reply it posts itself
   * where several characters speak.
   */
  const texts = (channelId: string) =>
    bot.discord
      .messages(channelId)
      .filter((message) => message.author.bot)
      .map((message) => message.content.replace(/^\*\*[^*]+:\*\* /, ''))
      .filter((content) => content.startsWith('['));

  async function nameCharacter(user: APIUser, name: string): Promise<void> {
    expect(await command(user, bot.discord.guild.textChannelId, 'character', { subcommand: 'edit', options: { name, public: true } })).toContain(name);
  }

  async function openThread(user: APIUser): Promise<APIChannel> {
    const before = bot.discord.threads.length;
    const choices = await bot.discord.sendAutocomplete({ user, channelId: bot.discord.guild.textChannelId, name: 'chat', options: { character: '' }, focused: 'character' });
    const own = choices.find((choice) => choice.name.endsWith('(yours)'))!;
    const sent = bot.discord.sendSlashCommand({ user, channelId: bot.discord.guild.textChannelId, name: 'chat', options: { character: String(own.value) } });
    const thread = await bot.discord.waitFor((fake) => fake.threads.length > before && fake.threads.at(-1));
    // The thread is linked to its conversation before /chat says where it is.
    await bot.discord.waitFor(() => JSON.stringify(bot.discord.interactionResponses(sent.interactionId)).includes(`<#${thread.id}>`));
    return thread;
  }

  beforeAll(async () => {
    bot = await startBotHarness({ script: asCharacter });
    alice = bot.discord.createUser({ username: 'alice' });
    bob = bot.discord.createUser({ username: 'bob' });
    // The guild's owner holds every permission, Manage Server included.
    owner = { id: bot.discord.guild.ownerId } as APIUser;
    await nameCharacter(alice, 'Ada');
    await nameCharacter(bob, 'Bo');
  });
  beforeEach(() => bot.llm.setScript(asCharacter));
  afterAll(async () => {
    await bot.close();
  });

  it('lets only a server manager choose the characters of a channel, and lists them', async () => {
    const channel = bot.discord.createTextChannel(bot.discord.guild.id, 'managed').id;
    expect(await command(alice, channel, 'channel', { group: 'characters', subcommand: 'add', options: { character: 'Ada' } })).toContain('Manage Server');
    const added = await command(owner, channel, 'channel', { group: 'characters', subcommand: 'add', options: { character: 'Ada' } });
    expect(added).toContain('**Ada** may now speak');
    // Without Manage Webhooks the manager is told characters answer as the bot for now.
    expect(added).toContain('Manage Webhooks');
    await command(owner, channel, 'channel', { group: 'characters', subcommand: 'add', options: { character: 'Bo' } });
    const listed = await command(owner, channel, 'channel', { group: 'characters', subcommand: 'list' });
    expect(listed).toContain(`<#${channel}>: **Ada**, **Bo**`);
    expect(await command(owner, channel, 'channel', { group: 'characters', subcommand: 'remove', options: { character: 'Bo' } })).toContain('no longer speaks');
    expect(await command(owner, channel, 'channel', { group: 'characters', subcommand: 'list' })).toContain(`<#${channel}>: **Ada**`);
  });

  it('answers by name, by mention with a name and by reply, in enabled channels only, and never an unaddressed message', async () => {
    const channel = bot.discord.createTextChannel(bot.discord.guild.id, 'tavern').id;
    const elsewhere = bot.discord.createTextChannel(bot.discord.guild.id, 'quiet').id;
    await command(owner, channel, 'channel', { group: 'characters', subcommand: 'add', options: { character: 'Ada' } });
    await command(owner, channel, 'channel', { group: 'characters', subcommand: 'add', options: { character: 'Bo' } });

    bot.discord.sendMessage({ channelId: elsewhere, author: alice, content: 'Ada, are you here?' });
    bot.discord.sendMessage({ channelId: channel, author: alice, content: 'just chatting with people' });
    bot.discord.sendMessage({ channelId: channel, author: alice, content: 'Ada, how are you?' });
    await bot.discord.waitFor(() => texts(channel).includes('[Ada] alice: Ada, how are you?') || texts(channel).includes('[Ada] Ada, how are you?'), 10_000);
    // The message before addressed nobody and the channel does not listen: not kept, not answered.
    expect(JSON.stringify(bot.llm.requests.at(-1)!.body.messages)).not.toContain('just chatting');
    expect(texts(channel)).toHaveLength(1);

    bot.discord.sendMessage({ channelId: channel, author: bob, content: `<@${bot.discord.botUser.id}> what would Bo say?` });
    await bot.discord.waitFor(() => texts(channel).some((text) => text.startsWith('[Bo]')), 10_000);
    expect(texts(channel).find((text) => text.startsWith('[Bo]'))).not.toContain(bot.discord.botUser.id);

    const adaLine = bot.discord.messages(channel).find((message) => message.author.bot && message.content.startsWith('**Ada:** [Ada]'))!;
    bot.discord.sendMessage({ channelId: channel, author: bob, content: 'really?', replyTo: adaLine.id });
    await bot.discord.waitFor(() => texts(channel).filter((text) => text.startsWith('[Ada]')).length === 2, 10_000);
    expect(texts(elsewhere)).toEqual([]);
  });

  it('lets a second manager bring their own private character into a channel another opened, and takes it out of the scene when removed', async () => {
    const channel = bot.discord.createTextChannel(bot.discord.guild.id, 'two-managers').id;
    await command(owner, channel, 'channel', { group: 'characters', subcommand: 'add', options: { character: 'Ada' } });
    const carol = bot.discord.createUser({ username: 'carol' });
    bot.discord.grantMemberPermissions(carol.id, PermissionFlagsBits.ManageGuild);
    // Carol's character stays private.
    expect(await command(carol, bot.discord.guild.textChannelId, 'character', { subcommand: 'edit', options: { name: 'Cy' } })).toContain('Cy');
    expect(await command(carol, channel, 'channel', { group: 'characters', subcommand: 'add', options: { character: 'Cy' } })).toContain('**Cy** may now speak');
    bot.discord.sendMessage({ channelId: channel, author: alice, content: 'Cy, hello there' });
    await bot.discord.waitFor(() => texts(channel).some((text) => text.startsWith('[Cy]')), 10_000);
    bot.discord.sendMessage({ channelId: channel, author: alice, content: 'Ada, who else is here?' });
    await bot.discord.waitFor(() => texts(channel).some((text) => text.startsWith('[Ada]')), 10_000);
    const adaSystem = () => String(bot.llm.requests.at(-1)!.body.messages?.[0]?.content);
    expect(adaSystem()).toContain('Also in this scene: Cy');

    expect(await command(carol, channel, 'channel', { group: 'characters', subcommand: 'remove', options: { character: 'Cy' } })).toContain('no longer speaks');
    bot.discord.sendMessage({ channelId: channel, author: alice, content: 'Ada, and now?' });
    await bot.discord.waitFor(() => texts(channel).filter((text) => text.startsWith('[Ada]')).length === 2, 10_000);
    expect(adaSystem()).toMatch(/^You are Ada\./);
    expect(adaSystem()).not.toContain('Also in this scene');
    expect(texts(channel).filter((text) => text.startsWith('[Cy]'))).toHaveLength(1);
  });

  it('keeps unaddressed messages as context, unanswered, while the channel listens', async () => {
    const channel = bot.discord.createTextChannel(bot.discord.guild.id, 'listening').id;
    await command(owner, channel, 'channel', { group: 'characters', subcommand: 'add', options: { character: 'Ada' } });
    expect(await command(owner, channel, 'channel', { subcommand: 'listen', options: { on: true } })).toContain('kept as context');
    bot.discord.sendMessage({ channelId: channel, author: bob, content: 'the password is swordfish' });
    bot.discord.sendMessage({ channelId: channel, author: alice, content: 'Ada: what did bob say?' });
    await bot.discord.waitFor(() => texts(channel).length === 1 && texts(channel)[0]!.startsWith('[Ada]'), 10_000);
    expect(JSON.stringify(bot.llm.requests.at(-1)!.body.messages)).toContain('swordfish');
    expect(texts(channel)).toHaveLength(1);
  });

  it('posts as the character through a webhook once allowed, and a reply to the persona is answered by it', async () => {
    const channel = bot.discord.createTextChannel(bot.discord.guild.id, 'stage').id;
    bot.discord.setManageWebhooks(channel, true);
    await command(owner, channel, 'channel', { group: 'characters', subcommand: 'add', options: { character: 'Bo' } });
    bot.discord.sendMessage({ channelId: channel, author: alice, content: 'Bo, sing' });
    // Finished once it carries its 🔄 button.
    const persona = await bot.discord.waitFor(
      () => bot.discord.messages(channel).find((message) => message.webhook_id !== undefined && message.content.startsWith('[Bo]') && (message.components?.length ?? 0) > 0),
      10_000,
    );
    expect(persona.author.username).toBe('Bo');
    bot.discord.sendMessage({ channelId: channel, author: alice, content: 'again', replyTo: persona.id });
    await bot.discord.waitFor(() => bot.discord.messages(channel).filter((message) => message.webhook_id !== undefined && message.content.startsWith('[Bo]')).length === 2, 10_000);
  });

  it('puts two characters in one thread: each answers when addressed, with its own memories, seeing the other’s lines by name', async () => {
    expect(await command(alice, bot.discord.guild.textChannelId, 'character', { subcommand: 'remember', options: { fact: 'Ada keeps a blue notebook' } })).toBeTruthy();
    expect(await command(bob, bot.discord.guild.textChannelId, 'character', { subcommand: 'remember', options: { fact: 'Bo fears the sea' } })).toBeTruthy();
    const thread = await openThread(alice);
    expect(await command(alice, thread.id, 'scene', { subcommand: 'add', options: { character: 'Bo' } })).toContain('**Bo** joins');

    bot.discord.sendMessage({ channelId: thread.id, author: alice, content: 'hello both' });
    await bot.discord.waitFor(() => texts(thread.id).includes('[Ada] alice: hello both'), 10_000);
    bot.discord.sendMessage({ channelId: thread.id, author: alice, content: 'Bo, what scares you?' });
    await bot.discord.waitFor(() => texts(thread.id).includes('[Bo] alice: Bo, what scares you?'), 10_000);
    // Without Manage Webhooks the bot posts for both, so each reply says who speaks.
    const posted = bot.discord.messages(thread.id).map((message) => message.content);
    expect(posted).toContain('**Bo:** [Bo] alice: Bo, what scares you?');
    expect(posted).toContain('**Ada:** [Ada] alice: hello both');
    const boPrompt = bot.llm.requests.at(-1)!.body.messages!;
    expect(String(boPrompt[0]!.content)).toContain('Bo fears the sea');
    expect(String(boPrompt[0]!.content)).not.toContain('blue notebook');
    // Ada's line reaches Bo as someone else's words, under her name.
    expect(JSON.stringify(boPrompt)).toContain('Ada: [Ada] alice: hello both');

    const sent = bot.discord.sendSlashCommand({ user: alice, channelId: thread.id, name: 'scene', subcommand: 'next', options: { character: 'Ada' } });
    await sent.response;
    await bot.discord.waitFor(() => texts(thread.id).filter((text) => text.startsWith('[Ada]')).length === 2, 10_000);
    const adaPrompt = bot.llm.requests.at(-1)!.body.messages!;
    expect(String(adaPrompt[0]!.content)).toContain('blue notebook');
    expect(String(adaPrompt[0]!.content)).not.toContain('fears the sea');
    expect(JSON.stringify(adaPrompt)).toContain('Bo: [Bo] alice: Bo, what scares you?');
  });

  it('writes a scene’s latest reply again with its own writer when 🔄 is pressed under it, and refuses under an earlier one; /scene next works for someone who has not written yet', async () => {
    const thread = await openThread(alice);
    expect(await command(alice, thread.id, 'scene', { subcommand: 'add', options: { character: 'Bo' } })).toContain('**Bo** joins');
    bot.discord.sendMessage({ channelId: thread.id, author: alice, content: 'tell us a story' });
    await bot.discord.waitFor(() => texts(thread.id).includes('[Ada] alice: tell us a story'), 10_000);
    // Bob has never written here: he asks Bo to answer Ada.
    const next = bot.discord.sendSlashCommand({ user: bob, channelId: thread.id, name: 'scene', subcommand: 'next', options: { character: 'Bo' } });
    await next.response;
    await bot.discord.waitFor(() => texts(thread.id).some((text) => text.startsWith('[Bo] Ada: [Ada]')), 10_000);
    const button = (message: { components?: unknown }) => JSON.stringify(message.components ?? []).match(/chat:again:[0-9a-f-]+:[0-9a-f-]+/)?.[0];
    const replyOf = (name: string) => bot.discord.waitFor(() => bot.discord.messages(thread.id).find((message) => message.content.startsWith(`**${name}:** [${name}]`) && button(message)), 10_000);
    const ada = await replyOf('Ada');
    const bo = await replyOf('Bo');

    // Ada's reply is no longer the latest: pressing under it changes nothing.
    const stale = bot.discord.sendButton({ user: alice, message: ada, customId: button(ada)! });
    await stale.response;
    await bot.discord.waitFor(() => JSON.stringify(bot.discord.interactionResponses(stale.interactionId)).includes('moved on'), 10_000);
    // Bo's is: written again by Bo, answering Ada's line again.
    const chats = bot.llm.requests.length;
    bot.llm.setScript((body) => ({ ...asCharacter(body), reply: `${asCharacter(body).reply} (again)` }));
    const press = bot.discord.sendButton({ user: alice, message: bo, customId: button(bo)! });
    await press.response;
    await bot.discord.waitFor(() => texts(thread.id).some((text) => text.startsWith('[Bo] Ada: [Ada]') && text.endsWith('(again)')), 10_000);
    expect(String(bot.llm.requests.at(-1)!.body.messages![0]!.content)).toMatch(/^You are Bo\./);
    expect(bot.llm.requests.length).toBe(chats + 1);
    expect(texts(thread.id).filter((text) => text.startsWith('[Ada]') && text.endsWith('(again)'))).toEqual([]);
  });
});

describe('a listening channel and the message rate limit', () => {
  let bot: BotHarness;

  beforeAll(async () => {
    bot = await startBotHarness({ script: asCharacter, environment: { DISCORD_MESSAGES_PER_MINUTE: '2' } });
  });
  afterAll(async () => {
    await bot.close();
  });

  it('keeps context on a budget of its own: talk past it is dropped quietly, and the characters are still answered', async () => {
    const owner = { id: bot.discord.guild.ownerId } as APIUser;
    const chatty = bot.discord.createUser({ username: 'chatty' });
    const channel = bot.discord.createTextChannel(bot.discord.guild.id, 'busy').id;
    const run = async (name: string, spec: { group?: string; subcommand: string; options?: Record<string, string | boolean> }) => {
      const sent = bot.discord.sendSlashCommand({ user: owner, channelId: channel, name, ...(spec.group ? { subcommandGroup: spec.group } : {}), subcommand: spec.subcommand, options: spec.options ?? {} });
      await sent.response;
      await bot.discord.waitFor(() => JSON.stringify(bot.discord.interactionResponses(sent.interactionId)).includes('"content":"'));
    };
    const choices = await bot.discord.sendAutocomplete({ user: owner, channelId: channel, name: 'channel', subcommandGroup: 'characters', subcommand: 'add', options: { character: '' }, focused: 'character' });
    const own = choices.find((choice) => choice.name.endsWith('(yours)'))!;
    const name = own.name.replace(/ \(yours\)$/, '');
    await run('channel', { group: 'characters', subcommand: 'add', options: { character: String(own.value) } });
    await run('channel', { subcommand: 'listen', options: { on: true } });
    for (const line of ['one', 'two', 'three', 'four']) bot.discord.sendMessage({ channelId: channel, author: chatty, content: `just ${line}` });
    // Let those be handled first (two kept, two past the limit), then address the character twice.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const chats = () => bot.llm.requests.filter((request) => request.path.endsWith('/chat/completions'));
    bot.discord.sendMessage({ channelId: channel, author: chatty, content: `${name}, are you there?` });
    await bot.discord.waitFor(() => chats().length === 1, 10_000);
    const seen = JSON.stringify(chats()[0]!.body.messages);
    expect(seen).toContain('just two');
    expect(seen).not.toContain('just three');
    bot.discord.sendMessage({ channelId: channel, author: chatty, content: `${name}, still there?` });
    await bot.discord.waitFor(() => chats().length === 2, 10_000);
    // The third addressed message in the minute is past the writer's own limit: told once.
    const addressed = bot.discord.sendMessage({ channelId: channel, author: chatty, content: `${name}, hello?` });
    const warnings = () => bot.discord.messages(channel).filter((message) => message.author.bot && message.content.startsWith('⚠️'));
    await bot.discord.waitFor(() => warnings().length === 1, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]!.message_reference?.message_id).toBe(addressed.id);
    expect(chats()).toHaveLength(2);
  });

  it('keeps a voice message that addresses nobody without transcribing it, and says nothing', async () => {
    const owner = { id: bot.discord.guild.ownerId } as APIUser;
    const talker = bot.discord.createUser({ username: 'talker' });
    const channel = bot.discord.createTextChannel(bot.discord.guild.id, 'voices').id;
    const choices = await bot.discord.sendAutocomplete({ user: owner, channelId: channel, name: 'channel', subcommandGroup: 'characters', subcommand: 'add', options: { character: '' }, focused: 'character' });
    const own = choices.find((choice) => choice.name.endsWith('(yours)'))!;
    const added = bot.discord.sendSlashCommand({ user: owner, channelId: channel, name: 'channel', subcommandGroup: 'characters', subcommand: 'add', options: { character: String(own.value) } });
    await added.response;
    await bot.discord.waitFor(() => JSON.stringify(bot.discord.interactionResponses(added.interactionId)).includes('may now speak'));
    const listened = bot.discord.sendSlashCommand({ user: owner, channelId: channel, name: 'channel', subcommand: 'listen', options: { on: true } });
    await listened.response;
    await bot.discord.waitFor(() => JSON.stringify(bot.discord.interactionResponses(listened.interactionId)).includes('kept as context'));
    // This bot has no speech-to-text engine: a voice message it tried to transcribe would get a ⚠️ saying so.
    const samples = new Int16Array(16_000).map((_, index) => Math.round(8000 * Math.sin((2 * Math.PI * 440 * index) / 16_000)));
    const voice = await encodeVoiceMessage({ samples, sampleRate: 16_000 });
    bot.discord.sendMessage({ channelId: channel, author: talker, voiceMessage: { file: voice.file, durationSeconds: voice.durationSeconds, waveform: voice.waveform } });
    bot.discord.sendMessage({ channelId: channel, author: talker, content: 'and some words' });
    // Kept messages and answers are handled side by side: let the two be kept first.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const name = own.name.replace(/ \(yours\)$/, '');
    bot.discord.sendMessage({ channelId: channel, author: talker, content: `${name}, what did I say?` });
    const asked = () => bot.llm.requests.find((request) => String(JSON.stringify(request.body.messages)).includes('what did I say'));
    await bot.discord.waitFor(asked, 10_000);
    const prompt = JSON.stringify(asked()!.body.messages);
    expect(prompt).toContain('and some words');
    expect(bot.discord.messages(channel).filter((message) => message.author.bot && message.content.startsWith('⚠️'))).toEqual([]);
  });
});
