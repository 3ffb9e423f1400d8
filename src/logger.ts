import { pino, type Logger, type DestinationStream } from 'pino';
import type { Config } from './config.js';
import { EngineError } from './core/errors.js';

/** The one pino logger; modules get `logger.child({ module })`. Secrets never reach the log. */
export function createLogger(level: Config['logLevel'], destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'likeness' },
      // Webhook URLs carry their token (interaction replies, persona webhooks): in a Discord
      // error's url, and in a rate-limit error's major parameter (`id/token`).
      redact: {
        paths: ['apiKey', '*.apiKey', 'token', '*.token', 'authorization', '*.authorization', 'headers.authorization', 'secret', 'err.url', 'err.requestBody', 'err.majorParameter', 'err.cause.url'],
        censor: '[redacted]',
      },
      serializers: { err: serializeError },
    },
    destination,
  );
}

/**
 * pino's error fields, plus what an engine said (`upstream`, already bounded and redacted):
 * kept off `EngineError`'s enumerable fields so no answer carries it, it reaches the log here.
 */
function serializeError(error: unknown): unknown {
  const fields = pino.stdSerializers.err(error as Error);
  return error instanceof EngineError ? { ...fields, upstream: error.upstream } : fields;
}
