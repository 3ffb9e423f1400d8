import { Writable } from 'node:stream';
import { DiscordAPIError, RateLimitError } from 'discord.js';
import { AppError } from '../../src/core/errors.js';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';

function sink(): { stream: Writable; lines: () => Array<Record<string, any>> } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, callback) {
      chunks.push(String(chunk));
      callback();
    },
  });
  return { stream, lines: () => chunks.join('').trim().split('\n').map((line) => JSON.parse(line)) };
}

describe('createLogger', () => {
  it('keeps keys, tokens and Discord webhook URLs (which carry interaction tokens) out of the log', () => {
    const { stream, lines } = sink();
    const logger = createLogger('info', stream);
    const error = new DiscordAPIError(
      { code: 50027, message: 'Invalid Webhook Token' },
      50027,
      401,
      'PATCH',
      'https://discord.com/api/v10/webhooks/1/secret-interaction-token/messages/@original',
      { body: { content: 'hello' }, files: undefined },
    );
    logger.error({ err: error, apiKey: 'lk_secret', headers: { authorization: 'Bearer lk_secret' } }, 'failed');
    const [line] = lines();
    expect(JSON.stringify(line)).not.toContain('secret');
    expect(line!.err.url).toBe('[redacted]');
    expect(line!.err.message).toBe('Invalid Webhook Token');
  });

  it('keeps persona webhook tokens out of the log: in a wrapped Discord error and in a rate-limit error', () => {
    const { stream, lines } = sink();
    const logger = createLogger('info', stream);
    const url = 'https://discord.com/api/v10/webhooks/1/webhook-token-secret/messages/2?thread_id=3';
    const unknown = new DiscordAPIError({ code: 10015, message: 'Unknown Webhook' }, 10015, 404, 'PATCH', url, { body: { content: 'hi' }, files: undefined });
    logger.warn({ err: new AppError('NOT_FOUND', 'That character message can no longer be edited.', { cause: unknown }) }, 'edit failed');
    logger.warn({ err: unknown }, 'edit failed');
    const limited = new RateLimitError({
      global: false,
      method: 'PATCH',
      url,
      route: '/webhooks/:id/:token/messages/:id',
      majorParameter: '1/webhook-token-secret',
      hash: 'bucket',
      limit: 5,
      timeToReset: 1000,
      retryAfter: 1000,
      sublimitTimeout: 0,
      scope: 'user',
    });
    logger.warn({ err: limited }, 'rate limited');
    expect(lines()).toHaveLength(3);
    for (const line of lines()) expect(JSON.stringify(line)).not.toContain('secret');
  });
});
