import { ApplicationCommandOptionType, AttachmentBuilder, PermissionFlagsBits, type RESTPostAPIChatInputApplicationCommandsJSONBody } from 'discord.js';
import { type Command, answer } from '../src/bot/command.js';
import { resolveCharacter, suggestCharacters } from '../src/bot/characters.js';
import { AppError } from '../src/core/errors.js';

const data = {
  name: 'speak',
  description: "Hear a character say something: in your voice channel, or as an mp3",
  options: [
    { type: ApplicationCommandOptionType.String, name: 'text', description: 'What to say (at most 1000 characters by default)', required: true, max_length: 4000 },
    { type: ApplicationCommandOptionType.String, name: 'character', description: 'Who says it (yours by default)', autocomplete: true },
  ],
} as const satisfies RESTPostAPIChatInputApplicationCommandsJSONBody;

export default {
  data,
  ephemeral: false,
  autocomplete: suggestCharacters,
  async execute(interaction, context) {
    const speech = context.core.speech;
    if (!speech) throw new AppError('NOT_CONFIGURED', 'Speech is not set up on this bot (TTS_ENGINE).');
    const { actor, account } = await context.accountOf(interaction.user);
    const option = interaction.options.getString('character');
    const character = option ? await resolveCharacter(context.core, actor, option) : await context.core.characters.get(actor, account.characterId);
    speech.requireVoice(character);
    const text = interaction.options.getString('text', true);
    // Bounded in length and counted per person (SPEECH_MAX_TEXT_CHARACTERS, SPEECH_RATE_LIMIT_PER_MINUTE), before the bot joins.
    await speech.admit(actor, text);
    const voiceChannelId = interaction.inCachedGuild() ? interaction.guild.voiceStates.cache.get(interaction.user.id)?.channelId : undefined;
    if (!interaction.inCachedGuild() || !voiceChannelId) {
      // Not in a voice channel: the speech comes as a file to play.
      const file = await speech.speakAs(character, text);
      const { bytes } = await context.core.files.read(file.key);
      await answer(interaction, {
        content: `🔊 **${character.name}**: “${text.slice(0, 1800)}”`,
        files: [new AttachmentBuilder(bytes, { name: `${character.name.replace(/[^\w.-]+/g, '_') || 'speech'}.mp3` })],
      }, false);
      return;
    }
    const call = context.talk.session(interaction.guildId);
    if (call) throw new AppError('CONFLICT', `${call.character.name} is in a voice call in <#${call.voiceChannelId}>; end it with /voice leave first.`);
    const channel = interaction.guild.channels.cache.get(voiceChannelId);
    const me = interaction.guild.members.me;
    const missing = ['Connect', 'Speak'].filter((name) => !channel || !me || !channel.permissionsFor(me).has(PermissionFlagsBits[name as 'Connect' | 'Speak']));
    if (missing.length > 0) throw new AppError('FORBIDDEN', `I need the ${missing.join(' and ')} permission${missing.length > 1 ? 's' : ''} in <#${voiceChannelId}> to speak there.`);
    const waiting = context.voice.pending(interaction.guildId);
    await answer(interaction, `🔊 **${character.name}** ${waiting > 0 ? `will speak in <#${voiceChannelId}> after ${waiting} other${waiting > 1 ? 's' : ''}` : `is speaking in <#${voiceChannelId}>`}: “${text.slice(0, 1800)}”`, false);
    try {
      await context.voice.play(interaction.guild, voiceChannelId, () => speech.streamAs(character, text));
    } catch (error) {
      await interaction.followUp({ content: `⚠️ ${error instanceof Error ? error.message : 'The speech could not be played.'}`, allowedMentions: { parse: [] } });
    }
  },
} satisfies Command;
