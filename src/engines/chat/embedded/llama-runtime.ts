/**
 * llama.cpp in this process: one model in memory and one context whose sequences are the
 * parallel slots. It is fetched (when LLM_MODEL names one to download) and loaded in the
 * background after start-up; until it is ready, every chat is refused at once with
 * `MODEL_LOADING` (how far it is) or `MODEL_UNAVAILABLE` (what to do), and `/readyz` says why.
 */
import { getLlama, LlamaChat, LlamaLogLevel, resolveChatWrapper, type ChatHistoryItem, type Llama, type LlamaContext, type LlamaModel } from 'node-llama-cpp';
import { EngineError } from '../../../core/errors.js';
import type { Logger } from '../../../core/ports.js';
import { checkGgufHeader } from './gguf-header.js';
import { ModelFileError } from './model-file-error.js';
import { availableCores, defaultParallel } from './machine.js';
import { gateSampling } from './sampling-gate.js';
import { SlotPool } from './slot-pool.js';

export const EMBEDDED_PROVIDER = 'embedded';

const defaultRetryMs = 5 * 60_000;

/** One parallel slot: a context sequence, its chat, and what it last held (for prefix reuse). */
export interface LlamaSlot {
  readonly index: number;
  readonly chat: LlamaChat;
  /** The history evaluated last on this sequence, reply included: its tokens are still cached. */
  history: readonly ChatHistoryItem[];
}

/** The loaded engine, as requests use it. */
export interface LoadedLlama {
  readonly model: LlamaModel;
  readonly context: LlamaContext;
  readonly slots: SlotPool<LlamaSlot>;
  /** Tokens each slot holds: prompt plus reply. */
  readonly contextTokens: number;
  readonly parallel: number;
  readonly threads: number;
}

/** Where the model is on its way to answering; `percent` while it is fetched. */
export type RuntimeStatus =
  | { state: 'fetching'; percent?: number | undefined; detail?: string | undefined }
  | { state: 'loading' }
  | { state: 'ready'; contextTokens: number; parallel: number; threads: number }
  /** `reason` is for the operator (/readyz, the log) and may name files; `publicReason` is what a person who chats reads. */
  | { state: 'failed'; reason: string; publicReason: string };

/** Progress the model file reports while it is fetched. */
export interface FetchProgress {
  percent?: number | undefined;
  /** e.g. "waiting for another process to fetch it". */
  detail?: string | undefined;
}

/** Turns LLM_MODEL into a local file, fetching it when needed; rejects with what a person should do. */
export type ModelFileSource = (onProgress: (progress: FetchProgress) => void, signal: AbortSignal) => Promise<string>;

export interface LlamaRuntimeOptions {
  /** LLM_MODEL as configured, for messages and the log. */
  modelName: string;
  modelFile: ModelFileSource;
  gpu: 'auto' | 'off';
  /** 0: the cores this process may use. */
  threads: number;
  /** 0: chosen from cores and memory. */
  parallel: number;
  /** Tokens per slot; undefined: what the model was trained for, split by the slots, capped by memory. */
  contextTokens?: number | undefined;
  /** How long after a fetch the network failed the model is fetched again (default five minutes). */
  retryMs?: number | undefined;
  logger: Logger;
}

export class LlamaRuntime {
  #status: RuntimeStatus = { state: 'fetching' };
  #loaded: LoadedLlama | undefined;
  #llama: Llama | undefined;
  #starting: Promise<void> | undefined;
  #retry: NodeJS.Timeout | undefined;
  readonly #stop = new AbortController();

  constructor(private readonly options: LlamaRuntimeOptions) {}

  /** Fetches and loads the model in the background; `ready()` follows it. */
  start(): void {
    this.#starting ??= this.#attempt();
  }

