/**
 * A character out as a card file: V3 JSON; a PNG carrying V3 (`ccv3`) and its V2 backfill
 * (`chara`), as SillyTavern writes them; or a CHARX zip with the avatar as its main icon.
 */
import { zipSync } from 'fflate';
import { AppError } from '../core/errors.js';
import { type CardContents, type CardImage, cardKeywords } from './card-types.js';
import { isPng, replacePngTexts, textChunk } from './png-chunks.js';
import { cardV2Json, cardV3Json } from './write-card-json.js';

const extensions: Record<CardImage['mimeType'], string> = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/webp': 'webp' };

export function writeCardJson(card: CardContents): Uint8Array {
  return Buffer.from(cardV3Json(card), 'utf8');
}

/**
 * `png` with the card in it: old card chunks removed, `ccv3` and `chara` (base64 of UTF-8
 * JSON) inserted before IEND. An avatar that is not a PNG is converted by the caller first
 * (the image codec), since a card must be a PNG.
 */
export function writeCardPng(card: CardContents, png: Uint8Array): Uint8Array {
  if (!isPng(png)) throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'A card image must be a PNG; convert the avatar to PNG first.');
  const chunks = [
    textChunk('ccv3', Buffer.from(cardV3Json(card), 'utf8').toString('base64')),
    textChunk('chara', Buffer.from(cardV2Json(card), 'utf8').toString('base64')),
  ];
  return replacePngTexts(png, cardKeywords, chunks);
}

/** A CHARX: `card.json` at the root and the avatar, if any, as `assets/icon/image/main.<ext>`. */
export function writeCharx(card: CardContents, avatar: CardImage | null): Uint8Array {
  const ext = avatar === null ? 'png' : extensions[avatar.mimeType];
  const path = `assets/icon/image/main.${ext}`;
  // `embeded` is the spec's spelling, which every reader expects.
  const json = avatar === null ? cardV3Json(card) : cardV3Json(card, { uri: `embeded://${path}`, ext });
  return zipSync({
    'card.json': Buffer.from(json, 'utf8'),
    // Images are compressed already: stored, not deflated again.
    ...(avatar === null ? {} : { [path]: [avatar.bytes, { level: 0 }] as [Uint8Array, { level: 0 }] }),
  });
}
