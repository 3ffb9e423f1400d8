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
  /** A chat asked a character to answer that is not in the conversation's scene. */
  | 'CHARACTER_NOT_IN_CONVERSATION'
  /** The character a conversation is with cannot be taken out of it. */
  | 'MAIN_CHARACTER_REQUIRED'
  /** The account that opened a conversation cannot leave it or be taken out of it. */
  | 'CONVERSATION_OWNER_REQUIRED'
  /** An account already has as many conversation invitations waiting as it may; it must accept or decline some first. */
  | 'INVITATION_LIMIT_REACHED'
  /** An account already holds `MAX_CHARACTERS_PER_ACCOUNT` characters. */
  | 'CHARACTER_LIMIT_REACHED'
  /** The account's own character (its personal model) is deleted only with the account. */
  | 'PERSONAL_CHARACTER_REQUIRED'
  /** The character was deleted by its owner; its conversations can be read, not continued. */
  | 'CHARACTER_DELETED'
  /** The character was made private: it answers only where its owner takes part; the conversation can be read. */
  | 'CHARACTER_PRIVATE'
  /** The character's own texts leave no room in the chat model's context for any message. */
  | 'CHARACTER_TOO_LONG_FOR_CONTEXT'
  /** Only a character's newest message, with nothing after it, can be regenerated or swiped. */
  | 'NOT_NEWEST_REPLY'
  /** The newest character message is a greeting: its alternatives are the card's, swiped, not rewritten. */
  | 'GREETING_NOT_REGENERATED'
  /** A voice message came but no speech-to-text engine is configured. */
  | 'TRANSCRIPTION_UNAVAILABLE'
  /** A server manager forbade characters to listen in voice calls there, in the whole server or that channel. */
  | 'LISTENING_FORBIDDEN'
  /** This process holds as many voice decoders as it reserved memory for; a new call or listener would break the others. */
  | 'VOICE_CAPACITY_REACHED'
  /** The speech-to-text engine heard no words in a voice message; nothing was answered. */
  | 'NO_SPEECH_HEARD'
  /** A file sent as a character card holds no card (a PNG without a `chara`/`ccv3` chunk, JSON of another shape). */
  | 'NOT_A_CHARACTER_CARD'
  /** A character card of a spec version we do not read (e.g. `chara_card_v4`). */
  | 'CARD_VERSION_UNSUPPORTED'
  /** A character card past a cap: its file, its JSON, its image's pixels, or what its CHARX zip unpacks to. */
  | 'CARD_TOO_LARGE'
  /** A character card's container is damaged: a PNG cut short or failing its checksums, an unreadable zip. */
  | 'CARD_DAMAGED'
  /** A CHARX zip names a path outside its root (`..`, an absolute path, a backslash). */
  | 'CARD_UNSAFE_PATH'
  /** Text sent as JSON does not parse. */
  | 'INVALID_JSON'
  /** A text asked to be spoken is longer than SPEECH_MAX_TEXT_CHARACTERS; `details` has both lengths. */
  | 'SPEECH_TEXT_TOO_LONG'
  | 'ENGINE_FAILED'
  | 'ENGINE_TIMEOUT'
  | 'ENGINE_UNAVAILABLE'
  | 'ENGINE_CONTEXT_EXCEEDED'
  | 'ENGINE_MISCONFIGURED'
  /** The embedded chat model is being fetched or loaded; `details.percent` says how far. */
  | 'MODEL_LOADING'
  /** The embedded chat model could not be fetched or loaded; the message says what to do. */
  | 'MODEL_UNAVAILABLE'
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

/**
 * An engine's failure by what went wrong; `PAYLOAD_TOO_LARGE` and `UNSUPPORTED_MEDIA_TYPE` when
 * the engine refused what the person sent (a recording too large, or one it cannot read), which
 * they can change, as opposed to a failure of the engine.
 */
export type EngineErrorCode = Extract<
  ErrorCode,
  | 'ENGINE_FAILED'
  | 'ENGINE_TIMEOUT'
  | 'ENGINE_UNAVAILABLE'
  | 'ENGINE_CONTEXT_EXCEEDED'
  | 'ENGINE_MISCONFIGURED'
  | 'MODEL_LOADING'
  | 'MODEL_UNAVAILABLE'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
