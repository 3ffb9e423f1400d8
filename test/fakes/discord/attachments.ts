/**
 * Uploaded files become attachments served back from the fake's own CDN path on loopback, with
 * the fields Discord fills in: `size`, `content_type` (with `charset` for text), `width`/`height`
 * for images, signed-looking `ex`/`is`/`hm` query parameters, and a `proxy_url`.
 */
import { createHash } from 'node:crypto';
import type { APIAttachment } from 'discord-api-types/v10';
import type { DiscordState } from './state.js';

/** A file part of a multipart request. */
export interface UploadedFile {
  /** The form field name, e.g. `files[0]`. */
  field: string;
  filename: string;
  contentType: string;
  bytes: Buffer;
}

const typesByExtension: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  txt: 'text/plain',
  json: 'application/json',
  mp3: 'audio/mpeg',
  ogg: 'audio/ogg',
  wav: 'audio/x-wav',
  mp4: 'video/mp4',
  pdf: 'application/pdf',
};

/** Discord names the type from the part's type, else from the extension; text gets a charset. */
export function attachmentContentType(filename: string, declared: string): string {
  const extension = filename.split('.').pop()?.toLowerCase() ?? '';
  const base = declared !== '' && declared !== 'application/octet-stream' ? declared.split(';')[0]! : (typesByExtension[extension] ?? declared);
  if (base === '') return 'application/octet-stream';
  return base.startsWith('text/') ? `${base}; charset=utf-8` : base;
}

/** Width and height of PNG, GIF and JPEG images, read from their headers. */
export function imageSize(bytes: Buffer): { width: number; height: number } | null {
  if (bytes.length >= 24 && bytes.readUInt32BE(0) === 0x89504e47) {
    return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
  }
  if (bytes.length >= 10 && bytes.toString('latin1', 0, 3) === 'GIF') {
    return { width: bytes.readUInt16LE(6), height: bytes.readUInt16LE(8) };
  }
  if (bytes.length >= 4 && bytes[0] === 0xff && bytes[1] === 0xd8) {
    let offset = 2;
    while (offset + 9 < bytes.length) {
      if (bytes[offset] !== 0xff) return null;
      const marker = bytes[offset + 1]!;
      const length = bytes.readUInt16BE(offset + 2);
      // SOF0..SOF15 carry the frame size; C4 (DHT), C8 (JPG) and CC (DAC) are not frames.
      if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
        return { height: bytes.readUInt16BE(offset + 5), width: bytes.readUInt16BE(offset + 7) };
      }
      offset += 2 + length;
    }
  }
  return null;
}

/** Stores an upload and returns the attachment object Discord would answer with. */
export function storeAttachment(
  state: DiscordState,
  cdnBase: string,
  channelId: string,
  file: { bytes: Buffer; filename: string; contentType: string },
  description?: string,
): APIAttachment {
  const id = state.ids.next();
  const contentType = attachmentContentType(file.filename, file.contentType);
  const filename = file.filename.replaceAll(/[^\w.-]/g, '_');
  state.files.set(id, { bytes: file.bytes, contentType, filename });
  const now = Math.floor(state.clock() / 1000);
  // Discord signs CDN links to expire in a day; tests only need the same shape.
  const expires = (now + 86_400).toString(16);
  const issued = now.toString(16);
  const signature = createHash('sha256').update(`${id}:${expires}`).digest('hex');
  const query = `?ex=${expires}&is=${issued}&hm=${signature}&`;
  const path = `attachments/${channelId}/${id}/${encodeURIComponent(filename)}`;
  const attachment: APIAttachment = {
    id,
    filename,
    size: file.bytes.length,
    url: `${cdnBase}/${path}${query}`,
    proxy_url: `${cdnBase.replace(/\/cdn$/, '/media')}/${path}${query}`,
    content_type: contentType,
  };
  if (description !== undefined) attachment.description = description;
  const size = contentType.startsWith('image/') ? imageSize(file.bytes) : null;
  if (size !== null) {
    attachment.width = size.width;
    attachment.height = size.height;
  }
  return attachment;
}
