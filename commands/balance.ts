import type { RESTPostAPIChatInputApplicationCommandsJSONBody } from 'discord.js';
import { type Command, answer } from '../src/bot/command.js';

const data = {
  name: 'balance',
  description: 'How many credits you have',
} as const satisfies RESTPostAPIChatInputApplicationCommandsJSONBody;

export default {
  data,
  ephemeral: true,
  async execute(interaction, context) {
    const { actor, account } = await context.accountOf(interaction.user);
    const balance = await context.core.accounts.balance(actor, account.id);
    await answer(interaction, `You have **${balance}** credits.`);
  },
} satisfies Command;
