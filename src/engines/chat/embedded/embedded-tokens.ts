/**
 * Token counts from the embedded model's own tokenizer: exact, and free (no request). Until the
 * model is loaded, counts are the conservative estimate; chats are refused then anyway.
 */
import type { TokenCounter } from '../../../core/ports.js';
import { LearningTokenEstimator } from '../../../core/tokens.js';
import type { LlamaRuntime } from './llama-runtime.js';

export function createEmbeddedTokenCounter(runtime: LlamaRuntime): TokenCounter {
  const estimator = new LearningTokenEstimator();
  const loadedModel = () => (runtime.status.state === 'ready' ? runtime.loaded().model : undefined);
  return {
    get exact() {
      return loadedModel() !== undefined;
    },
    async count(texts) {
      const model = loadedModel();
      if (model === undefined) return estimator.count(texts);
      // Special-token text in what people write stays text, as the chat template treats it.
      return texts.map((text) => model.tokenize(text, false).length);
    },
    observe() {
      // Counts are exact: there is nothing to learn.
    },
    async engineContext() {
      return runtime.contextTokens;
    },
  };
}
