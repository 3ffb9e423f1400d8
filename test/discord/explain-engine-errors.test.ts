import { describe, expect, it } from 'vitest';
import { explainError } from '../../src/bot/explain-error.js';
import { AppError, EngineError } from '../../src/core/errors.js';

describe('explainError names the engine that failed', () => {
  it('says which engine by its purpose, not always "chat", and never quotes it', () => {
    const speech = explainError(new EngineError('espeak crashed', { provider: 'espeak', purpose: 'speech', code: 'ENGINE_FAILED' }), { messageSaved: false });
    expect(speech).toBe('The speech engine failed to answer. Try again; if it keeps failing, tell the operator.');
    const down = explainError(new EngineError('unreachable', { provider: 'replicate', purpose: 'image', code: 'ENGINE_UNAVAILABLE' }), { messageSaved: false });
    expect(down).toBe('The image engine cannot be reached right now. Try again in a minute; if it lasts, tell the operator.');
  });

  it('tells a chat user their message is kept, and uses neutral words when no purpose is known', () => {
    const chat = explainError(new EngineError('no answer in 60 s', { provider: 'openai-compatible', purpose: 'chat', code: 'ENGINE_TIMEOUT' }));
    expect(chat).toBe('The chat engine took too long to answer. Try again in a moment. Your message is saved.');
    expect(explainError(new EngineError('it broke', { provider: 'x' }), { messageSaved: false })).toBe('An engine we use failed to answer. Try again; if it keeps failing, tell the operator.');
    expect(explainError(new AppError('ENGINE_FAILED', 'it broke'), { messageSaved: false })).toBe('it broke');
  });
});
