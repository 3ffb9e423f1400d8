import { describe, expect, it } from 'vitest';
import { checkEngineContext } from '../../src/engines/chat/engine-context-check.js';
import { createLlamaServerTokenCounter } from '../../src/engines/chat/llama-server-tokens.js';
import { useFakeChat } from './chat-helpers.js';

/** A logger that keeps what it was asked to write. */
function recordingLogger() {
  const lines: Array<{ level: string; fields: object; message: string }> = [];
  const at = (level: string) => (fields: object, message: string) => void lines.push({ level, fields, message });
  return { lines, logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } };
}

describe('checking the engine context at start', () => {
  const context = useFakeChat();

  it('warns when the engine gives each request less context than configured, and is quiet otherwise', async () => {
    const tokenCounter = createLlamaServerTokenCounter({ baseURL: context.fake.baseURL });
    try {
      context.fake.setScript({ flavor: 'llama-server', slotContext: 2048, slots: 4 });
      const smaller = recordingLogger();
      expect(await checkEngineContext({ tokenCounter, configuredContextTokens: 8192, logger: smaller.logger })).toBe(2048);
      expect(smaller.lines).toEqual([{ level: 'warn', fields: { configured: 8192, engine: 2048 }, message: expect.stringContaining('LLM_CONTEXT_TOKENS') }]);
      const equal = recordingLogger();
      await checkEngineContext({ tokenCounter, configuredContextTokens: 2048, logger: equal.logger });
      expect(equal.lines).toEqual([]);
      // An engine without /props (OpenAI, Ollama) says nothing, and nothing is logged.
      context.fake.setScript({ flavor: 'openai' });
      const unknown = recordingLogger();
      expect(await checkEngineContext({ tokenCounter, configuredContextTokens: 8192, logger: unknown.logger })).toBeUndefined();
      expect(unknown.lines).toEqual([]);
    } finally {
      await tokenCounter.close();
    }
  });
});
