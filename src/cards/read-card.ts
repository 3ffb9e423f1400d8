/**
 * Reading a character card file of any kind people bring (a PNG, plain JSON, a CHARX zip),
 * bounded before any work: the whole file first, then each part as it is reached.
 */
import { cardTooLarge, megabytes } from './card-errors.js';
import { type CardLimits, defaultCardLimits } from './card-limits.js';
import type { CardMimeType, CharacterCard } from './card-types.js';
import { readCardJson } from './read-card-json.js';
import { readCardPng } from './read-card-png.js';
import { readCharx } from './read-charx.js';

/** Throws an AppError (NOT_A_CHARACTER_CARD, CARD_VERSION_UNSUPPORTED, CARD_TOO_LARGE, CARD_DAMAGED, CARD_UNSAFE_PATH, INVALID_JSON); returns nothing partial. */
export async function readCard(bytes: Uint8Array, mimeType: CardMimeType, limits: CardLimits = defaultCardLimits): Promise<CharacterCard> {
  if (bytes.byteLength > limits.maxFileBytes) {
    throw cardTooLarge(`The card file is larger than ${megabytes(limits.maxFileBytes)}`, 'fileBytes', limits.maxFileBytes);
  }
  switch (mimeType) {
    case 'image/png':
      return readCardPng(bytes, limits);
    case 'application/zip':
      return readCharx(bytes, limits);
    case 'application/json': {
      const { assets: _assets, ...card } = readCardJson(bytes, 'The card JSON', limits);
      return { ...card, avatar: null };
    }
  }
}