  /**
   * One try at fetching and loading. A failure the network may mend by itself (the host
   * unreachable, a download cut too often) is tried again later, so a service started offline
   * answers once it is back online; one that needs a change (a wrong LLM_MODEL, a damaged file)
   * waits for that change and a restart.
   */
  async #attempt(): Promise<void> {
    try {
      await this.#start();
    } catch (error) {
      if (this.#stop.signal.aborted) return;
      const again = error instanceof ModelFileError && error.transient ? (this.options.retryMs ?? defaultRetryMs) : undefined;
      const reason = error instanceof Error ? error.message : String(error);
      this.#status = { state: 'failed', reason: again === undefined ? reason : `${reason} (trying again in ${Math.round(again / 1000)} s)`, publicReason: publicReasonOf(error) };
      this.options.logger.error(
        { err: error, model: this.options.modelName, ...(again === undefined ? {} : { retryInSeconds: Math.round(again / 1000) }) },
        again === undefined
          ? 'the chat model could not be made ready; chats answer MODEL_UNAVAILABLE until it is fixed and the service restarted'
          : 'the chat model could not be fetched; chats answer MODEL_UNAVAILABLE, and it is tried again later',
      );
      if (again !== undefined) {
        this.#retry = setTimeout(() => {
          this.#starting = this.#attempt();
        }, again).unref();
      }
    }
  }

  /** Marks the engine as never to be loaded here, saying why, so a chat that reaches it is told. */
  stand(reason: string): void {
    this.#status = { state: 'failed', reason, publicReason: 'this part of the service does not answer chats.' };
  }

  /** Settles once the model is loaded or has failed for good. */
  async ready(): Promise<RuntimeStatus> {
    this.start();
    await this.#starting;
    return this.#status;
  }

  get status(): RuntimeStatus {
    return this.#status;
  }

  /** The loaded engine, or the refusal a chat gets at once while there is none. */
  loaded(): LoadedLlama {
    if (this.#loaded) return this.#loaded;
    const status = this.#status;
    if (status.state === 'failed') {
      throw new EngineError(`the embedded chat model is unavailable: ${status.reason}`, {
        provider: EMBEDDED_PROVIDER,
        purpose: 'chat',
        code: 'MODEL_UNAVAILABLE',
        retryable: false,
        publicMessage: `The chat model is not available: ${status.publicReason}`,
      });
    }
    const percent = status.state === 'fetching' ? status.percent : undefined;
    const progress = percent === undefined ? (status.state === 'loading' ? 'it is being loaded' : 'it is being fetched') : `${Math.floor(percent)}% of it is fetched`;
    throw new EngineError(`the embedded chat model is not ready (${status.state})`, {
      provider: EMBEDDED_PROVIDER,
      purpose: 'chat',
      code: 'MODEL_LOADING',
      retryable: true,
      publicMessage: `The chat model is not ready yet: ${progress}. Try again in a minute.`,
      details: { state: status.state, ...(percent === undefined ? {} : { percent: Math.floor(percent) }) },
    });
  }

  /** The tokens one slot holds, once loaded. */
  get contextTokens(): number | undefined {
    return this.#loaded?.contextTokens;
  }

  async close(): Promise<void> {
    this.#stop.abort();
    clearTimeout(this.#retry);
    await this.#starting?.catch(() => undefined);
    const loaded = this.#loaded;
    this.#loaded = undefined;
    loaded?.slots.rejectAll(new EngineError('the embedded chat engine is closing', { provider: EMBEDDED_PROVIDER, purpose: 'chat', code: 'ENGINE_UNAVAILABLE' }));
    await loaded?.context.dispose().catch(() => undefined);
    await loaded?.model.dispose().catch(() => undefined);
    await disposeLlama(this.#llama);
  }

  /** The context and its slots: LLM_PARALLEL sequences, each with its chat on the model's own template. */
  async #createSlots(model: LlamaModel, threads: number): Promise<LoadedLlama> {
    const configured = this.options.contextTokens;
    const parallel = this.options.parallel > 0 ? this.options.parallel : defaultParallel(threads, await slotBytes(model, configured ?? Math.min(model.trainContextSize, 8192)));
    const perSlot = configured ?? Math.max(256, Math.floor(model.trainContextSize / parallel));
    const context = await model.createContext({
      sequences: parallel,
      // A configured size is taken as it is (an error if memory is short); the default may shrink to fit memory.
      contextSize: configured ?? { max: perSlot, min: Math.min(perSlot, 1024) },
      threads,
    });
    try {
      gateSampling(context);
      // The model's own template, worked out once (it costs a few hundred ms) and shared by every slot.
      const chatWrapper = resolveChatWrapper(model);
      const slots: LlamaSlot[] = [];
      for (let index = 0; index < parallel; index += 1) slots.push({ index, chat: new LlamaChat({ contextSequence: context.getSequence(), chatWrapper }), history: [] });
      return { model, context, slots: new SlotPool(slots), contextTokens: context.contextSize, parallel, threads };
    } catch (error) {
      await context.dispose().catch(() => undefined);
      throw error;
    }
  }

  async #start(): Promise<void> {
    const { logger } = this.options;
    const signal = this.#stop.signal;
    const fetching = this.options.modelFile((progress) => {
      this.#status = { state: 'fetching', percent: progress.percent, detail: progress.detail };
    }, signal);
    // Closing must not wait on a source that does not heed the signal; the listener goes with the attempt.
    let onAbort: () => void = () => {};
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
    });
    const modelPath = await Promise.race([fetching, aborted]).finally(() => signal.removeEventListener('abort', onAbort));
    signal.throwIfAborted();
    await checkGgufHeader(modelPath);
    this.#status = { state: 'loading' };
    const threads = this.options.threads > 0 ? this.options.threads : availableCores();
    const began = performance.now();
    const llama = await openLlama({ gpu: this.options.gpu, threads, logger });
    this.#llama = llama;
    signal.throwIfAborted();
    const model = await llama.loadModel({ modelPath, loadSignal: signal, ...(this.options.gpu === 'off' ? { gpuLayers: 0 } : {}) });
    let loaded: LoadedLlama;
    try {
      loaded = await this.#createSlots(model, threads);
      signal.throwIfAborted();
    } catch (error) {
      // A model that never serves must not stay in memory (about a gigabyte) while chats are refused.
      await model.dispose().catch(() => undefined);
      throw error;
    }
    const { parallel } = loaded;
    this.#loaded = loaded;
    this.#status = { state: 'ready', contextTokens: loaded.contextTokens, parallel, threads };
    logger.info(
      {
        model: this.options.modelName,
        file: modelPath,
        trainedContextTokens: model.trainContextSize,
        contextTokens: loaded.contextTokens,
        parallel,
        threads,
        gpu: llama.gpu,
        loadMs: Math.round(performance.now() - began),
      },
      'the chat model is loaded',
    );
  }
}