>;

/** What an engine does for us, which is how a person knows it: "the chat engine". */
export type EnginePurpose = 'chat' | 'embedding' | 'speech' | 'image' | 'training' | 'transcription';

export interface EngineErrorOptions extends AppErrorOptions {
  /** Which engine failed, e.g. `openai-compatible`. */
  provider: string;
  /** What the engine is for; names it in the message a person reads. */
  purpose?: EnginePurpose | undefined;
  /** The upstream HTTP status, when the engine answered at all. */
  status?: number;
  /** Whether the same request may succeed when tried again later. */
  retryable?: boolean;
  /** Chosen from `status` and the detail when absent (see `engineCodeFor`). */
  code?: EngineErrorCode;
  /**
   * A message we wrote for this very case, to show instead of the one chosen by code. It must
   * hold nothing the engine said and no address: only what the person or operator can do.
   */
  publicMessage?: string;
  /** What the engine's refusal means, when the adapter recognised it, so the core can act on it. */
  reason?: EngineFailureReason;
}

/**
 * Refusals the core answers differently: `context-exceeded` (the prompt was longer than the
 * engine's context: send less and try again), `images-unsupported` (the model takes no image parts).
 */
export type EngineFailureReason = 'context-exceeded' | 'images-unsupported';

/** How long the log excerpt of an engine's own words may be. */
export const MAXIMUM_UPSTREAM_CHARACTERS = 500;

/**
 * A failure of an external engine. Its `message` is always one we wrote from the code, the
 * status and the engine's purpose: engines echo prompts (llama-server's 500 repeats the whole
 * prompt, other people's private memories included), internal addresses and keys in their
 * errors, so what they said never reaches an answer. That detail, bounded and redacted, is
 * kept in `upstream` for the log only; it is not enumerable, so no serializer emits it.
 */
export class EngineError extends AppError {
  override readonly name = 'EngineError';
  readonly provider: string;
  readonly purpose: EnginePurpose | undefined;
  readonly status: number | undefined;
  readonly retryable: boolean;
  readonly reason: EngineFailureReason | undefined;
  declare readonly upstream: string;

  /** `detail` is what happened in the adapter's words, the engine's text included: it goes to the log only. */
  constructor(detail: string, options: EngineErrorOptions) {
    // A refusal read as too long for the context is that, whatever status carried it (llama-server: a 500).
    const code = options.code ?? (options.reason === 'context-exceeded' ? 'ENGINE_CONTEXT_EXCEEDED' : engineCodeFor(options.status, detail));
    const message = options.publicMessage ?? engineMessage(code, options.purpose, options.status);
    super(code, message, { ...(options.cause === undefined ? {} : { cause: options.cause }), ...(options.details === undefined ? {} : { details: options.details }) });
    Object.defineProperty(this, 'upstream', { value: redactUpstream(detail), enumerable: false });
    this.provider = options.provider;
    this.reason = options.reason;
    this.purpose = options.purpose;
    this.status = options.status;
    this.retryable = options.retryable ?? isRetryableStatus(options.status);
  }
}

/** llama-server, vLLM, OpenAI and Ollama each say "the prompt is too long" in their own words. */
const CONTEXT_EXCEEDED = /context (size|length|window)|exceeds? the (available )?context|maximum context|too many tokens|prompt is too long|context_length_exceeded/i;

/** The stable code for an engine's answer: by status, and for a refusal, by what it refused. */
export function engineCodeFor(status: number | undefined, detail = ''): EngineErrorCode {
  if (status === undefined) return 'ENGINE_FAILED';
  if ((status === 400 || status === 413 || status === 422) && CONTEXT_EXCEEDED.test(detail)) return 'ENGINE_CONTEXT_EXCEEDED';
  if (status === 401 || status === 403 || status === 404) return 'ENGINE_MISCONFIGURED';
  if (status === 408 || status === 504) return 'ENGINE_TIMEOUT';
  if (status === 429 || status === 502 || status === 503) return 'ENGINE_UNAVAILABLE';
  return 'ENGINE_FAILED';
}

