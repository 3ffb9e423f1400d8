import type { Attachment } from 'discord.js';
import { request } from 'undici';
import { AppError } from '../core/errors.js';

const downloadTimeoutMs = 30_000;

/**
 * The bytes of a file someone attached (to a command or a message), from Discord's CDN. Sizes are checked
 * from what Discord says before anything is downloaded, and again while reading.
 */
export async function downloadAttachment(attachment: Attachment, maxBytes: number): Promise<Uint8Array> {
  checkAttachmentSize(attachment, maxBytes);
  const { statusCode, body } = await request(attachment.url, { headersTimeout: downloadTimeoutMs, bodyTimeout: downloadTimeoutMs });
  if (statusCode !== 200) {
    await body.dump();
    throw new AppError('INTERNAL', `Could not download ${attachment.name} from Discord (${statusCode}). Try again.`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      body.destroy();
      throw tooLarge(attachment, maxBytes);
    }
    chunks.push(chunk);
  }
  return new Uint8Array(Buffer.concat(chunks));
}

/** Refuses a file by the size Discord declares, before any byte of it is fetched. */
export function checkAttachmentSize(attachment: Attachment, maxBytes: number): void {
  if (attachment.size > maxBytes) throw tooLarge(attachment, maxBytes);
}

function tooLarge(attachment: Attachment, maxBytes: number): AppError {
  return new AppError('PAYLOAD_TOO_LARGE', `${attachment.name} is larger than ${Math.round(maxBytes / 1024 / 1024)} MB; send a smaller file.`);
}
