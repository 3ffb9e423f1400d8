import { pino, type Logger, type DestinationStream } from 'pino';
import type { Config } from './config.js';

/** The one pino logger; modules get `logger.child({ module })`. Secrets never reach the log. */
export function createLogger(level: Config['logLevel'], destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'likeness' },
      redact: {
        paths: ['apiKey', '*.apiKey', 'token', '*.token', 'authorization', '*.authorization', 'headers.authorization', 'secret', 'err.url', 'err.requestBody'],
        censor: '[redacted]',
      },
      serializers: { err: pino.stdSerializers.err },
    },
    destination,
  );
}
