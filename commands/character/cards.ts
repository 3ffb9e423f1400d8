import { type APIApplicationCommandSubcommandOption, ApplicationCommandOptionType, AttachmentBuilder, type ChatInputCommandInteraction } from 'discord.js';
import { downloadAttachment } from '../../src/bot/attachments.js';
import { type BotContext, answer } from '../../src/bot/command.js';
import { characterCard } from '../../src/bot/characters.js';
import { type CardFormat, cardFormats, exportCard, importCard, importCardLimits } from '../../src/cards/character-cards.js';
import type { CardMimeType } from '../../src/cards/index.js';
import { AppError } from '../../src/core/errors.js';
import { chosenCharacter } from './manage.js';

const { String: text, Boolean: boolean, Attachment: attachment, Subcommand: subcommand } = ApplicationCommandOptionType;

/** `/character import file:`: a character card from SillyTavern, RisuAI or a card site. */
export const importSubcommand = {
  type: subcommand,
  name: 'import',
  description: 'Make a character from a character card (PNG, JSON or CHARX from SillyTavern, RisuAI, card sites)',
  options: [
    { type: attachment, name: 'file', description: 'The card file', required: true },
    { type: boolean, name: 'public', description: 'Whether others may talk to it' },
  ],
} as const satisfies APIApplicationCommandSubcommandOption;

/** `/character export`: a character as a card file other apps read. */
export const exportSubcommand = {
  type: subcommand,
  name: 'export',
  description: 'Get a character as a card file (PNG by default) for SillyTavern, RisuAI and the card sites',
  options: [
    { type: text, name: 'character', description: 'Which character (yours by default, or a public one)', autocomplete: true },
    { type: text, name: 'format', description: 'The file', choices: cardFormats.map((format) => ({ name: format, value: format })) },
  ],
} as const satisfies APIApplicationCommandSubcommandOption;

/** What a file is, by what Discord says of it and its name: a card is a PNG, a JSON file or a CHARX zip. */
function cardMimeTypeOf(name: string, contentType: string | null): CardMimeType {
  const lower = name.toLowerCase();
  const type = contentType?.split(';')[0]?.trim().toLowerCase();
  if (type === 'image/png' || lower.endsWith('.png')) return 'image/png';
  if (type === 'application/json' || lower.endsWith('.json')) return 'application/json';
  if (type === 'application/zip' || lower.endsWith('.charx') || lower.endsWith('.zip')) return 'application/zip';
  throw new AppError('NOT_A_CHARACTER_CARD', `${name} is not a character card: send a card as PNG, JSON or CHARX.`);
}

export async function executeImport(interaction: ChatInputCommandInteraction, context: BotContext): Promise<void> {
  const { actor, account } = await context.accountOf(interaction.user);
  const file = interaction.options.getAttachment('file', true);
  const mimeType = cardMimeTypeOf(file.name, file.contentType);
  // Refused by its declared size before anything is downloaded.
  if (file.size > importCardLimits.maxFileBytes) {
    throw new AppError('CARD_TOO_LARGE', `The card is larger than ${importCardLimits.maxFileBytes / 1024 / 1024} MB.`);
  }
  const bytes = await downloadAttachment(file, importCardLimits.maxFileBytes);
  const character = await importCard(context.core, actor, account.id, { bytes, mimeType }, { isPublic: interaction.options.getBoolean('public') ?? false });
  await answer(interaction, {
    content: `Made **${character.name}** from the card. Talk with it with \`/chat character:${character.name}\`.`,
    ...(await characterCard(context.core, character)),
  });
}

export async function executeExport(interaction: ChatInputCommandInteraction, context: BotContext): Promise<void> {
  const { actor } = await context.accountOf(interaction.user);
  const character = await chosenCharacter(interaction, context);
  const format = (interaction.options.getString('format') ?? 'png') as CardFormat;
  const card = await exportCard(context.core, actor, character.id, format);
  await answer(interaction, {
    content: `**${character.name}** as a card (${format}).`,
    files: [new AttachmentBuilder(Buffer.from(card.bytes), { name: card.filename })],
  });
}
