import { describe, expect, it } from 'vitest';
import { EngineError } from '../../src/core/errors.js';
import type { ChatRequest } from '../../src/core/ports.js';
import { createLlamaServerTokenCounter, serverRoot } from '../../src/engines/chat/llama-server-tokens.js';
import { chatFailureReason } from '../../src/engines/chat/openai-wire.js';
import { fakeTemplate, fakeTokenCount, startFakeOpenAI } from '../fakes/fake-openai.js';
import { collect, useFakeChat, userSays } from './chat-helpers.js';

const withImage: ChatRequest = {
  messages: [
    { role: 'system', content: 'Private note: the bank PIN is 4321' },
    { role: 'user', content: [{ type: 'image', mimeType: 'image/png', data: new Uint8Array([1, 2, 3]) }, { type: 'text', text: 'look' }] },
  ],
};

describe('llama-server context, tokens and images over the wire', () => {
  const context = useFakeChat();

  it('counts tokens with /tokenize at the server root, and caches them', async () => {
    context.fake.setScript({ flavor: 'llama-server' });
    const counter = createLlamaServerTokenCounter({ baseURL: context.fake.baseURL });
    try {
      const texts = ['Hello there, how are you?', '你好世界', '🎉🎉', 'Привет'];
      expect(await counter.count(texts)).toEqual(texts.map(fakeTokenCount));
      expect(counter.exact).toBe(true);
      const tokenize = context.fake.requests.filter((request) => request.path === '/tokenize');
      expect(tokenize.map((request) => request.body)).toContainEqual({ content: '你好世界', add_special: false });
      await counter.count(texts);
      expect(context.fake.requests.filter((request) => request.path === '/tokenize')).toHaveLength(texts.length);
    } finally {
      await counter.close();
    }
  });

  it('counts many texts over two connections, leaving llama-server’s other HTTP threads to the chat', async () => {
    // Three threads (-np 1 on two cores); idle connections held for as long as the test runs.
    const engine = await startFakeOpenAI({ httpThreads: 3, keepAliveTimeoutMs: 60_000, script: { flavor: 'llama-server' } });
    const counter = createLlamaServerTokenCounter({ baseURL: engine.baseURL, headersTimeoutMs: 1_000 });
    try {
      const texts = Array.from({ length: 30 }, (_, index) => `text number ${index} ${'word '.repeat(index)}`);
      expect(await counter.count(texts)).toEqual(texts.map(fakeTokenCount));
      expect(engine.connectionCount()).toBeLessThanOrEqual(2);
    } finally {
      await counter.close();
      await engine.close();
    }
  });

  it('falls back to the estimate, for good, when the engine has no /tokenize', async () => {
    context.fake.setScript({ flavor: 'openai' });
    const counter = createLlamaServerTokenCounter({ baseURL: context.fake.baseURL });
    try {
      const [first] = await counter.count(['你好世界']);
      expect(first).toBeGreaterThanOrEqual(4);
      expect(counter.exact).toBe(false);
      await counter.count(['again']);
      expect(context.fake.requests.filter((request) => request.path === '/tokenize')).toHaveLength(1);
    } finally {
      await counter.close();
    }
  });

  it('measures the chat template as the engine applies it (/apply-template), and says nothing where it cannot', async () => {
    context.fake.setScript({ flavor: 'llama-server' });
    const counter = createLlamaServerTokenCounter({ baseURL: context.fake.baseURL });
    const older = createLlamaServerTokenCounter({ baseURL: context.fake.baseURL });
    try {
      // A token more each, for a boundary the tokenizer may merge differently in the whole prompt.
      expect(await counter.promptFraming()).toEqual({ messageTokens: fakeTemplate.messageTokens + 1, promptTokens: fakeTemplate.generationPromptTokens + 1 });
      context.fake.setScript({ flavor: 'llama-server', noApplyTemplate: true });
      expect(await older.promptFraming()).toBeUndefined();
      // Measured once.
      expect(await counter.promptFraming()).toEqual({ messageTokens: fakeTemplate.messageTokens + 1, promptTokens: fakeTemplate.generationPromptTokens + 1 });
      expect(context.fake.requests.filter((request) => request.path === '/apply-template')).toHaveLength(3);
    } finally {
      await Promise.all([counter.close(), older.close()]);
    }
  });

  it('reads the per-slot context from /props', async () => {
    context.fake.setScript({ flavor: 'llama-server', slotContext: 2048, slots: 4 });
    const counter = createLlamaServerTokenCounter({ baseURL: context.fake.baseURL });
    try {
      expect(await counter.engineContext()).toBe(2048);
      expect(serverRoot('http://127.0.0.1:8080/v1/')).toBe('http://127.0.0.1:8080');
    } finally {
      await counter.close();
    }
  });

  it('marks the 400 exceed_context_size_error as context exceeded, streamed (inside a 200 stream) or not', async () => {
    context.fake.setScript({ flavor: 'llama-server', slotContext: 16 });
    const model = context.model();
    const long = userSays('word '.repeat(100));
    const streamed = await collect(model.stream(long)).catch((error: unknown) => error);
    expect(streamed).toBeInstanceOf(EngineError);
    expect((streamed as EngineError).reason).toBe('context-exceeded');
    expect((streamed as EngineError).status).toBe(400);
    const whole = await model.generate(long).catch((error: unknown) => error);
    expect((whole as EngineError).reason).toBe('context-exceeded');
  });

  it('reads a refusal reported inside a stream as the same refusal answered by status', async () => {
    const model = context.model();
    context.fake.setScript({ failure: { kind: 'error-event', afterTokens: 0, code: 400, type: 'exceed_context_size_error', message: 'the request exceeds the available context size' } });
    expect(await collect(model.stream(userSays('x'))).catch((error: unknown) => error)).toMatchObject({ reason: 'context-exceeded', code: 'ENGINE_CONTEXT_EXCEEDED' });
    context.fake.setScript({ failure: { kind: 'error-event', afterTokens: 0, code: 500, message: 'image input is not supported - hint: you may need to provide the mmproj' } });
    expect(await collect(model.stream(userSays('x'))).catch((error: unknown) => error)).toMatchObject({ reason: 'images-unsupported' });
    context.fake.setScript({ flavor: 'llama-server', failure: { kind: 'legacy-error-line', afterTokens: 0, message: 'slot unavailable' } });
    expect(await collect(model.stream(userSays('x'))).catch((error: unknown) => error)).toMatchObject({ reason: undefined });
  });

  it('marks "context shift is disabled" (the reply reached the end of the slot) as context exceeded, by status and inside a stream', async () => {
    // 'hi' takes 9 tokens of the 11-token slot: two reply tokens fit.
    context.fake.setScript({ flavor: 'llama-server', slotContext: 11, tokens: ['a ', 'b ', 'c '] });
    const model = context.model();
    expect(await model.generate(userSays('hi')).catch((error: unknown) => error)).toMatchObject({ status: 500, reason: 'context-exceeded', code: 'ENGINE_CONTEXT_EXCEEDED' });
    const streamed = await collect(model.stream(userSays('hi'))).catch((error: unknown) => error);
    expect(streamed).toMatchObject({ reason: 'context-exceeded', parts: [{ type: 'text', text: 'a ' }, { type: 'text', text: 'b ' }] });
  });

  it('reports truncated: true when the engine shifted the context and says so', async () => {
    context.fake.setScript({ flavor: 'llama-server', slotContext: 16, contextShift: true, reportsTruncation: true, tokens: ['ok'] });
    const model = context.model();
    const { parts } = await collect(model.stream(userSays('word '.repeat(100))));
    // 133 tokens, less fifteen blocks of half the slot dropped from the front.
    expect(parts.at(-1)).toMatchObject({ type: 'finish', truncated: true, usage: { promptTokens: 13 } });
    expect(await model.generate(userSays('word '.repeat(100)))).toMatchObject({ truncated: true });
    const fits = await collect(model.stream(userSays('hi')));
    expect(fits.parts.at(-1)).not.toHaveProperty('truncated');
  });

  it('marks the 500 for image parts on a text-only model as images unsupported', async () => {
    context.fake.setScript({ flavor: 'llama-server', textOnly: true });
    const failure = await collect(context.model().stream(withImage)).catch((error: unknown) => error);
    expect((failure as EngineError).reason).toBe('images-unsupported');
    expect((failure as EngineError).status).toBe(500);
  });

  it('recognises the refusals other engines send too, and nothing else', () => {
    expect(chatFailureReason(400, '{"error":{"message":"This model\'s maximum context length is 8192 tokens.","code":"context_length_exceeded"}}')).toBe('context-exceeded');
    expect(chatFailureReason(400, '{"error":{"message":"image input is not supported by this model"}}')).toBe('images-unsupported');
    expect(chatFailureReason(500, '{"error":{"message":"image input is not supported - hint: you may need to provide the mmproj"}}')).toBe('images-unsupported');
    expect(chatFailureReason(500, '{"error":{"message":"out of memory"}}')).toBeUndefined();
    expect(chatFailureReason(400, '{"error":{"message":"invalid temperature"}}')).toBeUndefined();
  });
});
