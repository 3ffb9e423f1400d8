/**
 * A `TokenCounter` that asks llama.cpp's `llama-server` (`POST /tokenize`, outside the OpenAI
 * `/v1` path) for exact counts, and estimates where the server has no such route (any other
 * OpenAI-compatible engine answers 404; then it is never asked again) or fails.
 *
 * `/tokenize` takes one text a call. The calls go over a couple of connections only: llama-server
 * gives every open connection, idle kept-alive ones too, one of its few HTTP threads, so one
 * connection per text held the threads the chat streams were waiting for (thirty counts took
 * 30 s that way, 0.6 s over two connections). Counts are kept per text.
 */
import { EngineError } from '../../core/errors.js';
import type { CallOptions, Logger, PromptFraming, TokenCounter } from '../../core/ports.js';
import { LearningTokenEstimator } from '../../core/tokens.js';
import { measurePromptFraming } from './llama-server-template.js';
import { createOpenAICompatibleClient, field, type OpenAICompatibleOptions } from './openai-wire.js';

export interface LlamaServerTokenCounterOptions extends Omit<OpenAICompatibleOptions, 'model'> {
  logger?: Logger;
  /** Counts kept per text, so history is not tokenised again on every message. */
  cacheEntries?: number;
}

/** Connections the counter keeps to llama-server: give `--threads-http` these beside `-np`. */
export const TOKENIZE_CONNECTIONS = 2;

/** llama-server serves `/tokenize` and `/props` beside `/v1`, at the server's root. */
export function serverRoot(openAIBaseURL: string): string {
  return openAIBaseURL.replace(/\/+$/, '').replace(/\/v1$/, '');
}

export interface LlamaServerTokenCounter extends TokenCounter {
  /** The context of one slot (`-c` / `-np`) as `GET /props` reports it; undefined when unknown. */
  engineContext(options?: CallOptions): Promise<number | undefined>;
  /** The chat template's framing, measured once (`/apply-template`); undefined where the server has no such route. */
  promptFraming(): Promise<PromptFraming | undefined>;
  close(): Promise<void>;
}

export function createLlamaServerTokenCounter(options: LlamaServerTokenCounterOptions): LlamaServerTokenCounter {
  const client = createOpenAICompatibleClient('Chat engine tokenizer', {
    connections: TOKENIZE_CONNECTIONS,
    ...options,
    baseURL: serverRoot(options.baseURL),
  });
  const estimator = new LearningTokenEstimator();
  const cache = new Map<string, number>();
  const cacheEntries = options.cacheEntries ?? 4096;
  let supported = true;
  let framing: Promise<PromptFraming | undefined> | undefined;

  async function tokenize(text: string, addSpecial: boolean, signal?: AbortSignal): Promise<number> {
    const tokens = field(await client.postJson('/tokenize', { content: text, add_special: addSpecial }, signal), 'tokens');
    if (!Array.isArray(tokens)) throw client.error('Chat engine tokenizer answered without tokens.', { retryable: false });
    return tokens.length;
  }

  async function countOne(text: string, signal: AbortSignal | undefined): Promise<number> {
    const known = cache.get(text);
    if (known !== undefined) return known;
    const count = await tokenize(text, false, signal);
    if (cache.size >= cacheEntries) cache.delete(cache.keys().next().value as string);
    cache.set(text, count);
    return count;
  }

  return {
    get exact() {
      return supported;
    },
    async count(texts, callOptions = {}) {
      if (supported) {
        try {
          return await Promise.all(texts.map((text) => countOne(text, callOptions.signal)));
        } catch (error) {
          if (error instanceof EngineError && error.status === 404) {
            supported = false;
            options.logger?.info({ provider: client.provider }, 'the chat engine has no /tokenize; token counts are estimated');
          } else {
            options.logger?.warn({ err: error }, 'token counting failed; estimating instead');
          }
        }
      }
      return estimator.count(texts);
    },
    observe(estimatedTokens, promptTokens) {
      if (!supported) estimator.observe(estimatedTokens, promptTokens);
    },
    async engineContext(callOptions = {}) {
      try {
        const response = await client.send({ method: 'GET', path: '/props', signal: callOptions.signal });
        const nCtx = field(field(await client.readJson(response, callOptions.signal), 'default_generation_settings'), 'n_ctx');
        return typeof nCtx === 'number' && nCtx > 0 ? nCtx : undefined;
      } catch {
        return undefined;
      }
    },
    promptFraming() {
      if (!supported) return Promise.resolve(undefined);
      framing ??= measurePromptFraming(client, tokenize).catch((error: unknown) => {
        // An answered refusal (404 from builds without the route, 500 from a template that refuses
        // the probe) stands: never asked again. A failure to reach the engine is asked again next time.
        if (!(error instanceof EngineError && error.status !== undefined)) framing = undefined;
        options.logger?.info({ err: error }, 'the chat template could not be measured; a safe margin is counted for it');
        return undefined;
      });
      return framing;
    },
    close: () => client.close(),
  };
}
