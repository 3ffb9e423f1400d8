/**
 * Shared set-up for the chat engine tests: a fake server per file and a model pointed at it.
 */
import { afterAll, afterEach, beforeAll } from 'vitest';
import type { ChatModel, ChatStreamPart } from '../../src/core/ports.js';
import {
  createOpenAICompatibleChatModel,
  type OpenAICompatibleChatModel,
  type OpenAICompatibleChatOptions,
} from '../../src/engines/chat/openai-compatible.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/fake-openai.js';

export interface ChatTestContext {
  fake: FakeOpenAI;
  /** A model on the fake with short timeouts, closed after the file. */
  model(overrides?: Partial<OpenAICompatibleChatOptions>): OpenAICompatibleChatModel;
}

/** Starts one fake for the file; the script and recorded requests reset after each test. */
export function useFakeChat(): ChatTestContext {
  const models: OpenAICompatibleChatModel[] = [];
  const context = {} as ChatTestContext;
  beforeAll(async () => {
    context.fake = await startFakeOpenAI();
  });
  afterEach(() => {
    context.fake.setScript({});
    context.fake.requests.length = 0;
  });
  afterAll(async () => {
    await Promise.all(models.map((model) => model.close()));
    await context.fake.close();
  });
  context.model = (overrides = {}) => {
    const model = createOpenAICompatibleChatModel({
      baseURL: context.fake.baseURL,
      model: 'fake-model',
      connectTimeoutMs: 1_000,
      headersTimeoutMs: 2_000,
      bodyTimeoutMs: 2_000,
      ...overrides,
    });
    models.push(model);
    return model;
  };
  return context;
}

export interface Collected {
  parts: ChatStreamPart[];
  text: string;
  /** `performance.now()` at which each part arrived. */
  arrivals: number[];
}

/** Reads a whole stream, keeping the parts read before any error on `error.parts`. */
export async function collect(stream: AsyncIterable<ChatStreamPart>): Promise<Collected> {
  const collected: Collected = { parts: [], text: '', arrivals: [] };
  try {
    for await (const part of stream) {
      collected.parts.push(part);
      collected.arrivals.push(performance.now());
      if (part.type === 'text') collected.text += part.text;
    }
  } catch (error) {
    Object.assign(error as object, { parts: collected.parts });
    throw error;
  }
  return collected;
}

export const userSays = (text: string): Parameters<ChatModel['stream']>[0] => ({
  messages: [{ role: 'user', content: text }],
});
