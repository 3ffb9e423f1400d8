import type { CallOptions, ChatModel, ChatRequest, ChatResult, ChatStreamPart } from '../core/ports.js';
import type { ChatOutcome, Metrics } from './metrics.js';

/**
 * A chat model that reports to `metrics` what the one it wraps does: time to first token and
 * output speed of every stream, the outcome of every call. The wiring file wraps the engine
 * once (`withChatMetrics(chatModel, metrics)`); core and the adapters stay unaware of it.
 */
export function withChatMetrics(model: ChatModel, metrics: Metrics, clock: () => number = performance.now.bind(performance)): ChatModel {
  const provider = model.provider;
  return {
    provider,
    modelId: model.modelId,
    async generate(request: ChatRequest, options?: CallOptions): Promise<ChatResult> {
      try {
        const result = await model.generate(request, options);
        metrics.chat.outcome(provider, 'ok');
        return result;
      } catch (error) {
        metrics.chat.outcome(provider, chatOutcomeOf(error, options?.signal));
        throw error;
      }
    },
    async *stream(request: ChatRequest, options?: CallOptions): AsyncIterable<ChatStreamPart> {
      const sent = clock();
      let firstAt: number | undefined;
      let lastAt = sent;
      let characters = 0;
      let tokens: number | undefined;
      let outcome: ChatOutcome | undefined;
      try {
        for await (const part of model.stream(request, options)) {
          if (part.type === 'text' && part.text.length > 0) {
            lastAt = clock();
            if (firstAt === undefined) {
              firstAt = lastAt;
              metrics.chat.firstToken(provider, (firstAt - sent) / 1000);
            } else {
              // Speed is measured after the first text, which arrives after the prompt is read.
              characters += part.text.length;
            }
          } else if (part.type === 'finish') {
            const completionTokens = part.usage?.completionTokens;
            // The first token came with the first text, outside the measured span.
            tokens = completionTokens === undefined ? undefined : Math.max(0, completionTokens - 1);
          }
          yield part;
        }
        outcome = 'ok';
      } catch (error) {
        outcome = chatOutcomeOf(error, options?.signal);
        throw error;
      } finally {
        // A consumer that stops reading early (its own length limit) got what it wanted,
        // unless it stopped by aborting the call.
        outcome ??= options?.signal?.aborted ? 'canceled' : 'ok';
        metrics.chat.outcome(provider, outcome);
        if (firstAt !== undefined && lastAt > firstAt) {
          metrics.chat.throughput(provider, { seconds: (lastAt - firstAt) / 1000, characters, tokens });
        }
      }
    },
  };
}

/**
 * The outcome label of a failed call, from the `AppError` code every engine adapter throws
 * (`ENGINE_TIMEOUT`, `ENGINE_CONTEXT_EXCEEDED`, …); an aborted call is the caller's cancel.
 */
export function chatOutcomeOf(error: unknown, signal?: AbortSignal): ChatOutcome {
  if (signal?.aborted) return 'canceled';
  const code = typeof error === 'object' && error !== null && 'code' in error ? error.code : undefined;
  if (code === 'ENGINE_TIMEOUT') return 'timeout';
  if (code === 'ENGINE_CONTEXT_EXCEEDED') return 'context_exceeded';
  return 'failed';
}
