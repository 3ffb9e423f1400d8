/**
 * Cards in and out of the service: one place both front ends call. A card is read here at the
 * edge and becomes a character through the core's use cases; a character and its lorebook are
 * written back out in the format asked for.
 */
import type { Actor } from '../core/actor.js';
import type { Core } from '../core/core.js';
import { isImageMimeType } from '../core/media.js';
import type { CharacterRecord } from '../core/records.js';
import { importCardLimits } from './card-limits.js';
import type { CardContents, CardMimeType, CharacterCard } from './card-types.js';
import { cardThread } from './card-thread.js';
import { writeCardJson, writeCardPng, writeCharx } from './write-card.js';

export type CardFormat = 'png' | 'json' | 'charx';

export const cardFormats: readonly CardFormat[] = ['png', 'json', 'charx'];

export { cardMimeTypes } from './card-types.js';

export { importCardLimits } from './card-limits.js';

/**
 * Makes a character of `accountId` from a card file: its fields, its lorebook and its image as
 * the avatar. The file is read in the card thread, off the event loop. A refused card (not a
 * card, a bomb, too large, a book past its limits) creates nothing.
 */
export async function importCard(
  core: Core,
  actor: Actor,
  accountId: string,
  file: { bytes: Uint8Array; mimeType: CardMimeType },
  options: { isPublic?: boolean | undefined } = {},
): Promise<CharacterRecord> {
  return characterOfCard(core, actor, accountId, await cardThread.readFile(file.bytes, file.mimeType, importCardLimits), options);
}

/** Makes a character of `accountId` from a card already read (the API's import reads its body and card in the card thread). */
export function characterOfCard(core: Core, actor: Actor, accountId: string, card: CharacterCard, options: { isPublic?: boolean | undefined } = {}): Promise<CharacterRecord> {
  return core.characters.create(
    actor,
    accountId,
    {
      name: card.name,
      description: card.description,
      personalitySummary: card.personality,
      isPublic: options.isPublic ?? false,
      definition: card.definition,
      avatar: card.avatar?.bytes,
    },
    card.lorebook ?? undefined,
  );
}

/** A character as a card file of `format` (its owner; anyone for a public character). */
export async function exportCard(core: Core, actor: Actor, characterId: string, format: CardFormat): Promise<{ bytes: Uint8Array; mimeType: string; filename: string }> {
  const character = await core.characters.get(actor, characterId);
  const lorebook = await core.lorebooks.get(actor, characterId);
  const contents: CardContents = {
    name: character.name,
    description: character.description,
    personality: character.personalitySummary,
    definition: character.definition,
    lorebook: lorebook.entries.length > 0 || lorebook.settings.name !== '' ? lorebook : null,
  };
  const filename = fileNameOf(character.name);
  if (format === 'json') return { bytes: writeCardJson(contents), mimeType: 'application/json', filename: `${filename}.json` };
  const avatar = await core.characters.avatarImage(actor, characterId, format === 'png' ? 'image/png' : undefined);
  if (format === 'png') return { bytes: writeCardPng(contents, avatar.bytes), mimeType: 'image/png', filename: `${filename}.png` };
  const icon = isImageMimeType(avatar.mimeType) ? { bytes: avatar.bytes, mimeType: avatar.mimeType } : null;
  return { bytes: writeCharx(contents, icon), mimeType: 'application/zip', filename: `${filename}.charx` };
}

/** A file name any system takes: the character's name in letters and digits (any script), dashes between. */
function fileNameOf(name: string): string {
  const plain = name.normalize('NFC').replace(/[^\p{L}\p{M}\p{N}]+/gu, '-').replace(/^-+|-+$/g, '').slice(0, 60);
  return plain || 'character';
}

/**
 * A Content-Disposition for the file: the name in ASCII for clients that read only `filename`
 * (accents dropped, other scripts as `character`), and whole as `filename*` (RFC 6266).
 */
export function attachmentDisposition(filename: string): string {
  const dot = filename.lastIndexOf('.');
  const [stem, extension] = dot > 0 ? [filename.slice(0, dot), filename.slice(dot)] : [filename, ''];
  const ascii = stem.normalize('NFKD').replace(/\p{M}/gu, '').replace(/[^A-Za-z0-9]+/g, '-').replace(/^-+|-+$/g, '') || 'character';
  return `attachment; filename="${ascii}${extension}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}
