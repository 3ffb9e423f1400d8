import { Writable } from 'node:stream';
import { DiscordAPIError } from 'discord.js';
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
});
