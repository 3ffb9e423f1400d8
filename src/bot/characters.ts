import type { AutocompleteInteraction } from 'discord.js';
import { AttachmentBuilder, EmbedBuilder } from 'discord.js';
import { type Actor, adminActor } from '../core/actor.js';
import type { Core } from '../core/core.js';
import { AppError } from '../core/errors.js';
import type { CharacterRecord } from '../core/records.js';
import type { BotContext } from './command.js';

export const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Autocomplete for a character option: the user's own characters first, then public ones. */
export async function suggestCharacters(interaction: AutocompleteInteraction, context: BotContext): Promise<void> {
  const { actor } = await context.accountOf(interaction.user);
  const query = String(interaction.options.getFocused());
  const found = await context.core.characters.search(actor, query, 25);
  await interaction.respond(
    found.map((character) => ({
      name: `${character.name}${actor.type === 'account' && character.accountId === actor.accountId ? ' (yours)' : ''}`.slice(0, 100),
      value: character.id,
    })),
  );
}

/** The character an option names: an id from autocomplete, or a name typed by hand. */
export async function resolveCharacter(core: Core, actor: Actor, value: string): Promise<CharacterRecord> {
  if (uuidPattern.test(value)) return core.characters.get(actor, value.toLowerCase());
  const found = await core.characters.search(actor, value, 25);
  const exact = found.find((character) => character.name.toLowerCase() === value.trim().toLowerCase());
  const character = exact ?? found[0];
  if (!character) throw new AppError('NOT_FOUND', `No character called "${value}" that you can talk to. Pick one from the list.`);
  return character;
}

/** The characters of a cast or scene that still exist, in the order given. */
export async function existingCharacters(core: Core, characterIds: readonly string[]): Promise<CharacterRecord[]> {
  const characters = await Promise.all(characterIds.map((id) => core.characters.get(adminActor, id).catch(() => undefined)));
  return characters.filter((character) => character !== undefined);
}

/** An embed showing a character, with its avatar attached (Discord cannot fetch our signed URLs). */
export async function characterCard(core: Core, character: CharacterRecord): Promise<{ embeds: EmbedBuilder[]; files: AttachmentBuilder[] }> {
  // Discord refuses an embed whose description passes 4,096 characters or whose texts pass 6,000
  // in all; shared cards' descriptions often do. The card shows their beginning.
  const embed = new EmbedBuilder()
    .setTitle(character.name)
    .setDescription(shortened(character.description.trim(), 3_500) || '*No description yet.*')
    .setFooter({ text: character.isPublic ? 'Public character' : 'Private character' });
  if (character.personalitySummary.trim()) embed.addFields({ name: 'Personality', value: shortened(character.personalitySummary.trim(), 1_024) });
  const files: AttachmentBuilder[] = [];
  const avatar = character.avatar ? (await core.files.read(character.avatar.key).catch(() => undefined))?.bytes : undefined;
  if (avatar && character.avatar) {
    const name = `avatar.${character.avatar.key.split('.').at(-1)}`;
    files.push(new AttachmentBuilder(avatar, { name }));
    embed.setThumbnail(`attachment://${name}`);
  }
  return { embeds: [embed], files };
}

/** `text` within `limit` characters, cut at a word with an ellipsis when it is longer. */
function shortened(text: string, limit: number): string {
  if (text.length <= limit) return text;
  const cut = text.slice(0, limit - 1);
  const space = cut.lastIndexOf(' ');
  return `${space > limit * 0.8 ? cut.slice(0, space) : cut}…`;
}
