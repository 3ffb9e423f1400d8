import { describe, expect, it } from 'vitest';
import { EngineError, engineCodeFor, redactUpstream } from '../../src/core/errors.js';

describe('EngineError', () => {
  it('writes its own message and keeps the engine’s words out of every enumerable field', () => {
    const error = new EngineError('Chat engine at http://10.0.0.5:8080/v1 answered 500: Private note: the bank PIN is 4321', {
      provider: 'openai-compatible',
      purpose: 'chat',
      status: 500,
    });
    expect(error.message).toBe('The chat engine failed to answer. Try again; if it keeps failing, tell the operator.');
    expect(error.upstream).toContain('4321');
    expect(JSON.stringify(error)).not.toContain('4321');
    expect(JSON.stringify({ ...error })).not.toContain('10.0.0.5');
    expect(Object.keys(error)).not.toContain('upstream');
  });

  it('picks a stable code from the status and, for a refusal, from what was refused', () => {
    expect(engineCodeFor(400, 'the request exceeds the available context size. try increasing the context size')).toBe('ENGINE_CONTEXT_EXCEEDED');
    expect(engineCodeFor(400, "This model's maximum context length is 8192 tokens")).toBe('ENGINE_CONTEXT_EXCEEDED');
    expect(engineCodeFor(400, 'Unsupported content part type')).toBe('ENGINE_FAILED');
    expect(engineCodeFor(401)).toBe('ENGINE_MISCONFIGURED');
    expect(engineCodeFor(404)).toBe('ENGINE_MISCONFIGURED');
    expect(engineCodeFor(429)).toBe('ENGINE_UNAVAILABLE');
    expect(engineCodeFor(503)).toBe('ENGINE_UNAVAILABLE');
    expect(engineCodeFor(504)).toBe('ENGINE_TIMEOUT');
    expect(engineCodeFor(500, 'context size')).toBe('ENGINE_FAILED');
    expect(engineCodeFor(undefined)).toBe('ENGINE_FAILED');
  });
});

describe('redactUpstream', () => {
  it('removes images, tokens, keys and credentials in URLs, and bounds the excerpt', () => {
    const image = `data:image/png;base64,${'iVBORw0KGgo'.repeat(40)}`;
    const text = `failed on ${image} with Authorization: Bearer abc.def-ghi and key sk-proj-abcdefghijklmnop from https://user:hunter2@engine.internal/v1 and ${'QUJD'.repeat(80)}`;
    const redacted = redactUpstream(text);
    expect(redacted).toContain('data:[redacted]');
    expect(redacted).not.toContain('iVBORw0KGgo');
    expect(redacted).toContain('Bearer [redacted]');
    expect(redacted).not.toContain('abc.def-ghi');
    expect(redacted).not.toContain('sk-proj-abcdefghijklmnop');
    expect(redacted).not.toContain('hunter2');
    expect(redacted).toContain('https://[redacted]@engine.internal/v1');
    expect(redacted).toContain('[320 base64 characters]');
    expect(redactUpstream('word '.repeat(400))).toHaveLength(501);
  });
});
