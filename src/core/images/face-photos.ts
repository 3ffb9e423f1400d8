import { unzipSync, zipSync } from 'fflate';
import { AppError, type FieldIssue, ValidationError } from '../errors.js';
import { checkImage } from '../media.js';

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
} as const;

const extensions: Record<string, string> = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/webp': 'webp' };

/**
 * Checks the face photos of a training (count, format, size), unpacking any zip among the
 * uploads, and packs them into the one zip the trainer fetches. Every bad photo is named in
 * one 400, before anything is charged.
 */
export async function packFacePhotos(uploads: readonly UploadedFile[]): Promise<{ zip: Uint8Array; count: number }> {
  const photos = uploads.flatMap((upload) => (isZip(upload.data) ? unpack(upload) : [upload]));
  const { minPhotos, maxPhotos, photoBytes, totalBytes } = facePhotoLimits;
  if (photos.length < minPhotos || photos.length > maxPhotos) {
    throw ValidationError.field('photos', `send ${minPhotos} to ${maxPhotos} face photos (PNG, JPEG or WebP); got ${photos.length}`);
  }
  const total = photos.reduce((sum, photo) => sum + photo.data.byteLength, 0);
  if (total > totalBytes) {
    throw new AppError('PAYLOAD_TOO_LARGE', `The photos add up to more than ${totalBytes / 1024 / 1024} MB.`, { details: { field: 'photos', totalBytes } });
  }
  const issues: FieldIssue[] = [];
  const entries: Record<string, Uint8Array> = {};
  for (const [index, photo] of photos.entries()) {
    try {
      const mimeType = await checkImage(photo.filename, photo.data, photoBytes);
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

function unpack(upload: UploadedFile): UploadedFile[] {
  let entries: Record<string, Uint8Array>;
  try {
    entries = unzipSync(upload.data, {
      // Folders, macOS resource forks and hidden files are not photos.
      filter: (file) => !file.name.endsWith('/') && !file.name.startsWith('__MACOSX/') && !/(^|\/)\./.test(file.name),
    });
  } catch (error) {
    throw ValidationError.field(`photos.${upload.filename}`, `is not a readable zip (${(error as Error).message})`);
  }
  return Object.entries(entries).map(([name, data]) => ({ filename: `${upload.filename}/${name}`, data }));
}
