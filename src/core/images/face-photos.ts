import { zipSync } from 'fflate';
import { readZip } from '../archives/read-zip.js';
import { AppError, type FieldIssue, ValidationError } from '../errors.js';
import { checkImage } from '../media.js';
import type { ImageCodec } from '../ports.js';

/** One uploaded file: a face photo, or a zip of them. */
export interface UploadedFile {
  filename: string;
  data: Uint8Array;
}

export const facePhotoLimits = {
  minPhotos: 5,
  maxPhotos: 30,
  photoBytes: 10 * 1024 * 1024,
  totalBytes: 100 * 1024 * 1024,
  /** Entries a zip may list, folders and skipped files included. */
  zipEntries: 200,
  /** Photos are compressed already; anything beyond this ratio is a bomb. */
  zipRatio: 50,
} as const;

const extensions: Record<string, string> = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/webp': 'webp' };

/**
 * Checks the face photos of a training (count, format, size), unpacking any zip among the
 * uploads, and packs them into the one zip the trainer fetches. Every bad photo is named in
 * one 400, before anything is charged.
 */
export async function packFacePhotos(uploads: readonly UploadedFile[], imageCodec: ImageCodec): Promise<{ zip: Uint8Array; count: number }> {
  const { minPhotos, maxPhotos, photoBytes, totalBytes } = facePhotoLimits;
  const photos: UploadedFile[] = [];
  let total = 0;
  const tooLarge = () => new AppError('PAYLOAD_TOO_LARGE', `The photos add up to more than ${totalBytes / 1024 / 1024} MB.`, { details: { field: 'photos', totalBytes } });
  for (const upload of uploads) {
    // Every zip unpacks within what is left of the one budget, so many small bombs add up too.
    const unpacked = isZip(upload.data) ? await unpack(upload, totalBytes - total) : [upload];
    for (const photo of unpacked) total += photo.data.byteLength;
    if (total > totalBytes) throw tooLarge();
    photos.push(...unpacked);
  }
  if (photos.length < minPhotos || photos.length > maxPhotos) {
    throw ValidationError.field('photos', `send ${minPhotos} to ${maxPhotos} face photos (PNG, JPEG or WebP); got ${photos.length}`);
  }
  const issues: FieldIssue[] = [];
  const entries: Record<string, Uint8Array> = {};
  for (const [index, photo] of photos.entries()) {
    try {
      const mimeType = await checkImage(photo.filename, photo.data, photoBytes, imageCodec);
      entries[`face-${String(index + 1).padStart(2, '0')}.${extensions[mimeType]}`] = photo.data;
    } catch (error) {
      issues.push({ field: `photos.${photo.filename}`, message: error instanceof Error ? error.message : String(error) });
    }
  }
  if (issues.length > 0) throw new ValidationError(issues);
  // Photos are compressed already; storing them is as small and much faster.
  return { zip: zipSync(entries, { level: 0 }), count: photos.length };
}

function isZip(data: Uint8Array): boolean {
  return data.byteLength > 4 && data[0] === 0x50 && data[1] === 0x4b && data[2] === 0x03 && data[3] === 0x04;
}

async function unpack(upload: UploadedFile, budgetBytes: number): Promise<UploadedFile[]> {
  const { photoBytes, zipEntries, zipRatio } = facePhotoLimits;
  const entries = await readZip(`photos.${upload.filename}`, upload.data, {
    maxEntries: zipEntries,
    maxEntryBytes: photoBytes,
    maxTotalBytes: budgetBytes,
    maxRatio: zipRatio,
    ratioAllowanceBytes: 1024 * 1024,
  });
  return entries.map((entry) => ({ filename: `${upload.filename}/${entry.name}`, data: entry.data }));
}
