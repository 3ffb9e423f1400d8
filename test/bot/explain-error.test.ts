import { DiscordAPIError } from 'discord.js';
import { describe, expect, it } from 'vitest';
import { explainError } from '../../src/bot/explain-error.js';
import { AppError, EngineError } from '../../src/core/errors.js';

describe('explainError', () => {
  it('says when the engine is down, slow or failing, and that the message is kept', () => {
    const down = explainError(new EngineError('Chat engine at http://x is unreachable', { provider: 'p', code: 'ENGINE_UNAVAILABLE' }));
    expect(down).toContain('down');
    expect(down).toContain('saved');
    expect(explainError(new EngineError('no answer in 60 s', { provider: 'p', code: 'ENGINE_TIMEOUT' }))).toContain('took too long');
    expect(explainError(new EngineError('answered 500', { provider: 'p' }))).toContain('failed to answer');
  });

  it('passes on the core’s own messages and explains Discord’s permission errors', () => {
    expect(explainError(new AppError('BALANCE_INSUFFICIENT', 'This needs 4 credits and the balance is 1.'))).toBe('This needs 4 credits and the balance is 1.');
    const missing = new DiscordAPIError({ code: 50013, message: 'Missing Permissions' }, 50013, 403, 'POST', '/channels/1/messages', {});
    expect(explainError(missing)).toContain('missing a permission');
    expect(explainError(new Error('boom'))).toContain('Try again');
  });
});
