import { ApplicationCommandOptionType, type RESTPostAPIChatInputApplicationCommandsJSONBody } from 'discord.js';
import { type Command, answer } from '../src/bot/command.js';
import { adminActor } from '../src/core/actor.js';
import { AppError } from '../src/core/errors.js';
import { suggestCharacters } from '../src/bot/characters.js';
import { executeListening, listeningGroup } from './voice/listening.js';
import { executeReplies, repliesSubcommand } from './voice/replies.js';
import { executeIgnoreMe, executeTalk, ignoreGroup, talkSubcommand } from './voice/talk.js';

const data = {
  name: 'voice',
  description: 'Control the bot in voice channels',
  options: [
    { type: ApplicationCommandOptionType.Subcommand, name: 'stop', description: 'Stop speaking and forget what was queued' },
    { type: ApplicationCommandOptionType.Subcommand, name: 'leave', description: 'Leave the voice channel' },
    {
      type: ApplicationCommandOptionType.Subcommand,
      name: 'follow',
      description: "In a conversation thread: also speak the character's replies in your voice channel",
      options: [{ type: ApplicationCommandOptionType.Boolean, name: 'on', description: 'On or off (switches by default)' }],
    },
    repliesSubcommand,
    talkSubcommand,
    ignoreGroup,
    listeningGroup,
  ],
} as const satisfies RESTPostAPIChatInputApplicationCommandsJSONBody;

export default {
  data,
  ephemeral: false,
  // Joining a voice channel takes longer than Discord's three seconds.
  defer: { talk: 'at-once' },
  autocomplete: suggestCharacters,
  async execute(interaction, context) {
    if (interaction.options.getSubcommandGroup() === 'ignore') return executeIgnoreMe(interaction, context);
    // Voice messages work in DMs too; voice channels only in servers.
    if (interaction.options.getSubcommand() === 'replies') return executeReplies(interaction, context);
    if (!interaction.inGuild()) throw new AppError('VALIDATION_FAILED', 'Voice works in servers, not in DMs.');
    if (interaction.options.getSubcommandGroup() === 'listening') return executeListening(interaction, context);
    if (interaction.options.getSubcommand() === 'talk') {
      if (!interaction.inCachedGuild()) throw new AppError('VALIDATION_FAILED', 'I cannot see this server’s voice channels yet; try again in a moment.');
      return executeTalk(interaction, context);
    }
    if (interaction.options.getSubcommand() === 'follow') {
      const link = await context.links.forChannel(interaction.channelId);
      if (!link) throw new AppError('VALIDATION_FAILED', 'Use /voice follow inside a conversation thread (start one with /chat).');
      const following = (await context.links.followers(interaction.channelId)).includes(interaction.user.id);
      const on = await context.links.setFollowing(interaction.channelId, interaction.user.id, interaction.options.getBoolean('on') ?? !following);
      if (!on) {
        await answer(interaction, 'Replies in this thread are no longer spoken for you.');
        return;
      }
      const conversation = await context.core.conversations.get(adminActor, link.conversationId);
      const character = await context.core.characters.get(adminActor, conversation.characterId);
      const inVoice = interaction.inCachedGuild() ? interaction.guild.voiceStates.cache.get(interaction.user.id)?.channelId : undefined;
      const notes = [
        !character.ttsVoiceId ? `${character.name} has no voice yet; its owner can give it one with /character voice.` : '',
        !inVoice ? 'Join a voice channel to hear the replies.' : '',
      ].filter(Boolean);
      await answer(interaction, [`🔊 ${character.name}'s replies in this thread will also be spoken in your voice channel.`, ...notes].join(' '));
      return;
    }
    if (interaction.options.getSubcommand() === 'stop') {
      const stopped = context.voice.stop(interaction.guildId) || (context.talk.session(interaction.guildId)?.interrupt() ?? false);
      await answer(interaction, stopped ? '⏹️ Stopped.' : 'Nothing is playing.', !stopped);
    } else {
      const leftCall = context.talk.leave(interaction.guildId);
      const left = context.voice.leave(interaction.guildId) || leftCall;
      await answer(interaction, left ? '👋 Left the voice channel.' : 'I am not in a voice channel.', !left);
    }
  },
} satisfies Command;
