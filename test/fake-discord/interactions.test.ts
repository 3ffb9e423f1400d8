/**
 * Slash commands, autocomplete and buttons from the fake reach the real discord.js Client, and
 * its replies, deferrals, edits and follow-ups land where Discord would put them, with Discord's
 * time limits on interaction tokens and webhook edits.
 */
import {
  ApplicationCommandOptionType,
  ButtonStyle,
  ComponentType,
  DiscordAPIError,
  Events,
  MessageFlags,
  TextInputStyle,
  type Client,
  type Interaction,
} from 'discord.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWithClient } from './harness.js';

/** Runs `handler` on the client's next interaction; settles with its result or error. */
function handleNext<T>(client: Client, handler: (interaction: Interaction) => Promise<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    client.once(Events.InteractionCreate, (interaction) => {
      handler(interaction).then(resolve, reject);
    });
  });
}

describe('fake Discord interactions', () => {
  let setup: Awaited<ReturnType<typeof startWithClient>>;

  beforeAll(async () => {
    setup = await startWithClient({ interactionTimeLimits: { callbackWindowMs: 1500 } });
  });
  afterAll(() => setup.stop());

  it('turns deferReply + editReply into the @original message, loading first', async () => {
    const { client, fake, user } = setup;
    const handled = handleNext(client, async (interaction) => {
      if (!interaction.isChatInputCommand()) throw new Error('expected a chat-input command');
      expect(interaction.commandName).toBe('ask');
      expect(interaction.options.getString('question')).toBe('why?');
      expect(interaction.channelId).toBe(fake.guild.textChannelId);
      expect(interaction.guildId).toBe(fake.guild.id);
      expect(interaction.user.id).toBe(user.id);
      await interaction.deferReply();
      await interaction.editReply('Because.');
      return (await interaction.fetchReply()).id;
    });
    const sent = fake.sendSlashCommand({ user, channelId: fake.guild.textChannelId, name: 'ask', options: { question: 'why?' } });
    const messageId = await handled;
    expect((await sent.response)?.type).toBe(5);
    const message = fake.message(messageId);
    expect(message?.content).toBe('Because.');
    expect(message?.author.id).toBe(fake.botUser.id);
    expect(message?.interaction_metadata?.id).toBe(sent.interactionId);
    expect(fake.messageHistory(messageId).map((version) => [version.kind, version.content, version.flags & MessageFlags.Loading])).toEqual([
      ['create', '', MessageFlags.Loading],
      ['edit', 'Because.', 0],
    ]);
    expect(fake.interactionResponses(sent.interactionId).map((response) => response.kind)).toEqual(['callback', 'original-edit']);
  });

  it('keeps a reply and its follow-up as two messages', async () => {
    const { client, fake, user } = setup;
    const handled = handleNext(client, async (interaction) => {
      if (!interaction.isChatInputCommand()) throw new Error('expected a chat-input command');
      await interaction.reply({ content: 'first' });
      const followUp = await interaction.followUp({ content: 'second' });
      return followUp.id;
    });
    const sent = fake.sendSlashCommand({ user, channelId: fake.guild.textChannelId, name: 'twice' });
    const followUpId = await handled;
    const contents = fake.messages(fake.guild.textChannelId).slice(-2).map((message) => message.content);
    expect(contents).toEqual(['first', 'second']);
    expect(fake.message(followUpId)?.content).toBe('second');
    expect((await sent.response)?.type).toBe(4);
    expect(fake.interactionResponses(sent.interactionId).map((response) => response.kind)).toEqual(['callback', 'followup']);
  });

  it('sends a deferred reply as ephemeral without a gateway event', async () => {
    const { client, fake, user } = setup;
    let gatewayMessages = 0;
    const count = (): void => void (gatewayMessages += 1);
    client.on(Events.MessageCreate, count);
    const handled = handleNext(client, async (interaction) => {
      if (!interaction.isChatInputCommand()) throw new Error('expected a chat-input command');
      await interaction.deferReply({ flags: MessageFlags.Ephemeral });
      return (await interaction.editReply('only you')).id;
    });
    fake.sendSlashCommand({ user, channelId: fake.guild.textChannelId, name: 'secret' });
    const messageId = await handled;
    client.off(Events.MessageCreate, count);
    expect(fake.message(messageId)?.flags).toBe(MessageFlags.Ephemeral);
    expect(gatewayMessages).toBe(0);
  });

  it('passes autocomplete choices back to the test', async () => {
    const { client, fake, user } = setup;
    client.once(Events.InteractionCreate, (interaction) => {
      if (!interaction.isAutocomplete()) return;
      const typed = interaction.options.getFocused();
      void interaction.respond([{ name: `${typed}-one`, value: 'one' }, { name: `${typed}-two`, value: 'two' }]);
    });
    const choices = await fake.sendAutocomplete({ user, channelId: fake.guild.textChannelId, name: 'character', subcommand: 'pick', options: { name: 'al' }, focused: 'name' });
    expect(choices).toEqual([{ name: 'al-one', value: 'one' }, { name: 'al-two', value: 'two' }]);
  });

  it('updates the message a button is on', async () => {
    const { client, fake, user } = setup;
    const channel = client.channels.cache.get(fake.guild.textChannelId);
    if (channel?.isSendable() !== true) throw new Error('general is not sendable');
    const posted = await channel.send({
      content: 'Continue?',
      components: [{ type: ComponentType.ActionRow, components: [{ type: ComponentType.Button, style: ButtonStyle.Primary, customId: 'continue', label: 'Go' }] }],
    });
    const handled = handleNext(client, async (interaction) => {
      if (!interaction.isButton()) throw new Error('expected a button');
      expect(interaction.customId).toBe('continue');
      expect(interaction.message.id).toBe(posted.id);
      await interaction.update({ content: 'Continued.', components: [] });
    });
    const sent = fake.sendButton({ user, message: posted.id, customId: 'continue' });
    await handled;
    expect((await sent.response)?.type).toBe(7);
    expect(fake.message(posted.id)?.content).toBe('Continued.');
    expect(fake.message(posted.id)?.components).toEqual([]);
  });

  it('works in DMs, with `user` instead of `member`', async () => {
    const { client, fake, user } = setup;
    const dmId = fake.openDm(user);
    const handled = handleNext(client, async (interaction) => {
      if (!interaction.isChatInputCommand()) throw new Error('expected a chat-input command');
      expect(interaction.guildId).toBeNull();
      expect(interaction.member).toBeNull();
      expect(interaction.channel?.isDMBased()).toBe(true);
      await interaction.reply('hello in private');
    });
    fake.sendSlashCommand({ user, channelId: dmId, name: 'ask' });
    await handled;
    expect(fake.messages(dmId).at(-1)?.content).toBe('hello in private');
    expect(fake.messages(dmId).at(-1)?.guild_id).toBeUndefined();
  });

  it('types options from the registered command and resolves users and attachments', async () => {
    const { client, fake, user } = setup;
    await client.application!.commands.set([
      {
        name: 'portrait',
        description: 'Draw someone',
        options: [
          { name: 'who', description: 'Whom', type: ApplicationCommandOptionType.User, required: true },
          { name: 'photo', description: 'A photo', type: ApplicationCommandOptionType.Attachment, required: true },
          { name: 'size', description: 'Size', type: ApplicationCommandOptionType.Integer },
        ],
      },
    ]);
    const handled = handleNext(client, async (interaction) => {
      if (!interaction.isChatInputCommand()) throw new Error('expected a chat-input command');
      const photo = interaction.options.getAttachment('photo', true);
      const bytes = Buffer.from(await (await fetch(photo.url)).arrayBuffer());
      await interaction.reply({ content: 'ok', flags: MessageFlags.Ephemeral });
      return { who: interaction.options.getUser('who', true).id, size: interaction.options.getInteger('size'), bytes: bytes.toString(), name: photo.name, commandId: interaction.commandId };
    });
    fake.sendSlashCommand({
      user,
      channelId: fake.guild.textChannelId,
      name: 'portrait',
      options: { who: user.id, photo: { filename: 'face.txt', contentType: 'text/plain', bytes: Buffer.from('pixels') }, size: 3 },
    });
    const result = await handled;
    expect(result).toEqual({ who: user.id, size: 3, bytes: 'pixels', name: 'face.txt', commandId: fake.commands.global[0]?.id });
  });

  it('shows a modal and delivers the user’s answers in its layout', async () => {
    const { client, fake, user } = setup;
    const shown = handleNext(client, async (interaction) => {
      if (!interaction.isChatInputCommand()) throw new Error('expected a chat-input command');
      await interaction.showModal({
        customId: 'describe',
        title: 'Describe',
        components: [{ type: ComponentType.ActionRow, components: [{ type: ComponentType.TextInput, customId: 'bio', label: 'Bio', style: TextInputStyle.Paragraph }] }],
      });
    });
    const opener = fake.sendSlashCommand({ user, channelId: fake.guild.textChannelId, name: 'describe' });
    await shown;
    expect((await opener.response)?.type).toBe(9);
    const submitted = handleNext(client, async (interaction) => {
      if (!interaction.isModalSubmit()) throw new Error('expected a modal submission');
      await interaction.reply({ content: `saved: ${interaction.fields.getTextInputValue('bio')}` });
      return interaction.customId;
    });
    fake.submitModal({ user, modalFrom: opener.interactionId, fields: { bio: 'likes tea' } });
    expect(await submitted).toBe('describe');
    expect(fake.messages(fake.guild.textChannelId).at(-1)?.content).toBe('saved: likes tea');
  });

  it('reports a missed callback window as no response, and rejects late callbacks with 10062', async () => {
    const { client, fake, user } = setup;
    const handled = handleNext(client, async (interaction) => {
      if (!interaction.isChatInputCommand()) throw new Error('expected a chat-input command');
      fake.advanceTime(4000);
      return interaction.reply('too late').catch((error: unknown) => error);
    });
    const sent = fake.sendSlashCommand({ user, channelId: fake.guild.textChannelId, name: 'slow' });
    const error = await handled;
    expect(error).toBeInstanceOf(DiscordAPIError);
    expect((error as DiscordAPIError).code).toBe(10062);
    expect(await sent.response).toBeNull();
  });

  it('expires interaction tokens after 15 minutes with 50027', async () => {
    const { client, fake, user } = setup;
    const handled = handleNext(client, async (interaction) => {
      if (!interaction.isChatInputCommand()) throw new Error('expected a chat-input command');
      await interaction.deferReply();
      fake.advanceTime(15 * 60_000 + 1);
      return interaction.editReply('finally').catch((error: unknown) => error);
    });
    fake.sendSlashCommand({ user, channelId: fake.guild.textChannelId, name: 'slow' });
    const error = (await handled) as DiscordAPIError;
    expect(error).toBeInstanceOf(DiscordAPIError);
    expect([error.status, error.code]).toEqual([401, 50027]);
  });

  it('refuses webhook edits of a message older than an hour with 30046', async () => {
    const { client, fake, user } = setup;
    const handled = handleNext(client, async (interaction) => {
      if (!interaction.isChatInputCommand()) throw new Error('expected a chat-input command');
      const reply = await interaction.reply({ content: 'v1', withResponse: true });
      const messageId = reply.resource?.message?.id ?? '';
      fake.setMessageTimestamp(messageId, Date.now() - 61 * 60_000);
      return { messageId, error: await interaction.editReply('v2').catch((error: unknown) => error) };
    });
    fake.sendSlashCommand({ user, channelId: fake.guild.textChannelId, name: 'old' });
    const { messageId, error } = await handled;
    expect((error as DiscordAPIError).code).toBe(30046);
    expect(fake.message(messageId)?.content).toBe('v1');
  });

  it('answers a second callback with 40060 already acknowledged', async () => {
    const { client, fake, user } = setup;
    const handled = handleNext(client, async (interaction) => {
      if (!interaction.isChatInputCommand()) throw new Error('expected a chat-input command');
      await interaction.deferReply();
    });
    const sent = fake.sendSlashCommand({ user, channelId: fake.guild.textChannelId, name: 'double' });
    await handled;
    const response = await fetch(`${fake.apiBase}/v10/interactions/${sent.interactionId}/${sent.token}/callback`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 4, data: { content: 'again' } }),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ message: 'Interaction has already been acknowledged.', code: 40060 });
  });
});
