/**
 * The caps on a card file. They bound the work before it is done: the file's bytes before
 * anything is read, a JSON text's bytes before it is parsed, a PNG's pixels from its header
 * (never decoded here) and its chunks as they are walked, and a CHARX zip with the face
 * photos' streaming caps.
 */
import type { ZipLimits } from '../core/archives/read-zip.js';
import { facePhotoLimits } from '../core/images/face-photos.js';
import { defaultImageLimits } from '../core/media.js';

export interface CardLimits {
  /** The whole file, as sent. */
  maxFileBytes: number;
  /** The card's JSON text (a PNG chunk's decoded text, a CHARX's `card.json`), before it is parsed. */
  maxJsonBytes: number;
  /** Width × height of the card's image, read from its header. */
  maxPixels: number;
  /** Chunks of a card's PNG (or a CHARX's PNG icon), counted as they are walked: an image has a few dozen. */
  maxPngChunks: number;
  zip: ZipLimits;
}

const maxFileBytes = 20 * 1024 * 1024;

export const defaultCardLimits: CardLimits = {
  maxFileBytes,
  // Cards with big lorebooks reach a few megabytes; a 2 MB PNG card carries two copies in base64.
  maxJsonBytes: 10 * 1024 * 1024,
  maxPixels: defaultImageLimits.maxPixels,
  maxPngChunks: 8192,
  zip: {
    maxEntries: facePhotoLimits.zipEntries,
    // We inflate only card.json and the icon; neither may pass the file cap.
    maxEntryBytes: maxFileBytes,
    maxTotalBytes: maxFileBytes + 10 * 1024 * 1024,
    maxRatio: facePhotoLimits.zipRatio,
    ratioAllowanceBytes: 1024 * 1024,
  },
};

/** The card file sizes the front ends take: within the API's 15 MB body once in base64, and Discord's attachments. */
export const importCardLimits: CardLimits = { ...defaultCardLimits, maxFileBytes: 10 * 1024 * 1024 };
