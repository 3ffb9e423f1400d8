/**
 * The body of `POST /characters/import`: a card file as base64 and what to make of it. It is
 * read in the card thread with the card (see cards/card-thread.ts): a 10 MB card is a 13 MB
 * body, whose text, JSON and base64 would hold the event loop for tens of milliseconds more.
 */
import { z } from 'zod';
import { cardMimeTypes } from '../cards/card-types.js';
import { decodeBase64, parseJsonBody, refuseLongerThan } from './validation.js';

export const importBody = z
  .object({
    data: z.string().describe('The card file, base64 (or a data: URL)'),
    mimeType: z.enum(cardMimeTypes).describe('image/png (ccv3 or chara chunk), application/json (V1, V2, V3) or application/zip (CHARX)'),
    is_public: z.boolean().optional(),
    accountId: z.uuid().optional().describe('With the admin key: whose character it is'),
  })
  .strict();

/** The body's fields but the file. */
export type ImportFields = Omit<z.infer<typeof importBody>, 'data'>;

/** The fields and the card file's bytes from the body as sent, refused as `readJson` and `decodeBase64` refuse. */
export function readImportBody(body: Uint8Array, maxFileBytes: number): { fields: ImportFields; bytes: Uint8Array } {
  const { data, ...fields } = parseJsonBody(new TextDecoder().decode(body), importBody);
  refuseLongerThan(data, maxFileBytes, 'card');
  return { fields, bytes: decodeBase64('data', data, `a ${fields.mimeType} card`) };
}
