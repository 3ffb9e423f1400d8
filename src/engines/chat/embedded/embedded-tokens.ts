/**
 * Token counts from the embedded model's own tokenizer: exact, and free (no request). Until the
 * model is loaded, counts are the conservative estimate; chats are refused then anyway.
 */
import type { ChatHistoryItem, LlamaChat, LlamaModel } from 'node-llama-cpp';
import type { PromptFraming, TokenCounter } from '../../../core/ports.js';
import { LearningTokenEstimator } from '../../../core/tokens.js';
import type { LlamaRuntime } from './llama-runtime.js';

export function createEmbeddedTokenCounter(runtime: LlamaRuntime): TokenCounter {
  const estimator = new LearningTokenEstimator();
  const loaded = () => (runtime.status.state === 'ready' ? runtime.loaded() : undefined);
  let framing: { model: LlamaModel; framing: PromptFraming } | undefined;
  return {
    get exact() {
      return loaded() !== undefined;
    },
    async count(texts) {
      const model = loaded()?.model;
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
    async promptFraming() {
      const engine = loaded();
      if (engine === undefined) return undefined;
      if (framing?.model !== engine.model) framing = { model: engine.model, framing: measureFraming(engine.model, engine.slots.peek().chat) };
      return framing.framing;
    },
  };
}

/**
 * What the model's template adds, measured by rendering it: one exchange, then two, the
 * difference less their words is two messages' framing; the rest of the first is the prompt's own.
 */
function measureFraming(model: LlamaModel, chat: LlamaChat): PromptFraming {
  const tokens = (history: ChatHistoryItem[]) => chat.chatWrapper.generateContextState({ chatHistory: history }).contextText.tokenize(model.tokenizer).length;
  const words = (text: string) => model.tokenize(text, false).length;
  const one = tokens([{ type: 'user', text: 'x' }, { type: 'model', response: [] }]);
  const three = tokens([{ type: 'user', text: 'x' }, { type: 'model', response: ['y'] }, { type: 'user', text: 'z' }, { type: 'model', response: [] }]);
  const messageTokens = Math.max(0, Math.ceil((three - one - words('y') - words('z')) / 2));
  return { messageTokens, promptTokens: Math.max(0, one - messageTokens - words('x')) };
}
