import { type APIApplicationCommandSubcommandOption, ApplicationCommandOptionType, type ChatInputCommandInteraction } from 'discord.js';
import { type BotContext, answer } from '../../src/bot/command.js';
import { characterCard, resolveCharacter, uuidPattern } from '../../src/bot/characters.js';
import { characterLimits } from '../../src/core/characters.js';
import { AppError } from '../../src/core/errors.js';
import type { CharacterRecord } from '../../src/core/records.js';

const { String: text, Boolean: boolean, Subcommand: subcommand } = ApplicationCommandOptionType;

/** Discord takes at most 6,000 characters in a string option; longer texts come by the API or a card. */
export const optionLength = (limit: number) => Math.min(limit, 6000);

/** The option every subcommand that shapes a character takes: which of yours (your own by default). */
export const whichOfYours = { type: text, name: 'character', description: 'Which of your characters (your own by default)', autocomplete: true } as const;

/** `/character create`: another character of yours, beside your own. */
export const createSubcommand = {
  type: subcommand,
  name: 'create',
  description: 'Make another character of yours (a detective, a narrator, a shopkeeper…)',
  options: [
    { type: text, name: 'name', description: 'Its name', required: true, max_length: characterLimits.name },
    { type: text, name: 'description', description: 'Who it is', max_length: optionLength(characterLimits.description) },
    { type: text, name: 'personality', description: 'How it speaks and behaves', max_length: optionLength(characterLimits.personalitySummary) },
    { type: text, name: 'greeting', description: 'What it says when a conversation opens', max_length: 2000 },
    { type: boolean, name: 'public', description: 'Whether others may talk to it' },
  ],
} as const satisfies APIApplicationCommandSubcommandOption;

/** `/character delete`: one of yours, for good; asks for a confirmation in the same command. */
export const deleteSubcommand = {
  type: subcommand,
  name: 'delete',
  description: 'Delete one of your characters with its memories, lorebook, voice and face models',
  options: [
    { ...whichOfYours, description: 'Which of your characters', required: true },
    { type: boolean, name: 'confirm', description: 'True: yes, delete it for good', required: true },
  ],
} as const satisfies APIApplicationCommandSubcommandOption;

/** The character a subcommand's `character` option names, or the person's own one. */
export async function chosenCharacter(interaction: ChatInputCommandInteraction, context: BotContext): Promise<CharacterRecord> {
  const { actor, account } = await context.accountOf(interaction.user);
  const option = interaction.options.getString('character');
  return option ? resolveCharacter(context.core, actor, option) : context.core.characters.get(actor, account.characterId);
}

export async function executeCreate(interaction: ChatInputCommandInteraction, context: BotContext): Promise<void> {
  const { actor, account } = await context.accountOf(interaction.user);
  const greeting = interaction.options.getString('greeting');
  const character = await context.core.characters.create(actor, account.id, {
    name: interaction.options.getString('name', true),
    description: interaction.options.getString('description') ?? '',
    personalitySummary: interaction.options.getString('personality') ?? '',
    isPublic: interaction.options.getBoolean('public') ?? false,
    ...(greeting ? { definition: { firstMessage: greeting } } : {}),
  });
  await answer(interaction, {
    content: `Made **${character.name}**. Talk with it with \`/chat character:${character.name}\`; shape it with \`/character edit character:${character.name}\`.`,
    ...(await characterCard(context.core, character)),
  });
}

export async function executeDelete(interaction: ChatInputCommandInteraction, context: BotContext): Promise<void> {
  const { actor } = await context.accountOf(interaction.user);
  // Deleting takes the one named exactly (or picked from the list), never the closest match.
  const option = interaction.options.getString('character', true);
  const character = await resolveCharacter(context.core, actor, option);
  if (!uuidPattern.test(option) && character.name.toLowerCase() !== option.trim().toLowerCase()) {
    throw new AppError('NOT_FOUND', `No character called "${option}" to delete; pick it from the list (it offered **${character.name}**).`);
  }
  if (!interaction.options.getBoolean('confirm', true)) {
    throw new AppError('VALIDATION_FAILED', `Nothing deleted. To delete **${character.name}** for good, run the command again with confirm: True.`);
  }
  await context.core.characters.delete(actor, character.id);
  await answer(interaction, `Deleted **${character.name}**. Conversations that had it keep their messages.`);
}
