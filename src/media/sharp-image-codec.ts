/**
 * The `ImageCodec` over sharp (libvips): headers are read without decoding pixels, every
 * decode is bounded by a pixel count before any pixel memory is taken, and the work runs on
 * libuv's thread pool, off the event loop.
 */
import sharp, { type Metadata } from 'sharp';
import { AppError } from '../core/errors.js';
import { defaultImageLimits, type ImageLimits, type ImageMimeType, imageMimeTypes, isImageMimeType } from '../core/media.js';
import type { FittedImage, ImageCodec, ImageInfo } from '../core/ports.js';

export type SharpImageCodecOptions = ImageLimits;

// The caps live in the core so modules that only read headers (character cards) share them without loading sharp.
export { defaultImageLimits };

const formats: Record<string, ImageMimeType> = { png: 'image/png', jpeg: 'image/jpeg', webp: 'image/webp' };

export function createSharpImageCodec(options: SharpImageCodecOptions = defaultImageLimits): ImageCodec {
  const { maxPixels, maxFrames } = options;
  const open = (bytes: Uint8Array) =>
    sharp(bytes, { limitInputPixels: maxPixels, failOn: 'error', sequentialRead: true, pages: 1 });

  async function inspect(field: string, bytes: Uint8Array): Promise<ImageInfo> {
    let metadata: Metadata;
    try {
      metadata = await open(bytes).metadata();
    } catch (error) {
      throw refuse(field, bytes, error, maxPixels);
    }
    const mimeType = formats[metadata.format ?? ''];
    if (!mimeType || !isImageMimeType(mimeType)) throw unsupported(field, metadata.format);
    const width = metadata.width ?? 0;
    const height = metadata.height ?? 0;
    if (width < 1 || height < 1) throw unreadable(field, 'it has no width or height');
    // libvips checks the pixel limit per frame; the whole animation counts here.
    const frames = metadata.pages ?? 1;
    if (frames > maxFrames) {
      throw new AppError('UNSUPPORTED_MEDIA_TYPE', `${field} is an animation of ${frames} frames; send a still image.`, {
        details: { field, frames, maxFrames },
      });
    }
    return { mimeType, width, height, frames };
  }

  async function fit(field: string, bytes: Uint8Array, maxSide: number, as?: 'image/png'): Promise<FittedImage> {
    const info = await inspect(field, bytes);
    const pipeline = open(bytes)
      .rotate() // applies the EXIF orientation, which re-encoding would otherwise lose
      .resize({ width: maxSide, height: maxSide, fit: 'inside', withoutEnlargement: true });
    // JPEG stays JPEG; PNG and WebP (maybe with transparency) become PNG, which every vision
    // model reads.
    const jpeg = info.mimeType === 'image/jpeg' && as === undefined;
    const encoded = jpeg ? pipeline.jpeg({ quality: 85, mozjpeg: false }) : pipeline.png({ compressionLevel: 6 });
    try {
      const { data, info: out } = await encoded.toBuffer({ resolveWithObject: true });
      return { data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength), mimeType: jpeg ? 'image/jpeg' : 'image/png', width: out.width, height: out.height };
    } catch (error) {
      throw refuse(field, bytes, error, maxPixels);
    }
  }

  return { inspect, fit };
}

function refuse(field: string, bytes: Uint8Array, error: unknown, maxPixels: number): AppError {
  const reason = error instanceof Error ? error.message : String(error);
  if (/pixel limit/i.test(reason)) {
    return new AppError('PAYLOAD_TOO_LARGE', `${field} has more than ${maxPixels.toLocaleString('en-US')} pixels; send a smaller image.`, {
      details: { field, maxPixels },
    });
  }
  if (/unsupported image format/i.test(reason)) return unsupported(field, undefined);
  return unreadable(field, bytes.byteLength === 0 ? 'it is empty' : 'it is damaged or cut short');
}

function unsupported(field: string, format: string | undefined): AppError {
  return new AppError('UNSUPPORTED_MEDIA_TYPE', `${field} must be a PNG, JPEG or WebP image${format ? `, not ${format}` : ''}.`, {
    details: { field, allowed: imageMimeTypes },
  });
}

function unreadable(field: string, why: string): AppError {
  return new AppError('VALIDATION_FAILED', `${field} is not a readable image: ${why}.`, { details: { fields: [{ field, message: `is not a readable image: ${why}` }] } });
}
