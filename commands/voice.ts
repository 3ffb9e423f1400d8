import { ApplicationCommandOptionType, type RESTPostAPIChatInputApplicationCommandsJSONBody } from 'discord.js';
import { type Command, answer } from '../src/bot/command.js';
import { AppError } from '../src/core/errors.js';

const data = {
  name: 'voice',
  description: 'Control the bot in voice channels',
  options: [
    { type: ApplicationCommandOptionType.Subcommand, name: 'stop', description: 'Stop speaking and forget what was queued' },
    { type: ApplicationCommandOptionType.Subcommand, name: 'leave', description: 'Leave the voice channel' },
  ],
} as const satisfies RESTPostAPIChatInputApplicationCommandsJSONBody;

export default {
  data,
  ephemeral: false,
  async execute(interaction, context) {
    if (!interaction.inGuild()) throw new AppError('VALIDATION_FAILED', 'Voice works in servers, not in DMs.');
    if (interaction.options.getSubcommand() === 'stop') {
      const stopped = context.voice.stop(interaction.guildId);
      await answer(interaction, stopped ? '⏹️ Stopped.' : 'Nothing is playing.', !stopped);
    } else {
      const left = context.voice.leave(interaction.guildId);
      await answer(interaction, left ? '👋 Left the voice channel.' : 'I am not in a voice channel.', !left);
    }
  },
} satisfies Command;
