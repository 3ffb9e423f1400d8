import { ApplicationCommandOptionType, type RESTPostAPIChatInputApplicationCommandsJSONBody } from 'discord.js';
import { type Command, answer } from '../src/bot/command.js';
import { adminActor } from '../src/core/actor.js';
import { AppError } from '../src/core/errors.js';

const data = {
  name: 'admin',
  description: 'Bot owners only',
  options: [
    {
      type: ApplicationCommandOptionType.Subcommand,
      name: 'credit',
      description: 'Add credits to a user',
      options: [
        { type: ApplicationCommandOptionType.User, name: 'user', description: 'Who gets the credits', required: true },
        { type: ApplicationCommandOptionType.Integer, name: 'amount', description: 'How many', required: true, min_value: 1, max_value: 1_000_000 },
        { type: ApplicationCommandOptionType.String, name: 'reason', description: 'Why (kept in the ledger)', required: true, max_length: 200 },
      ],
    },
  ],
} as const satisfies RESTPostAPIChatInputApplicationCommandsJSONBody;

export default {
  data,
  ephemeral: true,
  async execute(interaction, context) {
    if (!context.ownerIds.has(interaction.user.id)) {
      throw new AppError('FORBIDDEN', 'Only the bot owners (BOT_OWNER_IDS) may use /admin.');
    }
    const user = interaction.options.getUser('user', true);
    const amount = interaction.options.getInteger('amount', true);
    const reason = interaction.options.getString('reason', true);
    const { account } = await context.accountOf(user);
    // A bot owner acts as the admin; the core checks that crediting is the admin's.
    const { balance } = await context.core.accounts.credit(adminActor, account.id, amount, `${reason} (by Discord user ${interaction.user.id})`);
    await answer(interaction, `Added ${amount} credits to ${user.username}; their balance is ${balance}.`);
  },
} satisfies Command;
