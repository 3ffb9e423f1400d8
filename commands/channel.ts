import {
  ApplicationCommandOptionType,
  type AutocompleteInteraction,
  ChannelType,
  type ChatInputCommandInteraction,
  InteractionContextType,
  PermissionFlagsBits,
  type RESTPostAPIChatInputApplicationCommandsJSONBody,
} from 'discord.js';
import { type BotContext, type Command, answer } from '../src/bot/command.js';
import { existingCharacters, resolveCharacter, suggestCharacters } from '../src/bot/characters.js';
import { adminActor } from '../src/core/actor.js';
import { AppError } from '../src/core/errors.js';

const characterOption = (description: string) => ({ type: ApplicationCommandOptionType.String, name: 'character', description, required: true, autocomplete: true }) as const;

const data = {
  name: 'channel',
  description: 'Choose which characters may speak in this channel',
  // Server managers only; Discord hides the command from others, and it is checked again below.
  default_member_permissions: String(PermissionFlagsBits.ManageGuild),
  contexts: [InteractionContextType.Guild],
  options: [
    {
      type: ApplicationCommandOptionType.SubcommandGroup,
      name: 'characters',
      description: 'Characters that answer here when addressed by name, mention or reply',
      options: [
        { type: ApplicationCommandOptionType.Subcommand, name: 'add', description: 'Let a character speak in this channel', options: [characterOption('Who may speak here')] },
        { type: ApplicationCommandOptionType.Subcommand, name: 'remove', description: 'Stop a character speaking in this channel', options: [characterOption('Who should stop')] },
        { type: ApplicationCommandOptionType.Subcommand, name: 'list', description: 'Channels of this server where characters speak, and who' },
      ],
    },
    {
      type: ApplicationCommandOptionType.Subcommand,
      name: 'listen',
      description: 'Keep messages that address no character as context for the characters (never answered)',
      options: [{ type: ApplicationCommandOptionType.Boolean, name: 'on', description: 'On or off', required: true }],
    },
  ],
} as const satisfies RESTPostAPIChatInputApplicationCommandsJSONBody;

/** Channels that can hold a character's conversation: text and announcement channels (threads have /chat). */
const channelTypes: ReadonlySet<ChannelType> = new Set([ChannelType.GuildText, ChannelType.GuildAnnouncement]);

export default {
  data,
  ephemeral: true,
  async autocomplete(interaction, context) {
    if (interaction.options.getSubcommand() === 'remove') return suggestCast(interaction, context);
    return suggestCharacters(interaction, context);
  },
  async execute(interaction, context) {
    if (!interaction.inGuild()) throw new AppError('VALIDATION_FAILED', 'Characters speak in server channels; in DMs just write to me.');
    if (!interaction.memberPermissions.has(PermissionFlagsBits.ManageGuild)) {
      throw new AppError('FORBIDDEN', 'Only people with the Manage Server permission choose where characters speak.');
    }
    const group = interaction.options.getSubcommandGroup();
    const subcommand = interaction.options.getSubcommand();
    if (group === null && subcommand === 'listen') return listen(interaction, context);
    if (subcommand === 'list') return list(interaction, context);
    if (subcommand === 'add') return add(interaction, context);
    return remove(interaction, context);
  },
} satisfies Command;

type GuildInteraction = ChatInputCommandInteraction<'cached' | 'raw'>;