/**
 * What a person who chats may read of why the model is missing: what it is and who can fix
 * it, never a file's path nor the library's own words (those are in the log and /readyz).
 */
function publicReasonOf(error: unknown): string {
  if (!(error instanceof ModelFileError)) return 'it could not be loaded. The operator has to fix it (the service log and /readyz say why).';
  switch (error.code) {
    case 'MODEL_HOST_UNREACHABLE':
      return 'the host it is downloaded from cannot be reached. It is tried again every few minutes; if it lasts, tell the operator.';
    case 'MODEL_DOWNLOAD_FAILED':
      return 'its download failed. It is tried again every few minutes; if it lasts, tell the operator.';
    default:
      return 'the configured model (LLM_MODEL) could not be found or used. The operator has to fix it (the service log and /readyz say why).';
  }
}

/** llama.cpp's binding, from the prebuilt binaries only: nothing is compiled or downloaded, at install or at start. */
export function openLlama(options: { gpu: 'auto' | 'off'; threads: number; logger: Logger }): Promise<Llama> {
  return getLlama({
    gpu: options.gpu === 'off' ? false : 'auto',
    build: 'never',
    skipDownload: true,
    progressLogs: false,
    maxThreads: options.threads,
    logLevel: LlamaLogLevel.warn,
    logger: (level, message) => logLlama(options.logger, level, message),
  });
}

/** How long closing waits for the binding to let go. */
const disposeGraceMs = 2_000;

/**
 * Releases the binding, waiting a bounded time: after a model failed to load, node-llama-cpp
 * never returns a guard that model took, and the binding's dispose then waits for good.
 */
export async function disposeLlama(llama: Llama | undefined): Promise<void> {
  if (llama === undefined) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([llama.dispose().catch(() => undefined), new Promise<void>((resolve) => (timer = setTimeout(resolve, disposeGraceMs).unref()))]);
  clearTimeout(timer);
}

/** The KV cache one slot of `contextTokens` takes, as the library estimates it (0 when it cannot). */
async function slotBytes(model: LlamaModel, contextTokens: number): Promise<number> {
  try {
    return (await model.fileInsights.estimateContextResourceRequirementsV2({ contextSize: contextTokens, modelGpuLayers: model.gpuLayers, sequences: 1 })).cpuRam;
  } catch {
    return 0;
  }
}

/** llama.cpp's own lines go to our log at their level; they never reach a user. */
function logLlama(logger: Logger, level: LlamaLogLevel, message: string): void {
  const text = message.trim();
  if (text === '') return;
  if (level === LlamaLogLevel.error || level === LlamaLogLevel.fatal) logger.error({ llama: text }, 'llama.cpp reported an error');
  else if (level === LlamaLogLevel.warn) logger.warn({ llama: text }, 'llama.cpp warned');
  else logger.debug({ llama: text }, 'llama.cpp');
}
