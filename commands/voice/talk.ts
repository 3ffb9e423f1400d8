import {
  type APIApplicationCommandSubcommandGroupOption,
  type APIApplicationCommandSubcommandOption,
  ApplicationCommandOptionType,
  ChannelType,
  type ChatInputCommandInteraction,
  PermissionFlagsBits,
} from 'discord.js';
import { type BotContext, answer } from '../../src/bot/command.js';
import { resolveCharacter } from '../../src/bot/characters.js';
import { adminActor } from '../../src/core/actor.js';
import { AppError } from '../../src/core/errors.js';

/** `/voice talk [character] [channel]`: the character joins the caller's (or the named) voice channel and talks with the people there. */
export const talkSubcommand = {
  type: ApplicationCommandOptionType.Subcommand,
  name: 'talk',
  description: 'Talk with a character in your voice channel: it listens and answers aloud',
  options: [
    { type: ApplicationCommandOptionType.String, name: 'character', description: 'Who joins the call (yours by default)', autocomplete: true },
    { type: ApplicationCommandOptionType.Channel, name: 'channel', description: 'The voice channel (yours by default; managers may name one they are not in)', channel_types: [ChannelType.GuildVoice] },
  ],
} as const satisfies APIApplicationCommandSubcommandOption;

/** `/voice ignore me [on]`: a member's audio is never decoded, transcribed or stored. */
export const ignoreGroup = {
  type: ApplicationCommandOptionType.SubcommandGroup,
  name: 'ignore',
  description: 'Choose not to be heard by characters in voice calls',
  options: [
    {
      type: ApplicationCommandOptionType.Subcommand,
      name: 'me',
      description: 'Characters in voice calls do not listen to you (switches by default)',
      options: [{ type: ApplicationCommandOptionType.Boolean, name: 'on', description: 'Ignore me (true) or hear me again (false)' }],
    },
  ],
} as const satisfies APIApplicationCommandSubcommandGroupOption;

export async function executeTalk(interaction: ChatInputCommandInteraction<'cached'>, context: BotContext): Promise<void> {
  const { core } = context;
  core.voiceCalls.requireListening();
  const speech = core.speech;
  if (!speech) throw new AppError('NOT_CONFIGURED', 'Talking in voice channels needs a speech engine (TTS_ENGINE).');
  const voiceChannelId = talkChannel(interaction);
  await context.voiceRules.requireListening(interaction.guildId, voiceChannelId);
  const { actor, account } = await context.accountOf(interaction.user);
  const option = interaction.options.getString('character');
  const character = option ? await resolveCharacter(core, actor, option) : await core.characters.get(actor, account.characterId);
  speech.requireVoice(character);
  const channel = interaction.guild.channels.cache.get(voiceChannelId);
  const me = interaction.guild.members.me;
  const missing = (['Connect', 'Speak'] as const).filter((name) => !channel || !me || !channel.permissionsFor(me).has(PermissionFlagsBits[name]));
  if (missing.length > 0) throw new AppError('FORBIDDEN', `I need the ${missing.join(' and ')} permission${missing.length > 1 ? 's' : ''} in <#${voiceChannelId}> to talk there.`);

  // Each call is a conversation of its own, never linked to the voice channel: whoever is in a
  // later call does not read the transcripts of earlier ones, and the channel's chat is not a thread.
  const conversation = await core.conversations.create(actor, account.id, character.id, { greet: false });
  await core.conversations.addSpeaker(adminActor, conversation.id, account.id);

  // Speech queued with /speak would deafen the bot: the call takes over the guild's voice.
  context.voice.leave(interaction.guildId, 'A voice call started.');
  await context.talk.start(interaction.guild, voiceChannelId, character, conversation.id);
  const notice = [
    `🎙️ **${character.name}** is listening in <#${voiceChannelId}>.`,
    `Alone with ${character.name}, everything you say is answered; with others, start with “${character.name}, …” to talk to it.`,
    `\`/scene add\` in <#${voiceChannelId}>'s chat brings in another character, who answers in its own voice when you start with its name.`,
    'Talk over it to interrupt. `/voice ignore me` and it never hears you; `/voice leave` ends the call. Nothing you say is recorded: only the words are kept, as in a thread, in a conversation of this call alone.',
    `${character.name} does not read what is written in <#${voiceChannelId}>'s chat: say it aloud.`,
  ].join('\n');
  // Run from the voice channel's own chat, the answer below is already the notice there.
  if (channel?.isSendable() && interaction.channelId !== voiceChannelId) await channel.send({ content: notice, allowedMentions: { parse: [] } }).catch((error: unknown) => context.logger.info({ err: error, channelId: voiceChannelId }, 'could not announce the call in the voice channel chat'));
  await answer(interaction, notice, false);
}

/**
 * Where the call is held: the channel named, else the caller's. People are listened to there, so
 * only someone in that channel starts it, or a manager (Manage Server, who also chooses where
 * characters may listen) for a channel they are not in.
 */
function talkChannel(interaction: ChatInputCommandInteraction<'cached'>): string {
  const own = interaction.guild.voiceStates.cache.get(interaction.user.id)?.channelId ?? undefined;
  const named = interaction.options.getChannel('channel', false, [ChannelType.GuildVoice])?.id;
  if (!named && !own) throw new AppError('VALIDATION_FAILED', 'Join a voice channel first, then use /voice talk there (or name one with `channel:`).');
  const voiceChannelId = named ?? own!;
  if (voiceChannelId !== own && !interaction.memberPermissions.has(PermissionFlagsBits.ManageGuild)) {
    throw new AppError('FORBIDDEN', `Join <#${voiceChannelId}> to start a call there: only people with the Manage Server permission start one in a channel they are not in.`);
  }
  return voiceChannelId;
}

export async function executeIgnoreMe(interaction: ChatInputCommandInteraction, context: BotContext): Promise<void> {
  const on = interaction.options.getBoolean('on') ?? !(await context.voiceRules.ignores(interaction.user.id));
  const ignored = await context.talk.setIgnored(interaction.user.id, on);
  await answer(interaction, ignored ? '🙉 Characters in voice calls no longer hear you: your audio is not decoded, transcribed or kept.' : '👂 Characters in voice calls hear you again.');
}
