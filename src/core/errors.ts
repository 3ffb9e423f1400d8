/**
 * The one error family of the service. Every failure a person can see carries a stable
 * `code` and a message they can act on; front ends map codes to their own world (HTTP status,
 * Discord reply) in exactly one place each.
 */
export type ErrorCode =
  | 'VALIDATION_FAILED'
  | 'UNAUTHORIZED'
  | 'FORBIDDEN'
  | 'ACCOUNT_DISABLED'
  | 'NOT_FOUND'
  | 'USERNAME_TAKEN'
  | 'CONFLICT'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'RATE_LIMITED'
  | 'BALANCE_INSUFFICIENT'
  | 'VOICE_NOT_TRAINED'
  | 'FACE_MODEL_NOT_READY'
  /** The chat model refused image parts; the image is kept and later prompts carry a placeholder. */
  | 'MODEL_CANNOT_SEE_IMAGES'
  | 'ENGINE_FAILED'
  | 'ENGINE_TIMEOUT'
  | 'ENGINE_UNAVAILABLE'
  | 'NOT_CONFIGURED'
  | 'INTERNAL';

export interface AppErrorOptions {
  cause?: unknown;
  /** Machine-readable details, e.g. the invalid fields. Safe to show to the caller. */
  details?: Record<string, unknown>;
}

export class AppError extends Error {
  override readonly name: string = 'AppError';
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: AppErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options.details;
  }
}

/** One invalid input field: `field` is a dotted path such as `meta.dateOfBirth`. */
export interface FieldIssue {
  field: string;
  message: string;
}

export class ValidationError extends AppError {
  override readonly name = 'ValidationError';
  readonly issues: readonly FieldIssue[];

  constructor(issues: readonly FieldIssue[]) {
    super('VALIDATION_FAILED', issues.map((issue) => `${issue.field}: ${issue.message}`).join('; '), {
      details: { fields: issues },
    });
    this.issues = issues;
  }

  static field(field: string, message: string): ValidationError {
    return new ValidationError([{ field, message }]);
  }
}

export interface EngineErrorOptions extends AppErrorOptions {
  /** Which engine failed, e.g. `openai-compatible`. */
  provider: string;
  /** The upstream HTTP status, when the engine answered at all. */
  status?: number;
  /** Whether the same request may succeed when tried again later. */
  retryable?: boolean;
  code?: Extract<ErrorCode, 'ENGINE_FAILED' | 'ENGINE_TIMEOUT' | 'ENGINE_UNAVAILABLE'>;
  /** What the engine's refusal means, when the adapter recognised it, so the core can act on it. */
  reason?: EngineFailureReason;
}

/**
 * Refusals the core answers differently: `context-exceeded` (the prompt was longer than the
 * engine's context: send less and try again), `images-unsupported` (the model takes no image parts).
 */
export type EngineFailureReason = 'context-exceeded' | 'images-unsupported';

/** A failure of an external engine, keeping the upstream status and message. */
export class EngineError extends AppError {
  override readonly name = 'EngineError';
  readonly provider: string;
  readonly status: number | undefined;
  readonly retryable: boolean;
  readonly reason: EngineFailureReason | undefined;

  constructor(message: string, options: EngineErrorOptions) {
    super(options.code ?? 'ENGINE_FAILED', message, options);
    this.provider = options.provider;
    this.reason = options.reason;
    this.status = options.status;
    this.retryable = options.retryable ?? isRetryableStatus(options.status);
  }
}

/** 408, 409, 429 and 5xx are worth retrying; other answers will not change by waiting. */
export function isRetryableStatus(status: number | undefined): boolean {
  if (status === undefined) return true;
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

export function notFound(what: string, id: string): AppError {
  return new AppError('NOT_FOUND', `${what} ${id} does not exist or is not visible to you.`);
}

/**
 * The abort reason of an engine run when the service stops: the run is left as it is at the
 * engine (not canceled) so the next start can follow it again.
 */
export class ServiceStopping extends Error {
  override readonly name = 'ServiceStopping';
  constructor() {
    super('The service is stopping; the job continues after the restart.');
  }
}
