import type { HttpBindings } from '@hono/node-server';
import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { AppError, EngineError, type ErrorCode } from '../core/errors.js';
import type { Logger } from '../core/ports.js';

export const statusByCode: Record<ErrorCode, number> = {
  VALIDATION_FAILED: 400,
  UNAUTHORIZED: 401,
  BALANCE_INSUFFICIENT: 402,
  FORBIDDEN: 403,
  ACCOUNT_DISABLED: 403,
  NOT_FOUND: 404,
  USERNAME_TAKEN: 409,
  VOICE_NOT_TRAINED: 409,
  FACE_MODEL_NOT_READY: 409,
  CONFLICT: 409,
  MODEL_CANNOT_SEE_IMAGES: 422,
  CHARACTER_NOT_IN_CONVERSATION: 422,
  MAIN_CHARACTER_REQUIRED: 409,
  CONVERSATION_OWNER_REQUIRED: 409,
  INVITATION_LIMIT_REACHED: 409,
  CHARACTER_LIMIT_REACHED: 409,
  PERSONAL_CHARACTER_REQUIRED: 409,
  CHARACTER_DELETED: 410,
  CHARACTER_PRIVATE: 403,
  CHARACTER_TOO_LONG_FOR_CONTEXT: 422,
  NOT_NEWEST_REPLY: 409,
  GREETING_NOT_REGENERATED: 409,
  TRANSCRIPTION_UNAVAILABLE: 503,
  VOICE_CAPACITY_REACHED: 503,
  LISTENING_FORBIDDEN: 403,
  NO_SPEECH_HEARD: 422,
  PAYLOAD_TOO_LARGE: 413,
  NOT_A_CHARACTER_CARD: 422,
  CARD_VERSION_UNSUPPORTED: 422,
  CARD_TOO_LARGE: 413,
  CARD_DAMAGED: 422,
  CARD_UNSAFE_PATH: 422,
  INVALID_JSON: 400,
  SPEECH_TEXT_TOO_LONG: 400,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMITED: 429,
  INTERNAL: 500,
  ENGINE_FAILED: 502,
  ENGINE_TIMEOUT: 502,
  ENGINE_UNAVAILABLE: 503,
  ENGINE_CONTEXT_EXCEEDED: 400,
  ENGINE_MISCONFIGURED: 502,
  MODEL_LOADING: 503,
  MODEL_UNAVAILABLE: 503,
  NOT_CONFIGURED: 503,
};

export interface ErrorBody {
  success: false;
  error: { code: string; message: string; details?: Record<string, unknown> };
}

export function errorBody(error: AppError): ErrorBody {
  return {
    success: false,
    error: { code: error.code, message: error.message, ...(error.details ? { details: error.details } : {}) },
  };
}

/** Turns anything thrown into an AppError a client may see; unknown failures hide their details. */
export function toAppError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  if (error instanceof HTTPException) {
    if (error.status === 413) return new AppError('PAYLOAD_TOO_LARGE', 'The request body is too large.');
    return new AppError(error.status === 404 ? 'NOT_FOUND' : 'VALIDATION_FAILED', error.message || 'Bad request.');
  }
  return new AppError('INTERNAL', 'Something went wrong on our side; the request was not completed. Try again.', {
    cause: error,
  });
}

export function statusOf(error: AppError): number {
  return statusByCode[error.code];
}

/** The one place where errors become HTTP answers. */
export function handleError(logger: Logger) {
  return (error: unknown, context: Context) => {
    const appError = toAppError(error);
    const status = statusOf(appError);
    const fields = { method: context.req.method, path: context.req.path, code: appError.code, status };
    if (clientLeft(context)) {
      // Not our failure: reading the body of a request the client abandoned fails on the way.
      logger.info({ method: fields.method, path: fields.path, err: error }, 'client closed the connection before the answer');
    } else if (status >= 500) logger.error({ ...fields, err: error }, 'request failed');
    // An engine's refusal is the operator's to read: its words (err.upstream) are logged only.
    else if (error instanceof EngineError) logger.warn({ ...fields, err: error }, 'engine refused the request');
    else logger.debug(fields, 'request refused');
    const retryAfter = appError.details?.retryAfterSeconds;
    if (typeof retryAfter === 'number') context.header('Retry-After', String(retryAfter));
    return context.json(errorBody(appError), status as 400);
  };
}

/** Whether the client hung up: its request was cut off mid-body, or our answer's socket is gone. */
function clientLeft(context: Context): boolean {
  const bindings = context.env as Partial<HttpBindings> | undefined;
  const incoming = bindings?.incoming;
  const outgoing = bindings?.outgoing;
  if (incoming === undefined || outgoing === undefined) return false;
  return (incoming.destroyed && !incoming.complete) || (outgoing.destroyed && !outgoing.writableEnded);
}
