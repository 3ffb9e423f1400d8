import type { Interaction } from 'discord.js';
import { type RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import { AppError, EngineError } from '../core/errors.js';
import { type BotContext, type Command, answer, deferOnce, deferralOf } from './command.js';
import { explainError } from './explain-error.js';

/** Discord drops an interaction not acknowledged within 3 s; slow commands are deferred before that. */
const deferAfterMs = 2_000;

/**
 * Routes interactions to commands: the one place where a command's failure becomes a
 * message to the person, and where per-user command rates are limited.
 */
export function createInteractionHandler(commands: readonly Command[], context: BotContext, limiter: RateLimiterAbstract, commandsPerMinute: number) {
  const byName = new Map(commands.map((command) => [command.data.name, command]));

  return async (interaction: Interaction): Promise<void> => {
    if (interaction.isAutocomplete()) {
      const command = byName.get(interaction.commandName);
      try {
        await command?.autocomplete?.(interaction, context);
      } catch (error) {
        context.logger.warn({ err: error, command: interaction.commandName }, 'autocomplete failed');
        if (!interaction.responded) await interaction.respond([]).catch(() => undefined);
      }
      return;
    }
    if (!interaction.isChatInputCommand() && !interaction.isButton()) return;
    const name = interaction.isChatInputCommand() ? interaction.commandName : interaction.customId.split(':')[0]!;
    const command = byName.get(name);
    if (!command) return;
    const log = { command: name, userId: interaction.user.id, channelId: interaction.channelId };
    const timer = setTimeout(() => {
      deferOnce(interaction, command.ephemeral).catch((error: unknown) => {
        context.logger.warn({ ...log, err: error }, 'could not defer');
      });
    }, deferAfterMs);
    try {
      await consume(limiter, interaction.user.id, commandsPerMinute);
      if (interaction.isChatInputCommand()) {
        if (deferralOf(command, interaction) === 'at-once') await deferOnce(interaction, command.ephemeral);
        await command.execute(interaction, context);
      }
      else if (command.button) await command.button(interaction, context);
    } catch (error) {
      const level = error instanceof AppError && error.code !== 'INTERNAL' ? 'info' : 'error';
      context.logger[level]({ ...log, err: error }, 'command failed');
      // Chat messages are stored before the engine runs; other requests are not kept.
      const messageSaved = error instanceof EngineError && error.provider === context.core.chatModel.provider;
      await answer(interaction, explainError(error, { messageSaved })).catch((replyError: unknown) => {
        context.logger.warn({ ...log, err: replyError }, 'could not tell the user about a failure');
      });
    } finally {
      clearTimeout(timer);
    }
  };
}

/** Takes one point for the user, or throws RATE_LIMITED saying when to try again. */
export async function consume(limiter: RateLimiterAbstract, key: string, perMinute: number): Promise<void> {
  try {
    await limiter.consume(key);
  } catch (rejection) {
    if (!(rejection instanceof RateLimiterRes)) throw rejection;
    const seconds = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
    throw new AppError('RATE_LIMITED', `Slow down: at most ${perMinute} a minute. Try again in ${seconds} s.`, {
      details: { retryAfterSeconds: seconds },
    });
  }
}
