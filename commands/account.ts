import {
  ActionRowBuilder,
  ButtonBuilder,
  ButtonStyle,
  EmbedBuilder,
  type RESTPostAPIChatInputApplicationCommandsJSONBody,
} from 'discord.js';
import { type Command, answer } from '../src/bot/command.js';

const data = {
  name: 'account',
  description: 'Your Likeness account: username, balance, character, and an API key',
} as const satisfies RESTPostAPIChatInputApplicationCommandsJSONBody;

export default {
  data,
  ephemeral: true,
  async execute(interaction, context) {
    const { actor, account } = await context.accountOf(interaction.user);
    const [balance, character] = await Promise.all([
      context.core.accounts.balance(actor, account.id),
      context.core.characters.get(actor, account.characterId),
    ]);
    const embed = new EmbedBuilder().setTitle(account.username).addFields(
      { name: 'Balance', value: `${balance} credits`, inline: true },
      { name: 'Character', value: character.name, inline: true },
      { name: 'Account id', value: `\`${account.id}\`` },
    );
    const button = new ButtonBuilder().setCustomId('account:new-key').setLabel('Send me a new API key').setStyle(ButtonStyle.Secondary);
    await answer(interaction, { embeds: [embed], components: [new ActionRowBuilder<ButtonBuilder>().addComponents(button)] });
  },
  // The key is shown only to its owner, and the old one stops working.
  async button(interaction, context) {
    const { actor, account } = await context.accountOf(interaction.user);
    const apiKey = await context.core.accounts.rotateKey(actor, account.id);
    await answer(interaction, `Your new API key (earlier keys no longer work): ||\`${apiKey}\`||\nUse it as \`Authorization: Bearer <key>\`.`);
  },
} satisfies Command;
