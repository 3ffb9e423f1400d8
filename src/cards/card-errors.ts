/**
 * The refusals of a card file, each with a stable code and a message that says what to send
 * instead. `details.field` is always `data`, the import body's file field.
 */
import { AppError } from '../core/errors.js';

const field = 'data';

export function notACard(why: string): AppError {
  return new AppError('NOT_A_CHARACTER_CARD', `This file is not a character card: ${why}. Send a card PNG, a card JSON (V1, V2 or V3) or a CHARX file.`, {
    details: { field },
  });
}

export function versionUnsupported(version: string): AppError {
  return new AppError('CARD_VERSION_UNSUPPORTED', `This card is in ${version}, which we do not read yet. Export it as a V2 or V3 card and send that.`, {
    details: { field, version },
  });
}

/** `limit` names the cap passed (`fileBytes`, `jsonBytes`, `pixels`, or a zip cap), `maximum` its value. */
export function cardTooLarge(what: string, limit: string, maximum: number, cause?: unknown): AppError {
  return new AppError('CARD_TOO_LARGE', `${what}; send a smaller card.`, {
    details: { field, limit, maximum },
    ...(cause === undefined ? {} : { cause }),
  });
}

export function cardDamaged(why: string, cause?: unknown): AppError {
  return new AppError('CARD_DAMAGED', `This card file is damaged (${why}). Export it again from the app it came from.`, {
    details: { field },
    ...(cause === undefined ? {} : { cause }),
  });
}

export function unsafePath(path: string): AppError {
  return new AppError('CARD_UNSAFE_PATH', `This CHARX file names a path outside its own folder (${JSON.stringify(path.slice(0, 200))}), which no real card does; it was refused unread.`, {
    details: { field, path: path.slice(0, 200) },
  });
}

export function invalidJson(where: string, error: unknown): AppError {
  const reason = error instanceof Error ? error.message : String(error);
  return new AppError('INVALID_JSON', `${where} is not valid JSON (${reason.slice(0, 200)}).`, { details: { field }, cause: error });
}

export function megabytes(bytes: number): string {
  return `${Math.round((bytes / 1024 / 1024) * 10) / 10} MB`;
}
