import { type APIApplicationCommandSubcommandOption, ApplicationCommandOptionType, type ChatInputCommandInteraction, PermissionFlagsBits } from 'discord.js';
import { type BotContext, answer } from '../../src/bot/command.js';
import { currentDmConversation } from '../../src/bot/conversations/dm-conversation.js';
import { voiceReplyObstacle } from '../../src/bot/voice/voice-reply.js';
import { adminActor } from '../../src/core/actor.js';
import { AppError } from '../../src/core/errors.js';
import type { ConversationRecord } from '../../src/core/records.js';

/** `/voice replies [on]`: in a DM or a conversation thread, whether voice messages are answered by voice message. */
export const repliesSubcommand = {
  type: ApplicationCommandOptionType.Subcommand,
  name: 'replies',
  description: 'In a DM or a conversation thread: answer voice messages with voice messages',
  options: [{ type: ApplicationCommandOptionType.Boolean, name: 'on', description: 'On or off (switches by default)' }],
} as const satisfies APIApplicationCommandSubcommandOption;

export async function executeReplies(interaction: ChatInputCommandInteraction, context: BotContext): Promise<void> {
  const conversation = await conversationHere(interaction, context);
  const current = await context.links.voiceReplies(conversation.id);
  const on = await context.links.setVoiceReplies(conversation.id, interaction.options.getBoolean('on') ?? !current);
  const character = await context.core.characters.get(adminActor, conversation.characterId);
  const where = interaction.inGuild() ? 'in this thread' : 'in our DMs';
  if (!on) {
    await answer(interaction, `${character.name} answers voice messages ${where} in text again.`);
    return;
  }
  const notes = [
    voiceReplyObstacle(context.core.speech, character)?.reason ?? '',
    interaction.inGuild() && interaction.appPermissions?.has(PermissionFlagsBits.SendVoiceMessages) === false
      ? 'I also need the Send Voice Messages permission in this channel.'
      : '',
  ].filter(Boolean);
  await answer(interaction, [`🎙️ ${character.name} will answer your voice messages ${where} with voice messages.`, ...notes].join(' '));
}

/**
 * The conversation of this thread, or the user's current DM conversation, as the caller sees it:
 * only its speakers may switch how it answers, not anyone who can post in the thread.
 */
async function conversationHere(interaction: ChatInputCommandInteraction, context: BotContext): Promise<ConversationRecord> {
  const { actor, account } = await context.accountOf(interaction.user);
  if (!interaction.inGuild()) return context.core.conversations.get(actor, await currentDmConversation(context, interaction.user.id, account));
  const link = await context.links.forChannel(interaction.channelId);
  if (!link) throw new AppError('VALIDATION_FAILED', 'Use /voice replies inside a conversation thread (start one with /chat) or in a DM with me.');
  try {
    return await context.core.conversations.get(actor, link.conversationId);
  } catch (error) {
    if (!(error instanceof AppError && error.code === 'NOT_FOUND')) throw error;
    throw new AppError('FORBIDDEN', "Only the people taking part in this thread's conversation can switch its voice replies.", { cause: error });
  }
}