/** What happened and what to do, for a person; nothing in it comes from the engine. */
export function engineMessage(code: EngineErrorCode, purpose: EnginePurpose | undefined, status?: number): string {
  const engine = purpose === undefined ? 'An engine we use' : `The ${purpose} engine`;
  switch (code) {
    case 'ENGINE_UNAVAILABLE':
      return status === 429
        ? `${engine} is busy right now. Try again in a minute.`
        : `${engine} cannot be reached right now. Try again in a minute; if it lasts, tell the operator.`;
    case 'ENGINE_TIMEOUT':
      return `${engine} took too long to answer. Try again in a moment.`;
    case 'ENGINE_CONTEXT_EXCEEDED':
      return `This conversation is too long for ${engine.charAt(0).toLowerCase()}${engine.slice(1)} to read at once. Send a shorter message, or clear the conversation to start afresh.`;
    case 'ENGINE_MISCONFIGURED':
      return `${engine} is not set up correctly on our side (it refused our credentials or model). Nothing you sent is at fault; the operator has to fix it.`;
    case 'ENGINE_FAILED':
      return status !== undefined && status >= 400 && status < 500
        ? `${engine} refused this request. Try rephrasing it or leaving out images; if it keeps happening, tell the operator.`
        : `${engine} failed to answer. Try again; if it keeps failing, tell the operator.`;
    case 'MODEL_LOADING':
      return `${engine} is still loading its model. Try again in a minute.`;
    case 'MODEL_UNAVAILABLE':
      return `${engine} has no model to answer with. The operator has to fix it (the service log says what is missing).`;
    case 'PAYLOAD_TOO_LARGE':
      return `${engine} refused what was sent as too large. Send something smaller.`;
    case 'UNSUPPORTED_MEDIA_TYPE':
      return `${engine} could not read what was sent. Send it in another format.`;
  }
}

/**
 * An engine's words made fit for the log: data URLs and long base64 runs (images, audio),
 * bearer tokens, API keys and credentials in URLs removed, and the whole bounded.
 */
export function redactUpstream(text: string, limit = MAXIMUM_UPSTREAM_CHARACTERS): string {
  const redacted = text
    .replace(/data:[\w.+-]+\/[\w.+-]+(;[\w=.+-]+)*;base64,[A-Za-z0-9+/=]*/gi, 'data:[redacted]')
    .replace(/[A-Za-z0-9+/]{200,}={0,2}/g, (run) => `[${run.length} base64 characters]`)
    .replace(/\b(bearer|basic)\s+[\w.~+/=-]+/gi, '$1 [redacted]')
    .replace(/\b(sk|r8|xi|hf)[-_][\w-]{12,}/g, '[redacted key]')
    .replace(/\b([a-z][a-z\d+.-]*:\/\/)[^\s/@:]*(:[^\s/@]*)?@/gi, '$1[redacted]@');
  return redacted.length <= limit ? redacted : `${redacted.slice(0, limit)}…`;
}

/** 408, 409, 429 and 5xx are worth retrying; other answers will not change by waiting. */
export function isRetryableStatus(status: number | undefined): boolean {
  if (status === undefined) return true;
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/**
 * A swipe or a regeneration asked of a message that is not the conversation's newest, or not a
 * character's: the conversation went on from it (or it was never a reply to write again).
 */
export function greetingNotRegenerated(messageId: string): AppError {
  return new AppError(
    'GREETING_NOT_REGENERATED',
    "The newest message is the character's greeting: greetings are swiped, not rewritten. Swipe to another of its greetings, or send a message for the character to answer.",
    { details: { messageId } },
  );
}

export function notNewestReply(messageId: string): AppError {
  return new AppError('NOT_NEWEST_REPLY', 'The conversation has moved on: only the newest reply, with nothing said after it, can be written again or swiped.', {
    details: { messageId },
  });
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

/** The one answer when an account holds as many characters as it may. */
export function characterLimitReached(limit: number): AppError {
  return new AppError('CHARACTER_LIMIT_REACHED', `An account holds at most ${limit} characters; delete one before making another.`, { details: { limit } });
}
