import type { RESTPostAPIChatInputApplicationCommandsJSONBody } from 'discord.js';
import { EmbedBuilder } from 'discord.js';
import { type Command, answer } from '../src/bot/command.js';

const data = {
  name: 'conversations',
  description: 'List your conversations, with links to their threads',
} as const satisfies RESTPostAPIChatInputApplicationCommandsJSONBody;

export default {
  data,
  ephemeral: true,
  async execute(interaction, context) {
    const { actor, account } = await context.accountOf(interaction.user);
    const { conversations, nextCursor } = await context.core.conversations.listFor(actor, account.id, { limit: 25 });
    if (conversations.length === 0) {
      await answer(interaction, 'You have no conversations yet. Start one with /chat.');
      return;
    }
    const lines: string[] = [];
    for (const conversation of conversations) {
      const view = await context.core.conversations.view(conversation);
      const link = await context.links.forConversation(conversation.id);
      // A voice call's conversation (and a character channel's) has no thread link.
      const where = link ? (link.guildId ? `<#${link.channelId}>` : 'in DMs') : 'in a voice call or channel';
      lines.push(`**${view.character.name}** — ${where} · <t:${Math.floor(view.updatedMicros / 1_000_000)}:R>`);
    }
    const more = nextCursor === undefined ? '' : '\n…and older ones.';
    await answer(interaction, { embeds: [new EmbedBuilder().setTitle('Your conversations').setDescription(lines.join('\n') + more)] });
  },
} satisfies Command;
