import { describe, expect, it } from 'vitest';
import { explainError } from '../../src/bot/explain-error.js';
import { AppError, EngineError } from '../../src/core/errors.js';

describe('explainError names the engine that failed', () => {
  it('says which engine by its provider, not always "chat"', () => {
    const speech = explainError(new EngineError('espeak crashed', { provider: 'espeak', code: 'ENGINE_FAILED' }), { messageSaved: false });
    expect(speech).toBe('The espeak engine failed to answer. Try again. (espeak crashed)');
    expect(speech).not.toContain('chat');
    const down = explainError(new EngineError('unreachable', { provider: 'replicate', code: 'ENGINE_UNAVAILABLE' }), { messageSaved: false });
    expect(down).toBe('The replicate engine is down right now. Try again in a while. (unreachable)');
  });

  it('tells a chat user their message is kept, and uses neutral words when no provider is known', () => {
    const chat = explainError(new EngineError('no answer in 60 s', { provider: 'openai-compatible', code: 'ENGINE_TIMEOUT' }));
    expect(chat).toBe('The openai-compatible engine took too long to answer. Your message is saved; try again. (no answer in 60 s)');
    expect(explainError(new AppError('ENGINE_FAILED', 'it broke'), { messageSaved: false })).toBe('The engine failed to answer. Try again. (it broke)');
  });
});
