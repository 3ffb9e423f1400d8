import { DiscordAPIError } from 'discord.js';
import { AppError } from '../core/errors.js';

/** Discord's JSON error codes the bot explains in words. */
const discordCodes: Record<number, string> = {
  50001: 'I cannot see that channel. Give me the View Channel permission there.',
  50013: 'I am missing a permission in this channel (for example Send Messages, Create Threads or Attach Files).',
  50035: 'Discord refused the message as malformed.',
  10003: 'That channel no longer exists.',
  10008: 'That message no longer exists.',
};

/**
 * One sentence a person can act on, for anything that went wrong. Core errors already carry
 * such a message; engine failures say that the engine, not the person, is at fault.
 */
export function explainError(error: unknown): string {
  if (error instanceof AppError) {
    switch (error.code) {
      case 'ENGINE_UNAVAILABLE':
        return `The chat engine is down right now, so I cannot answer. Your message is saved; try again in a while. (${error.message})`;
      case 'ENGINE_TIMEOUT':
        return `The chat engine took too long to answer. Your message is saved; try again. (${error.message})`;
      case 'ENGINE_FAILED':
        return `The chat engine failed to answer. Your message is saved; try again. (${error.message})`;
      default:
        return error.message;
    }
  }
  if (error instanceof DiscordAPIError && typeof error.code === 'number' && discordCodes[error.code]) {
    return discordCodes[error.code]!;
  }
  return 'Something went wrong on my side and the request was not completed. Try again.';
}
