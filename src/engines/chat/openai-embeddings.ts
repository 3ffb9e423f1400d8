/**
 * An `Embedder` over an OpenAI-compatible `/embeddings` endpoint (OpenAI, llama-server with
 * `--embeddings`, Ollama `/v1`, LocalAI).
 */
import type { CallOptions, Embedder } from '../../core/ports.js';
import { OPENAI_COMPATIBLE_PROVIDER, createOpenAICompatibleClient, errorOf, field, isRecord, type OpenAICompatibleOptions } from './openai-wire.js';

export type OpenAICompatibleEmbedderOptions = OpenAICompatibleOptions;

/** An `Embedder` that can release its connections. */
export interface OpenAICompatibleEmbedder extends Embedder {
  readonly provider: string;
  close(): Promise<void>;
}

const LABEL = 'Embedding engine';

export function createOpenAICompatibleEmbedder(options: OpenAICompatibleEmbedderOptions): OpenAICompatibleEmbedder {
  const client = createOpenAICompatibleClient(LABEL, options, 'embedding');

  async function embed(texts: readonly string[], callOptions: CallOptions = {}): Promise<number[][]> {
    if (texts.length === 0) return [];
    const body = await client.postJson('/embeddings', { model: options.model, input: [...texts] }, callOptions.signal);
    const error = errorOf(body);
    if (error !== undefined) {
      throw client.error(`${LABEL} failed: ${error.message}`, error.status === undefined ? {} : { status: error.status });
    }
    const data = field(body, 'data');
    if (!Array.isArray(data)) throw client.error(`${LABEL} answered without a data list.`, { retryable: false });
    const vectors: number[][] = new Array<number[]>(texts.length);
    // Servers may answer out of order; `index` says which input each vector belongs to.
    data.forEach((item: unknown, position) => {
      const index = isRecord(item) && typeof item['index'] === 'number' ? item['index'] : position;
      const embedding = field(item, 'embedding');
      if (!Array.isArray(embedding) || !embedding.every((value) => typeof value === 'number')) {
        throw client.error(`${LABEL} answered an embedding that is not a list of numbers.`, { retryable: false });
      }
      if (index < 0 || index >= texts.length) {
        throw client.error(`${LABEL} answered an embedding for input ${index} of ${texts.length}.`, { retryable: false });
      }
      vectors[index] = embedding as number[];
    });
    for (let index = 0; index < texts.length; index += 1) {
      if (vectors[index] === undefined) {
        throw client.error(`${LABEL} answered no embedding for input ${index} of ${texts.length}.`, { retryable: false });
      }
    }
    return vectors;
  }

  return { provider: OPENAI_COMPATIBLE_PROVIDER, modelId: options.model, embed, close: () => client.close() };
}
