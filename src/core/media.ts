import { fileTypeFromBuffer } from 'file-type';
import { AppError, ValidationError } from './errors.js';
import type { ImageCodec } from './ports.js';

export const imageMimeTypes = ['image/png', 'image/jpeg', 'image/webp'] as const;
export type ImageMimeType = (typeof imageMimeTypes)[number];

export function isImageMimeType(value: string): value is ImageMimeType {
  return (imageMimeTypes as readonly string[]).includes(value);
}

const dataUrlPattern = /^data:([\w.+-]+\/[\w.+-]+)?(;[\w-]+=[^;,]*)*;base64,/i;
const base64Pattern = /^[A-Za-z0-9+/_-]*={0,2}$/;

/**
 * Reads an image sent as base64 or as a `data:` URL, checks its real format from its bytes
 * (never trusting the declared type alone) and its size. With an `imageCodec` the header is
 * read whole (dimensions, frames, pixel limit); without one only the magic bytes are, which
 * is kept for callers that decode the image fully afterwards anyway.
 */
export async function decodeImage(
  field: string,
  data: string,
  declaredMimeType: string,
  maxBytes: number,
  imageCodec?: ImageCodec,
): Promise<{ bytes: Buffer; mimeType: ImageMimeType }> {
  let payload = data.trim();
  const dataUrl = dataUrlPattern.exec(payload);
  if (dataUrl) payload = payload.slice(dataUrl[0].length);
  payload = payload.replace(/\s+/g, '');
  if (payload.length === 0 || !base64Pattern.test(payload)) {
    throw ValidationError.field(field, `must be base64 or a data: URL of a ${declaredMimeType} image`);
  }
  if (Math.floor((payload.length * 3) / 4) > maxBytes + 3) {
    throw tooLarge(field, maxBytes);
  }
  const bytes = Buffer.from(payload, 'base64');
  if (imageCodec) return { bytes, mimeType: await checkImage(field, bytes, maxBytes, imageCodec) };
  return { bytes, mimeType: await sniffImage(field, bytes, maxBytes) };
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

/** The type by magic bytes alone; for callers that decode the image fully afterwards. */
async function sniffImage(field: string, bytes: Uint8Array, maxBytes: number): Promise<ImageMimeType> {
  if (bytes.byteLength > maxBytes) throw tooLarge(field, maxBytes);
  if (bytes.byteLength === 0) throw ValidationError.field(field, 'is empty');
  const detected = await fileTypeFromBuffer(bytes);
  if (!detected || !isImageMimeType(detected.mime)) {
    throw new AppError(
      'UNSUPPORTED_MEDIA_TYPE',
      `${field} must be a PNG, JPEG or WebP image${detected ? `, not ${detected.mime}` : ''}.`,
      { details: { field, allowed: imageMimeTypes } },
    );
  }
  return detected.mime;
}

function tooLarge(field: string, maxBytes: number): AppError {
  return new AppError('PAYLOAD_TOO_LARGE', `${field} is larger than ${Math.floor(maxBytes / 1024 / 1024)} MB.`, {
    details: { field, maxBytes },
  });
}
