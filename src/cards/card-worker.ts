/**
 * The card thread's side (see card-thread.ts): each request is a card file, or the body of the
 * API's import (its JSON, its base64 and the file it carries), read with `readCard`; the answer
 * is the card, its avatar's bytes moved back rather than copied, or the refusal's code, message
 * and details.
 */
import { parentPort } from 'node:worker_threads';
import { AppError } from '../core/errors.js';
import { type ImportFields, readImportBody } from '../http/card-import-body.js';
import type { CardLimits } from './card-limits.js';
import type { CardMimeType, CharacterCard } from './card-types.js';
import { readCard } from './read-card.js';

export type CardSource = { kind: 'file'; bytes: Uint8Array; mimeType: CardMimeType } | { kind: 'import-body'; body: Uint8Array };

export interface CardRequest {
  id: number;
  source: CardSource;
  limits: CardLimits;
}

export type CardReply =
  | { id: number; card: CharacterCard; fields?: ImportFields }
  | { id: number; refusal: { code: AppError['code']; message: string; details: Record<string, unknown> | undefined } }
  | { id: number; failure: { message: string; stack: string | undefined } };

async function answer(request: CardRequest): Promise<{ reply: CardReply; transfer: ArrayBuffer[] }> {
  try {
    const { source, limits } = request;
    const { fields, bytes, mimeType } = source.kind === 'file' ? { ...source, fields: undefined } : fileOf(readImportBody(source.body, limits.maxFileBytes));
    const card = await readCard(bytes, mimeType, limits);
    const reply = (read: CharacterCard): CardReply => ({ id: request.id, card: read, ...(fields === undefined ? {} : { fields }) });
    if (card.avatar === null) return { reply: reply(card), transfer: [] };
    // The avatar is a view into the file (or a buffer of its own): moved back as a buffer of its own.
    const avatar = new Uint8Array(card.avatar.bytes);
    return { reply: reply({ ...card, avatar: { ...card.avatar, bytes: avatar } }), transfer: [avatar.buffer] };
  } catch (error) {
    if (error instanceof AppError) return { reply: { id: request.id, refusal: { code: error.code, message: error.message, details: error.details } }, transfer: [] };
    const unknown = error instanceof Error ? error : new Error(String(error));
    return { reply: { id: request.id, failure: { message: unknown.message, stack: unknown.stack } }, transfer: [] };
  }
}

function fileOf(read: { fields: ImportFields; bytes: Uint8Array }) {
  return { fields: read.fields, bytes: read.bytes, mimeType: read.fields.mimeType };
}

/** Started by the thread's bootstrap once this module is loaded: one card at a time, in the order they came. */
export function serve(): void {
  let queue = Promise.resolve();
  parentPort?.on('message', (request: CardRequest) => {
    queue = queue.then(async () => {
      const { reply, transfer } = await answer(request);
      parentPort?.postMessage(reply, transfer);
    });
  });
}
