/**
 * A card PNG: its `ccv3` text (V3, preferred) or `chara` (V1/V2), base64 of UTF-8 JSON. The
 * pixel size is bounded from IHDR; no pixel is decoded here. The PNG, without its card
 * chunks, is the avatar.
 */
import { AppError } from '../core/errors.js';
import { cardTooLarge, notACard } from './card-errors.js';
import type { CardLimits } from './card-limits.js';
import { type CharacterCard, cardKeywords } from './card-types.js';
import { isPng, type PngText, pngSize, readPngChunks, readPngText, readPngTextKeyword, replacePngTexts } from './png-chunks.js';
import { readCardJson } from './read-card-json.js';

export function readCardPng(bytes: Uint8Array, limits: CardLimits): CharacterCard {
  if (!isPng(bytes)) throw notACard('it is not a PNG image');
  const chunks = readPngChunks(bytes, limits.maxPngChunks);
  checkPixels(pngSize(chunks), limits);
  // Base64 takes four characters for three bytes.
  const maxTextBytes = Math.ceil((limits.maxJsonBytes * 4) / 3) + 4;
  const texts = new Map<string, PngText>();
  for (const chunk of chunks) {
    // Other text (a comment, XMP) is never decoded or inflated; the first chunk of each keyword counts.
    const keyword = readPngTextKeyword(chunk);
    if (keyword === undefined || !cardKeywords.has(keyword) || texts.has(keyword)) continue;
    const text = readPngText(chunk, maxTextBytes);
    if (text !== undefined) texts.set(keyword, text);
  }
  const v3 = texts.get('ccv3');
  const v2 = texts.get('chara');
  if (v3 === undefined && v2 === undefined) throw notACard('the PNG carries no card (no chara or ccv3 text)');
  let fields;
  try {
    fields = readText(v3 ?? v2!, limits);
  } catch (error) {
    // A V3 the reader cannot use (damaged, a later version) still has its V2 backfill.
    if (v3 === undefined || v2 === undefined || !(error instanceof AppError) || error.code === 'CARD_TOO_LARGE') throw error;
    fields = readText(v2, limits);
  }
  const { assets: _assets, ...card } = fields;
  return { ...card, avatar: { bytes: replacePngTexts(bytes, cardKeywords, [], chunks), mimeType: 'image/png' } };
}

function readText(text: PngText, limits: CardLimits) {
  const where = `The PNG's ${text.keyword} card`;
  const trimmed = text.text.trim();
  // Cards hold base64; a few tools wrote the JSON itself.
  const bytes = trimmed.startsWith('{') ? Buffer.from(trimmed, 'utf8') : decodeBase64(trimmed, where, limits);
  return readCardJson(bytes, where, limits);
}

function decodeBase64(base64: string, where: string, limits: CardLimits): Uint8Array {
  if (Math.floor((base64.length * 3) / 4) > limits.maxJsonBytes + 2) {
    throw cardTooLarge(`${where} is larger than the ${limits.maxJsonBytes}-byte cap`, 'jsonBytes', limits.maxJsonBytes);
  }
  return Buffer.from(base64, 'base64');
}

/** A decompression bomb declares its size: refused by the header, as face photos are. */
export function checkPixels(size: { width: number; height: number }, limits: CardLimits): void {
  if (size.width * size.height > limits.maxPixels) {
    throw cardTooLarge(
      `The card's image is ${size.width} × ${size.height} pixels, more than ${limits.maxPixels.toLocaleString('en-US')}`,
      'pixels',
      limits.maxPixels,
    );
  }
}
