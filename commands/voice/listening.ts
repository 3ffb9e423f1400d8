import {
  type APIApplicationCommandChannelOption,
  type APIApplicationCommandSubcommandGroupOption,
  ApplicationCommandOptionType,
  ChannelType,
  type ChatInputCommandInteraction,
  PermissionFlagsBits,
} from 'discord.js';
import { type BotContext, answer } from '../../src/bot/command.js';
import { TUNING_LIMITS } from '../../src/bot/voice/voice-rules.js';
import { AppError } from '../../src/core/errors.js';

const channelOption = {
  type: ApplicationCommandOptionType.Channel as const,
  name: 'channel' as const,
  description: 'One voice channel (the whole server when left out)',
  // Discord's type wants a mutable array: a readonly tuple (`as const`) would not fit it.
  channel_types: [ChannelType.GuildVoice, ChannelType.GuildStageVoice],
} satisfies APIApplicationCommandChannelOption;

/** `/voice listening off|on [channel]` and `/voice listening tuning`: server managers' say over calls. */
export const listeningGroup = {
  type: ApplicationCommandOptionType.SubcommandGroup,
  name: 'listening',
  description: 'Managers: where characters may listen in voice calls, and when a turn ends',
  options: [
    { type: ApplicationCommandOptionType.Subcommand, name: 'off', description: 'Forbid characters to listen in voice calls here', options: [channelOption] },
    { type: ApplicationCommandOptionType.Subcommand, name: 'on', description: 'Allow characters to listen in voice calls again', options: [channelOption] },
    {
      type: ApplicationCommandOptionType.Subcommand,
      name: 'tuning',
      description: "This server's pause that ends a turn and shortest speech that is one (shown when none given)",
      options: [
        {
          type: ApplicationCommandOptionType.Integer,
          name: 'silence_ms',
          description: 'Milliseconds of silence that end a turn',
          min_value: TUNING_LIMITS.silenceMs.min,
          max_value: TUNING_LIMITS.silenceMs.max,
        },
        {
          type: ApplicationCommandOptionType.Integer,
          name: 'minimum_speech_ms',
          description: 'Shorter sounds (a cough, an "mm") are no turn',
          min_value: TUNING_LIMITS.minimumSpeechMs.min,
          max_value: TUNING_LIMITS.minimumSpeechMs.max,
        },
        { type: ApplicationCommandOptionType.Boolean, name: 'reset', description: 'Back to the defaults' },
      ],
    },
  ],
} as const satisfies APIApplicationCommandSubcommandGroupOption;

export async function executeListening(interaction: ChatInputCommandInteraction<'cached' | 'raw'>, context: BotContext): Promise<void> {
  if (!interaction.memberPermissions.has(PermissionFlagsBits.ManageGuild)) {
    throw new AppError('FORBIDDEN', 'Only people with the Manage Server permission choose where characters listen in voice calls.');
  }
  const subcommand = interaction.options.getSubcommand();
  if (subcommand === 'tuning') return tune(interaction, context);
  const allowed = subcommand === 'on';
  const channelId = interaction.options.getChannel(channelOption.name)?.id;
  const { guildId } = interaction;
  await context.voiceRules.setListening({ guildId, channelId }, allowed);
  const place = channelId ? `<#${channelId}>` : 'this server';
  if (!allowed) {
    const ended = context.talk.forbidden(guildId, channelId);
    await answer(interaction, `🔇 Characters no longer listen in voice calls in ${place}; \`/voice talk\` is refused there.${ended ? ' The call there has ended.' : ''}`);
    return;
  }
  const rules = await context.voiceRules.rules(guildId);
  const still = !rules.listening ? ' Listening is still off in the whole server: `/voice listening on` without a channel allows it.' : '';
  await answer(interaction, `👂 Characters may listen in voice calls in ${place} again.${still}`);
}

async function tune(interaction: ChatInputCommandInteraction<'cached' | 'raw'>, context: BotContext): Promise<void> {
  const reset = interaction.options.getBoolean('reset') === true;
  const silenceMs = interaction.options.getInteger('silence_ms') ?? (reset ? null : undefined);
  const minimumSpeechMs = interaction.options.getInteger('minimum_speech_ms') ?? (reset ? null : undefined);
  const thresholds = await context.voiceRules.tune(interaction.guildId, { silenceMs, minimumSpeechMs });
  const { defaults } = context.voiceRules;
  const rules = await context.voiceRules.rules(interaction.guildId);
  const forbidden = [!rules.listening ? 'the whole server' : '', ...rules.forbiddenChannelIds.map((id) => `<#${id}>`)].filter(Boolean);
  await answer(
    interaction,
    [
      `🎚️ In this server's next calls a turn ends after **${thresholds.silenceMs} ms** of silence (default ${defaults.silenceMs}), and speech shorter than **${thresholds.minimumSpeechMs} ms** is no turn (default ${defaults.minimumSpeechMs}).`,
      forbidden.length > 0 ? `Listening is forbidden in ${forbidden.join(', ')}.` : 'Listening is allowed in every voice channel.',
    ].join('\n'),
  );
}
