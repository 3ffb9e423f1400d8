/**
 * What a card file holds, in our shapes: the character (name, description, personality and
 * its CharacterDefinition), its lorebook and its image. The core sees only these.
 */
import type { ImageMimeType } from '../core/media.js';
import type { Lorebook } from '../core/lorebook/lorebook.js';
import type { CharacterDefinition } from '../core/records.js';

/** The PNG text chunks that carry a card: `chara` (V1/V2, or V3's V2 backfill) and `ccv3`. */
export const cardKeywords: ReadonlySet<string> = new Set(['chara', 'ccv3']);

export type CardMimeType = 'image/png' | 'application/json' | 'application/zip';

/** The formats a card file may come in, by the MIME type the caller names. */
export const cardMimeTypes: readonly CardMimeType[] = ['image/png', 'application/json', 'application/zip'];

export interface CardImage {
  bytes: Uint8Array;
  mimeType: ImageMimeType;
}

/** What we write into a card: a character as the core keeps it. */
export interface CardContents {
  name: string;
  description: string;
  /** The card's `personality`: the character's `personalitySummary`. */
  personality: string;
  definition: CharacterDefinition;
  lorebook: Lorebook | null;
}

/** A card as read. */
export interface CharacterCard extends CardContents {
  /**
   * The image the card came with: the PNG itself (without its card chunks) or a CHARX's icon;
   * null for JSON. Only a PNG's pixel size is checked here (from its header): store it through
   * the image codec, which bounds every format before decoding.
   */
  avatar: CardImage | null;
  /** The card's spec version as it says (`1.0` for V1, `2.0`, `3.0`, …). */
  specVersion: string;
}
