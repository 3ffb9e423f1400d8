import { AppError, ValidationError } from './errors.js';
import type { ImageCodec } from './ports.js';

export const imageMimeTypes = ['image/png', 'image/jpeg', 'image/webp'] as const;
export type ImageMimeType = (typeof imageMimeTypes)[number];

/** Bounds on an uploaded image, checked from its header before any pixel is decoded. */
export interface ImageLimits {
  /** Largest width × height accepted; a decompression bomb is refused by its header. */
  maxPixels: number;
  /** Largest number of frames (animated WebP/PNG); a still image has one. */
  maxFrames: number;
}

/** Face photos, avatars and character cards' images share these caps (`UPLOAD_IMAGE_MAX_PIXELS` overrides the pixels). */
export const defaultImageLimits: ImageLimits = {
  maxPixels: 40_000_000,
  maxFrames: 1,
};

export function isImageMimeType(value: string): value is ImageMimeType {
  return (imageMimeTypes as readonly string[]).includes(value);
}

/**
 * Checks raw bytes are a whole PNG, JPEG or WebP image within `maxBytes`, by its header
 * (dimensions, frame count, pixel limit: a decompression bomb is refused before it is decoded);
 * returns the real type.
 */
export async function checkImage(field: string, bytes: Uint8Array, maxBytes: number, imageCodec: ImageCodec): Promise<ImageMimeType> {
  if (bytes.byteLength > maxBytes) throw tooLarge(field, maxBytes);
  if (bytes.byteLength === 0) throw ValidationError.field(field, 'is empty');
  const info = await imageCodec.inspect(field, bytes);
  return info.mimeType;
}

function tooLarge(field: string, maxBytes: number): AppError {
  return new AppError('PAYLOAD_TOO_LARGE', `${field} is larger than ${Math.floor(maxBytes / 1024 / 1024)} MB.`, {
    details: { field, maxBytes },
  });
}
