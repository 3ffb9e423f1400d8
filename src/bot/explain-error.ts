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

/**
 * One sentence a person can act on, for anything that went wrong. Core errors already carry
 * such a message, and an engine's is written by us from its code (what the engine said and
 * where it lives go to the log only); a chat user also learns that their message is kept.
 */
export function explainError(error: unknown, options: ExplainOptions = {}): string {
  if (error instanceof EngineError) {
    if (error.purpose === 'transcription') {
      // A recording the engine refused is not kept (its message says what to send instead); one
      // it failed to write down is kept in the conversation, unheard.
      const refusedRecording = error.code === 'PAYLOAD_TOO_LARGE' || error.code === 'UNSUPPORTED_MEDIA_TYPE';
      return refusedRecording ? error.message : `${error.message} Your recording is kept, but I could not hear it: send it again or type it.`;
    }
    return options.messageSaved ?? true ? `${error.message} Your message is saved.` : error.message;
  }
  if (error instanceof AppError) return error.message;
  if (error instanceof DiscordAPIError && typeof error.code === 'number' && discordCodes[error.code]) {
    return discordCodes[error.code]!;
  }
  return 'Something went wrong on my side and the request was not completed. Try again.';
}
