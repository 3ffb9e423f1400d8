import { DiscordAPIError } from 'discord.js';
import { AppError, EngineError } from '../core/errors.js';

/** Discord's JSON error codes the bot explains in words. */
const discordCodes: Record<number, string> = {
  50001: 'I cannot see that channel. Give me the View Channel permission there.',
  50013: 'I am missing a permission in this channel (for example Send Messages, Create Threads or Attach Files).',
  50035: 'Discord refused the message as malformed.',
  10003: 'That channel no longer exists.',
  10008: 'That message no longer exists.',
};

export interface ExplainOptions {
  /**
   * Whether the person's message was stored before the engine failed, as chat messages are, so
   * they need not write it again (default true: the chat paths). Other requests (speech, images)
   * are simply tried again.
   */
  messageSaved?: boolean;
}

/** Which engine failed, in words: its provider when the error names one (`espeak`, `replicate`, …). */
function engineName(error: AppError): string {
  return error instanceof EngineError ? `The ${error.provider} engine` : 'The engine';
}

/**
 * One sentence a person can act on, for anything that went wrong. Core errors already carry
 * such a message; engine failures say which engine, not the person, is at fault.
 */
export function explainError(error: unknown, options: ExplainOptions = {}): string {
  if (error instanceof AppError) {
    const saved = options.messageSaved ?? true;
    const engine = engineName(error);
    switch (error.code) {
      case 'ENGINE_UNAVAILABLE':
        return saved
          ? `${engine} is down right now, so I cannot answer. Your message is saved; try again in a while. (${error.message})`
          : `${engine} is down right now. Try again in a while. (${error.message})`;
      case 'ENGINE_TIMEOUT':
        return `${engine} took too long to answer. ${saved ? 'Your message is saved; try again.' : 'Try again.'} (${error.message})`;
      case 'ENGINE_FAILED':
        return `${engine} failed to answer. ${saved ? 'Your message is saved; try again.' : 'Try again.'} (${error.message})`;
      default:
        return error.message;
    }
  }
  if (error instanceof DiscordAPIError && typeof error.code === 'number' && discordCodes[error.code]) {
    return discordCodes[error.code]!;
  }
  return 'Something went wrong on my side and the request was not completed. Try again.';
}
