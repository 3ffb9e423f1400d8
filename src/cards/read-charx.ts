/**
 * A CHARX card: a zip with `card.json` at its root and its main icon among the files it names
 * (`embeded://path`, the spec's spelling, or `embedded://`). Only those two entries are
 * inflated, within the face photos' streaming caps; every name in the zip is checked first,
 * and one that points outside the root refuses the whole file.
 */
import { readZip } from '../core/archives/read-zip.js';
import { AppError } from '../core/errors.js';
import { type ImageMimeType } from '../core/media.js';
import { cardDamaged, notACard, unsafePath } from './card-errors.js';
import type { CardLimits } from './card-limits.js';
import type { CardImage, CharacterCard } from './card-types.js';
import { isObject } from './json-values.js';
import { isPng, pngSize, readPngChunks } from './png-chunks.js';
import { checkPixels } from './read-card-png.js';
import { readCardJson } from './read-card-json.js';

export async function readCharx(bytes: Uint8Array, limits: CardLimits): Promise<CharacterCard> {
  if (!(bytes[0] === 0x50 && bytes[1] === 0x4b && bytes[2] === 0x03 && bytes[3] === 0x04)) throw notACard('it is not a zip (CHARX) file');
  const [cardEntry] = await entry(bytes, 'card.json', limits);
  if (cardEntry === undefined) throw notACard('the CHARX has no card.json at its root');
  const { assets, ...card } = readCardJson(cardEntry, 'The CHARX card.json', limits);
  const iconPath = mainIconPath(assets);
  const [icon] = iconPath === undefined ? [] : await entry(bytes, iconPath, limits);
  return { ...card, avatar: icon === undefined ? null : image(icon, limits) };
}

async function entry(bytes: Uint8Array, wanted: string, limits: CardLimits): Promise<Uint8Array[]> {
  const accept = (name: string) => {
    checkPath(name);
    return name === wanted;
  };
  try {
    return (await readZip('The CHARX file', bytes, limits.zip, { accept })).map((found) => found.data);
  } catch (error) {
    if (!(error instanceof AppError) || error.code === 'CARD_UNSAFE_PATH') throw error;
    if (error.code === 'PAYLOAD_TOO_LARGE') {
      throw new AppError('CARD_TOO_LARGE', `${error.message} Send a smaller card.`, { details: { ...error.details, field: 'data', limit: 'zip' }, cause: error });
    }
    throw cardDamaged('the zip cannot be read', error);
  }
}

/** A name that stays inside the zip's root: relative, forward slashes, no `..`. */
function checkPath(name: string): void {
  if (name.includes('\\') || name.includes('\0') || name.startsWith('/') || /^[a-zA-Z]:/.test(name) || name.split('/').includes('..')) {
    throw unsafePath(name);
  }
}

/** The `embeded://` path of the icon named `main`, else of the first icon. */
function mainIconPath(assets: unknown): string | undefined {
  if (!Array.isArray(assets)) return undefined;
  const icons = assets.filter((asset) => isObject(asset) && asset.type === 'icon' && typeof asset.uri === 'string' && /^(embeded|embedded):\/\//.test(asset.uri));
  const icon = icons.find((asset) => asset.name === 'main') ?? icons[0];
  if (icon === undefined) return undefined;
  const path = String(icon.uri).replace(/^(embeded|embedded):\/\//, '');
  checkPath(path);
  return path;
}

/** The icon when it is an image we keep (PNG, JPEG, WebP by their first bytes); a PNG's pixels are bounded here. */
function image(bytes: Uint8Array, limits: CardLimits): CardImage | null {
  let mimeType: ImageMimeType | undefined;
  if (isPng(bytes)) {
    checkPixels(pngSize(readPngChunks(bytes, limits.maxPngChunks)), limits);
    mimeType = 'image/png';
  } else if (bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) mimeType = 'image/jpeg';
  else if (Buffer.from(bytes.subarray(0, 4)).toString('latin1') === 'RIFF' && Buffer.from(bytes.subarray(8, 12)).toString('latin1') === 'WEBP') mimeType = 'image/webp';
  return mimeType === undefined ? null : { bytes, mimeType };
}
