import type { RESTPostAPIChatInputApplicationCommandsJSONBody } from 'discord.js';
import { type Command, answer } from '../src/bot/command.js';
import { AppError } from '../src/core/errors.js';

const data = {
  name: 'clear',
  description: 'Forget the messages of this conversation (this thread, or your DMs with the character)',
} as const satisfies RESTPostAPIChatInputApplicationCommandsJSONBody;

export default {
  data,
  ephemeral: false,
  async execute(interaction, context) {
    const { actor, account } = await context.accountOf(interaction.user);
    let conversationId: string | undefined;
    if (interaction.inGuild()) {
      conversationId = (await context.links.forChannel(interaction.channelId))?.conversationId;
      if (!conversationId) throw new AppError('VALIDATION_FAILED', 'Use /clear inside a conversation thread (start one with /chat).');
    } else {
      const characterId = (await context.links.dmCharacter(interaction.user.id)) ?? account.characterId;
      conversationId = await context.links.dmConversation(interaction.user.id, characterId);
      if (!conversationId) {
        await answer(interaction, 'There is nothing to clear yet.');
        return;
      }
    }
    await context.core.conversations.clear(actor, conversationId);
    await answer(interaction, `🧹 ${interaction.user.displayName} cleared this conversation; the character remembers none of it.`, false);
  },
} satisfies Command;
