import { ApplicationCommandOptionType, type AutocompleteInteraction, type ChatInputCommandInteraction, type RESTPostAPIChatInputApplicationCommandsJSONBody } from 'discord.js';
import { type BotContext, type Command, answer } from '../src/bot/command.js';
import { existingCharacters, resolveCharacter, suggestCharacters } from '../src/bot/characters.js';
import { followSpeaker } from '../src/bot/voice/follow-speaker.js';
import { adminActor } from '../src/core/actor.js';
import { AppError } from '../src/core/errors.js';
import type { CharacterRecord } from '../src/core/records.js';
import type { Place } from '../src/bot/conversations/places.js';

const characterOption = (description: string) => ({ type: ApplicationCommandOptionType.String, name: 'character', description, required: true, autocomplete: true }) as const;

const data = {
  name: 'scene',
  description: 'Several characters in one conversation',
  options: [
    { type: ApplicationCommandOptionType.Subcommand, name: 'add', description: 'Bring a character into this conversation', options: [characterOption('Who joins')] },
    { type: ApplicationCommandOptionType.Subcommand, name: 'remove', description: 'Let a character leave this conversation', options: [characterOption('Who leaves')] },
    { type: ApplicationCommandOptionType.Subcommand, name: 'next', description: 'Have a character answer now (for example, another character)', options: [characterOption('Who answers')] },
  ],
} as const satisfies RESTPostAPIChatInputApplicationCommandsJSONBody;

export default {
  data,
  ephemeral: false,
  // `next` streams a reply into the channel, which takes longer than Discord waits.
  defer: { next: 'at-once' },
  async autocomplete(interaction, context) {
    if (interaction.options.getSubcommand() === 'add') return suggestCharacters(interaction, context);
    return suggestScene(interaction, context);
  },
  async execute(interaction, context) {
    const { actor, account } = await context.accountOf(interaction.user);
    const place = await scenePlace(context, interaction);
    if (!place) {
      throw new AppError('VALIDATION_FAILED', 'Use /scene in a conversation thread (start one with /chat), in a channel where characters speak, or in a voice channel’s chat during a call (/voice talk).');
    }
    // Whoever directs the scene takes part in it, as everyone who writes there does.
    await context.core.conversations.addSpeaker(adminActor, place.conversationId, account.id);
    const subcommand = interaction.options.getSubcommand();
    if (subcommand === 'add' || subcommand === 'remove') {
      if (place.kind === 'channel') throw new AppError('VALIDATION_FAILED', 'In this channel, server managers choose who speaks with /channel characters.');
      if (subcommand === 'add') {
        const character = await resolveCharacter(context.core, actor, interaction.options.getString('character', true));
        const { greeting } = await context.core.conversations.addCharacter(actor, place.conversationId, character.id);
        // A call held over this conversation hears the scene from its next turn: say how to talk to them there.
        const call = interaction.inGuild() ? context.talk.session(interaction.guildId) : undefined;
        const howToTalk =
          call?.conversationId === place.conversationId
            ? `In the call, start with “${character.name}, …” to talk to them; they answer ${character.ttsVoiceId ? 'in their own voice' : 'in a stand-in voice (they have none of their own yet: `/character voice`)'}.`
            : `Start a message with “${character.name}” or reply to one of their messages to talk to them.`;
        await answer(interaction, `**${character.name}** joins the conversation. ${howToTalk}`, false);
        // A card with greetings for group chats has the character greet the scene with one.
        if (greeting && interaction.channel) {
          await context.runner.greet(place.conversationId, greeting, context.replies.channelFor(interaction.channel, character, { several: true }));
          // In a call over this conversation it is heard too.
          const call = interaction.guild ? context.talk.session(interaction.guild.id) : undefined;
          if (call?.conversationId === place.conversationId) call.cue(actor, character.id, greeting.content);
        }
      } else {
        const character = await sceneCharacter(context, place.conversationId, interaction.options.getString('character', true));
        await context.core.conversations.removeCharacter(actor, place.conversationId, character.id);
        await answer(interaction, `**${character.name}** leaves the conversation.`, false);
      }
      return;
    }
    const character = await sceneCharacter(context, place.conversationId, interaction.options.getString('character', true), place.kind === 'channel' ? place.characterIds : undefined);
    if (!interaction.channel || !interaction.guild) throw new AppError('NOT_FOUND', 'This conversation’s channel is gone.');
    // In a call over this conversation the character answers aloud, in turn with what people say.
    const call = context.talk.session(interaction.guild.id);
    if (call?.conversationId === place.conversationId) {
      const [latest] = await context.core.conversations.messages(place.conversationId, { newest: true, limit: 1 });
      if (!latest) throw new AppError('VALIDATION_FAILED', 'Nothing has been said in this conversation yet: say something first.');
      call.cue(actor, character.id);
      await answer(interaction, `**${character.name}** answers aloud in the call.`, false);
      return;
    }
    const onSentence = await followSpeaker(context, interaction.guild, interaction.channelId, character);
    await answer(interaction, `**${character.name}** answers.`, false);
    await context.runner.next(actor, place.conversationId, character.id, context.replies.channelFor(interaction.channel, character, { several: true }), { onSentence });
  },
} satisfies Command;

/**
 * Where /scene acts: a voice channel's chat only while a call is held there (a link an earlier
 * version left there is no conversation of anyone's now).
 */
async function scenePlace(context: BotContext, interaction: ChatInputCommandInteraction | AutocompleteInteraction): Promise<Place | undefined> {
  const place = interaction.inGuild() ? await context.places.of(interaction.channelId) : undefined;
  return place?.kind === 'thread' && interaction.channel?.isVoiceBased() ? undefined : place;
}

/** One of the conversation's characters (or, in a channel, of its cast), by id from the list or by name. */
async function sceneCharacter(context: BotContext, conversationId: string, value: string, cast?: readonly string[]): Promise<CharacterRecord> {
  const characters = await sceneOf(context, conversationId, cast);
  const wanted = value.trim().toLowerCase();
  const character = characters.find((member) => member.id === wanted) ?? characters.find((member) => member.name.toLowerCase() === wanted);
  if (!character) throw new AppError('NOT_FOUND', `“${value}” is not in this conversation. Pick one from the list.`);
  return character;
}

async function sceneOf(context: BotContext, conversationId: string, cast?: readonly string[]): Promise<CharacterRecord[]> {
  const ids = cast ?? (await context.core.conversations.get(adminActor, conversationId)).characterIds;
  return existingCharacters(context.core, ids);
}

async function suggestScene(interaction: AutocompleteInteraction, context: BotContext): Promise<void> {
  const place = await scenePlace(context, interaction);
  if (!place) return interaction.respond([]);
  const query = String(interaction.options.getFocused()).toLowerCase();
  const characters = await sceneOf(context, place.conversationId, place.kind === 'channel' ? place.characterIds : undefined);
  await interaction.respond(characters.filter((character) => character.name.toLowerCase().includes(query)).slice(0, 25).map((character) => ({ name: character.name.slice(0, 100), value: character.id })));
}
