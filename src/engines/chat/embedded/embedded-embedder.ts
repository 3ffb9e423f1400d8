/**
 * Embeddings from a GGUF embedding model in this process (EMBEDDINGS_MODEL with the embedded
 * engine), to rank a character's memories. The model is fetched and loaded in the background;
 * until it is ready, `embed` fails and memories are ranked by their words (BM25) meanwhile.
 */
import type { Llama, LlamaEmbeddingContext, LlamaModel } from 'node-llama-cpp';
import { EngineError } from '../../../core/errors.js';
import type { Embedder, Logger } from '../../../core/ports.js';
import { checkGgufHeader } from './gguf-header.js';
import { disposeLlama, EMBEDDED_PROVIDER, type ModelFileSource, openLlama } from './llama-runtime.js';
import { availableCores } from './machine.js';

export interface EmbeddedEmbedderOptions {
  modelName: string;
  modelFile: ModelFileSource;
  gpu: 'auto' | 'off';
  threads: number;
  logger: Logger;
}

export interface EmbeddedEmbedder extends Embedder {
  /** Settles once the model is loaded, or failed (then `embed` keeps failing and words rank memories). */
  ready(): Promise<void>;
  close(): Promise<void>;
}

export function createEmbeddedEmbedder(options: EmbeddedEmbedderOptions): EmbeddedEmbedder {
  const stop = new AbortController();
  let llama: Llama | undefined;
  let model: LlamaModel | undefined;
  let context: LlamaEmbeddingContext | undefined;
  let failure: string | undefined;
  const loading = (async () => {
    const file = await options.modelFile(() => {}, stop.signal);
    await checkGgufHeader(file);
    const threads = options.threads > 0 ? options.threads : availableCores();
    llama = await openLlama({ gpu: options.gpu, threads, logger: options.logger });
    model = await llama.loadModel({ modelPath: file, loadSignal: stop.signal, ...(options.gpu === 'off' ? { gpuLayers: 0 } : {}) });
    context = await model.createEmbeddingContext({ threads });
    options.logger.info({ model: options.modelName, file }, 'the embeddings model is loaded');
  })().catch((error: unknown) => {
    failure = error instanceof Error ? error.message : String(error);
    if (!stop.signal.aborted) options.logger.error({ err: error, model: options.modelName }, 'the embeddings model could not be loaded; memories are ranked by their words');
  });

  return {
    modelId: options.modelName,
    ready: () => loading,
    async embed(texts) {
      const loaded = context;
      if (loaded === undefined) {
        throw new EngineError(failure === undefined ? 'the embeddings model is still loading' : `the embeddings model is unavailable: ${failure}`, {
          provider: EMBEDDED_PROVIDER,
          purpose: 'embedding',
          code: failure === undefined ? 'MODEL_LOADING' : 'MODEL_UNAVAILABLE',
        });
      }
      const vectors: number[][] = [];
      // One at a time: the context evaluates one text per call, and the chat shares the cores.
      for (const text of texts) vectors.push([...(await loaded.getEmbeddingFor(text)).vector]);
      return vectors;
    },
    async close() {
      stop.abort();
      await loading;
      await context?.dispose().catch(() => undefined);
      await model?.dispose().catch(() => undefined);
      await disposeLlama(llama);
    },
  };
}