async function add(interaction: GuildInteraction, context: BotContext): Promise<void> {
  if (!interaction.channel || !channelTypes.has(interaction.channel.type)) {
    throw new AppError('VALIDATION_FAILED', 'Characters can be added to text channels. In a /chat thread, use /scene add to bring in another character.');
  }
  const { actor, account } = await context.accountOf(interaction.user);
  const character = await resolveCharacter(context.core, actor, interaction.options.getString('character', true));
  const known = await context.channels.get(interaction.channelId);
  const conversationId = known?.conversationId ?? (await context.core.conversations.create(actor, account.id, character.id, { greet: false })).id;
  const channel = await context.channels.addCharacter({ channelId: interaction.channelId, guildId: interaction.guildId, conversationId }, character.id, Date.now());
  // The stored conversation wins over one made by a concurrent first add. The manager joins it
  // (as everyone who writes here does) and brings the character in as themselves, so their own
  // private character may speak in a channel another manager opened.
  try {
    await context.core.conversations.addSpeaker(adminActor, channel.conversationId, account.id);
    await context.core.conversations.addCharacter(actor, channel.conversationId, character.id, { greet: false });
  } catch (error) {
    if (!known?.characterIds.includes(character.id)) await context.channels.removeCharacter(interaction.channelId, character.id);
    throw error;
  }
  const personas = interaction.appPermissions.has(PermissionFlagsBits.ManageWebhooks)
    ? ''
    : ` They answer as me until I have the **Manage Webhooks** permission here; then they post under their own name and picture.`;
  await answer(
    interaction,
    `**${character.name}** may now speak in <#${interaction.channelId}>: start a message with “${character.name}”, mention me with the name, or reply to one of their messages.${personas}`,
  );
}

async function remove(interaction: GuildInteraction, context: BotContext): Promise<void> {
  const { actor } = await context.accountOf(interaction.user);
  const value = interaction.options.getString('character', true);
  const channel = await context.channels.get(interaction.channelId);
  const cast = await castOf(context, channel?.characterIds ?? []);
  const character = cast.find((member) => member.id === value.toLowerCase() || member.name.toLowerCase() === value.trim().toLowerCase()) ?? (await resolveCharacter(context.core, actor, value));
  const removed = await context.channels.removeCharacter(interaction.channelId, character.id);
  // It leaves the channel's conversation too (no 🔄 brings it back, the others stop seeing it
  // present); its lines stay. The character the conversation was opened with cannot leave it.
  if (channel) {
    await context.core.conversations.removeCharacter(adminActor, channel.conversationId, character.id).catch((error: unknown) => {
      if (!(error instanceof AppError && error.code === 'MAIN_CHARACTER_REQUIRED')) throw error;
    });
  }
  await answer(interaction, removed ? `**${character.name}** no longer speaks in <#${interaction.channelId}>.` : `**${character.name}** does not speak in <#${interaction.channelId}>.`);
}

async function list(interaction: GuildInteraction, context: BotContext): Promise<void> {
  const channels = await context.channels.inGuild(interaction.guildId);
  if (channels.length === 0) {
    await answer(interaction, 'No channel of this server has characters yet. Add one in a channel with `/channel characters add`.');
    return;
  }
  const lines = await Promise.all(
    channels.map(async (channel) => {
      const names = (await castOf(context, channel.characterIds)).map((character) => `**${character.name}**`);
      return `<#${channel.channelId}>: ${names.join(', ')}${channel.listen ? ' · listening' : ''}`;
    }),
  );
  await answer(interaction, lines.sort().join('\n').slice(0, 2000));
}

async function listen(interaction: GuildInteraction, context: BotContext): Promise<void> {
  const on = interaction.options.getBoolean('on', true);
  const channel = await context.channels.get(interaction.channelId);
  if (!channel || channel.characterIds.length === 0) {
    throw new AppError('VALIDATION_FAILED', 'No character speaks in this channel yet; add one first with `/channel characters add`.');
  }
  await context.channels.setListen(interaction.channelId, on);
  await answer(
    interaction,
    on
      ? `Messages in <#${interaction.channelId}> that address no character are now kept as context, so characters know what was said. They are never answered.`
      : `Only messages that address a character are kept in <#${interaction.channelId}> now.`,
  );
}

const castOf = (context: BotContext, characterIds: readonly string[]) => existingCharacters(context.core, characterIds);

/** Autocomplete for `remove`: the characters speaking in this channel. */
async function suggestCast(interaction: AutocompleteInteraction, context: BotContext): Promise<void> {
  const channel = await context.channels.get(interaction.channelId);
  const query = String(interaction.options.getFocused()).toLowerCase();
  const cast = await castOf(context, channel?.characterIds ?? []);
  await interaction.respond(cast.filter((character) => character.name.toLowerCase().includes(query)).slice(0, 25).map((character) => ({ name: character.name.slice(0, 100), value: character.id })));
}
