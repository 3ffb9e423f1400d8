import { DiscordAPIError } from 'discord.js';
import { describe, expect, it } from 'vitest';
import { explainError } from '../../src/bot/explain-error.js';
import { AppError, EngineError } from '../../src/core/errors.js';

describe('explainError', () => {
  it('says when the engine is down, slow or failing, and that the message is kept', () => {
    const down = explainError(new EngineError('Chat engine at http://x is unreachable', { provider: 'p', purpose: 'chat', code: 'ENGINE_UNAVAILABLE' }));
    expect(down).toContain('cannot be reached');
    expect(down).toContain('saved');
    expect(explainError(new EngineError('no answer in 60 s', { provider: 'p', code: 'ENGINE_TIMEOUT' }))).toContain('took too long');
    expect(explainError(new EngineError('answered 500', { provider: 'p', status: 500 }))).toContain('failed to answer');
  });

  it('never shows what the engine said or where it lives', () => {
    const leaky = new EngineError('Chat engine at http://127.0.0.1:8080/v1 answered 500: Private note: the bank PIN is 4321', { provider: 'p', purpose: 'chat', status: 500 });
    const shown = explainError(leaky);
    expect(shown).toBe('The chat engine failed to answer. Try again; if it keeps failing, tell the operator. Your message is saved.');
    expect(leaky.upstream).toContain('4321');
  });

  it('passes on the core’s own messages and explains Discord’s permission errors', () => {
    expect(explainError(new AppError('BALANCE_INSUFFICIENT', 'This needs 4 credits and the balance is 1.'))).toBe('This needs 4 credits and the balance is 1.');
    const missing = new DiscordAPIError({ code: 50013, message: 'Missing Permissions' }, 50013, 403, 'POST', '/channels/1/messages', {});
    expect(explainError(missing)).toContain('missing a permission');
    expect(explainError(new Error('boom'))).toContain('Try again');
  });
});
