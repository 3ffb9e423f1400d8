/**
 * The chat engine the configuration names, with what goes with it: the token counter, the
 * embedder, the context a request may hold, and the state `/readyz` reports. Embedded
 * (llama.cpp in this process) when LLM_BASE_URL is unset; an OpenAI-compatible server otherwise.
 */
import type { Logger } from 'pino';
import { type Config, defaultRemoteContextTokens } from './config.js';
import type { ChatModel, Embedder, TokenCounter } from './core/ports.js';
import { createEmbeddedChatModel } from './engines/chat/embedded/embedded-chat.js';
import { createEmbeddedEmbedder } from './engines/chat/embedded/embedded-embedder.js';
import { resolveModelFile } from './engines/chat/embedded/model-file.js';
import { createEmbeddedTokenCounter } from './engines/chat/embedded/embedded-tokens.js';
import { LlamaRuntime, type ModelFileSource, type RuntimeStatus } from './engines/chat/embedded/llama-runtime.js';
import { checkEngineContext } from './engines/chat/engine-context-check.js';
import { createLlamaServerTokenCounter } from './engines/chat/llama-server-tokens.js';
import { createOpenAICompatibleChatModel } from './engines/chat/openai-compatible.js';
import { createOpenAICompatibleEmbedder } from './engines/chat/openai-embeddings.js';

import type { ChatModelHealth } from './http/routes/health.js';

export interface ChatEngine {
  chatModel: ChatModel;
  tokenCounter: TokenCounter;
  embedder: Embedder | undefined;
  /** Tokens one request may hold: configured, or the embedded engine's slot once it is loaded. */
  contextTokens: number | (() => number);
  /** Undefined in a process that does not chat (ROLES without api or a bot of its own). */
  health(): ChatModelHealth | undefined;
  close(): Promise<void>;
}


/**
 * Whether this process answers chats: the API does, and the bot does where it runs in this
 * process (a shard manager's shards chat in their own processes). Only these load the
 * embedded model: a worker process holds no copy of it.
 */
export function processChats(config: Config): boolean {
  const { roles, discord } = config;
  return roles.has('api') || (roles.has('bot') && discord.token !== undefined && discord.shards === undefined);
}

export function createChatEngine(config: Config, logger: Logger): ChatEngine {
  return config.llm.engine === 'embedded' ? createEmbeddedEngine(config, logger) : createRemoteEngine(config, logger);
}

function createRemoteEngine(config: Config, logger: Logger): ChatEngine {
  const baseURL = config.llm.baseUrl ?? '';
  const timeouts = { connectTimeoutMs: config.llm.connectTimeoutMs, headersTimeoutMs: config.llm.headersTimeoutMs, bodyTimeoutMs: config.llm.idleTimeoutMs };
  const chatModel = createOpenAICompatibleChatModel({ baseURL, apiKey: config.llm.apiKey, model: config.llm.model, ...timeouts });
  // Exact counts where the engine is llama-server (/tokenize); elsewhere an estimate that learns.
  const tokenCounter = createLlamaServerTokenCounter({ baseURL, apiKey: config.llm.apiKey, logger: logger.child({ module: 'tokens' }), ...timeouts });
  // Read at start, so a slot smaller than configured is in the log before the first refusal.
  // Set by the configuration for a server (its default when unset); the type also covers the embedded engine.
  const contextTokens = config.llm.contextTokens ?? defaultRemoteContextTokens;
  void checkEngineContext({ tokenCounter, configuredContextTokens: contextTokens, logger: logger.child({ module: 'tokens' }) });
  const embedder = config.embeddingsModel ? createOpenAICompatibleEmbedder({ baseURL, apiKey: config.llm.apiKey, model: config.embeddingsModel, ...timeouts }) : undefined;
  return {
    chatModel,
    tokenCounter,
    embedder,
    contextTokens,
    // A remote engine's health is its own: it is asked at every chat, not probed here.
    health: () => ({ ready: true, engine: 'openai-compatible', model: config.llm.model }),
    close: async () => {
      await Promise.allSettled([chatModel.close(), tokenCounter.close(), embedder?.close()]);
    },
  };
}

function createEmbeddedEngine(config: Config, logger: Logger): ChatEngine {
  const { embedded } = config.llm;
  const runtime = new LlamaRuntime({
    modelName: config.llm.model,
    modelFile: modelFileSource(config.llm.model, config, logger.child({ module: 'model-file' })),
    gpu: embedded.gpu,
    threads: embedded.threads,
    parallel: embedded.parallel,
    contextTokens: config.llm.contextTokens,
    logger: logger.child({ module: 'llama' }),
  });
  const chats = processChats(config);
  if (chats && (config.storeUrl.startsWith('postgres') || config.discord.shards !== undefined)) {
    // Several processes: each one that chats would hold its own copy of the model in memory.
    logger.warn(
      { model: config.llm.model },
      'the embedded chat engine loads the model into every process that chats; with several processes (a shared PostgreSQL store, DISCORD_SHARDS) set LLM_BASE_URL to one llama-server or vLLM instead (README: Running at scale)',
    );
  }
  if (chats) runtime.start();
  else runtime.stand('this process does not answer chats (ROLES has neither api nor a bot of its own)');
  const chatModel = createEmbeddedChatModel(runtime, config.llm.model);
  // A second, small model in the same process: memories ranked by meaning, not only words.
  const embedder = config.embeddingsModel && chats
    ? createEmbeddedEmbedder({
        modelName: config.embeddingsModel,
        modelFile: modelFileSource(config.embeddingsModel, config, logger.child({ module: 'model-file' })),
        gpu: embedded.gpu,
        threads: embedded.threads,
        logger: logger.child({ module: 'embeddings' }),
      })
    : undefined;
  return {
    chatModel,
    tokenCounter: createEmbeddedTokenCounter(runtime),
    embedder,
    // Until the model is loaded its slot is unknown: no message is refused as too long for a guess,
    // the engine itself refuses the chat with MODEL_LOADING (the message is kept).
    contextTokens: () => runtime.contextTokens ?? config.llm.contextTokens ?? Number.MAX_SAFE_INTEGER,
    health: () => (chats ? healthOf(runtime.status, config.llm.model) : undefined),
    close: async () => {
      await Promise.allSettled([runtime.close(), embedder?.close()]);
    },
  };
}

function healthOf(status: RuntimeStatus, model: string): ChatModelHealth {
  const engine = 'embedded';
  switch (status.state) {
    case 'ready':
      return { ready: true, engine, model };
    case 'failed':
      return { ready: false, engine, model, state: 'failed', reason: status.reason };
    case 'loading':
      return { ready: false, engine, model, state: 'loading', reason: 'the model is being loaded into memory' };
    case 'fetching':
      return {
        ready: false,
        engine,
        model,
        state: 'fetching',
        reason: status.detail ?? 'the model is being fetched',
        ...(status.percent === undefined ? {} : { percent: Math.floor(status.percent) }),
      };
  }
}

/** The model file `model` names (a path, an hf: URI, a URL), fetched into DATA_DIR/models when it is not there yet. */
function modelFileSource(model: string, config: Config, logger: Logger): ModelFileSource {
  return (onProgress, signal) =>
    resolveModelFile({
      model,
      directory: config.llm.embedded.modelsDir,
      huggingFace: config.llm.embedded.huggingFace,
      logger,
      signal,
      onState: (state) => {
        if (state.state === 'downloading') onProgress({ percent: state.percent, detail: 'the model is being fetched' });
        else if (state.state === 'waiting-for-other-process') onProgress({ detail: 'another process on this DATA_DIR is fetching the model' });
      },
    });
}
