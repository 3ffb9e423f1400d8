/**
 * A `ChatModel` over any OpenAI-compatible `/chat/completions` endpoint: OpenAI, llama-server,
 * Ollama (`/v1`), vLLM, LocalAI. Providers are data: a base URL, an optional key, a model name.
 */
import { EngineError } from '../../core/errors.js';
import type { CallOptions, ChatModel, ChatRequest, ChatResult, ChatStreamPart } from '../../core/ports.js';
import type { EngineClient, EngineResponse } from '../http.js';
import { createChatStreamDecoder } from './chat-stream-decoder.js';
import {
  OPENAI_COMPATIBLE_PROVIDER,
  type OpenAICompatibleOptions,
  chatFailureReason,
  contentOf,
  createOpenAICompatibleClient,
  errorOf,
  field,
  finishReasonOf,
  firstChoice,
  toWireRequest,
  truncatedOf,
  usageOf,
} from './openai-wire.js';

export { OPENAI_COMPATIBLE_PROVIDER };
export type OpenAICompatibleChatOptions = OpenAICompatibleOptions;

/** A `ChatModel` that can release its connections. */
export interface OpenAICompatibleChatModel extends ChatModel {
  /** Closes the connection pool this model owns (not a caller-owned dispatcher). */
  close(): Promise<void>;
}

const LABEL = 'Chat engine';

export function createOpenAICompatibleChatModel(options: OpenAICompatibleChatOptions): OpenAICompatibleChatModel {
  const client = createOpenAICompatibleClient(LABEL, options, 'chat');
  const { model } = options;

  return {
    provider: OPENAI_COMPATIBLE_PROVIDER,
    modelId: model,
    generate: (request, callOptions = {}) => generate(client, model, request, callOptions),
    stream: (request, callOptions = {}) => streamChat(client, model, request, callOptions),
    close: () => client.close(),
  };
}

async function generate(client: EngineClient, model: string, request: ChatRequest, options: CallOptions): Promise<ChatResult> {
  const response = await client.send({
    path: '/chat/completions',
    body: JSON.stringify(toWireRequest(model, request, false)),
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    signal: options.signal,
    reasonOf: chatFailureReason,
  });
  return resultOf(client, await client.readJson(response, options.signal));
}

/** Reads a whole (non-streamed) completion. */
function resultOf(client: EngineClient, body: unknown): ChatResult {
  const error = errorOf(body);
  if (error !== undefined) {
    throw client.error(`${LABEL} failed: ${error.message}`, error.status === undefined ? {} : { status: error.status });
  }
  const choice = firstChoice(body);
  if (choice === undefined) throw client.error(`${LABEL} answered without any choice.`, { retryable: false });
  const result: ChatResult = {
    text: contentOf(field(choice, 'message')),
    finishReason: finishReasonOf(choice) ?? 'unknown',
  };
  const usage = usageOf(body);
  if (usage !== undefined) result.usage = usage;
  if (truncatedOf(body)) result.truncated = true;
  return result;
}

async function* streamChat(
  client: EngineClient,
  model: string,
  request: ChatRequest,
  options: CallOptions,
): AsyncGenerator<ChatStreamPart, void, undefined> {
  const { signal } = options;
  const response = await client.send({
    path: '/chat/completions',
    body: JSON.stringify(toWireRequest(model, request, true)),
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    signal,
    reasonOf: chatFailureReason,
  });
  const body = response.body;
  if (String(response.headers['content-type']).includes('application/json')) {
    // Some servers ignore `stream: true` and answer the whole completion at once.
    yield* wholeAnswer(client, response, signal);
    return;
  }
  // Iterated by hand: a `for await` would destroy the body on `break`, and so the socket too,
  // even after [DONE] when only the end of the body is still on its way.
  const chunks = body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  // `stream: true` keeps a multi-byte character split across two chunks whole. (undici's
  // body ignores `setEncoding`, so the decoding is done here.)
  const utf8 = new TextDecoder();
  const decoder = createChatStreamDecoder((message, errorOptions) => client.error(message, errorOptions));
  try {
    try {
      for (let next = await chunks.next(); next.done !== true; next = await chunks.next()) {
        for (const text of decoder.feed(utf8.decode(next.value, { stream: true }))) yield { type: 'text', text };
        // Text already buffered must not outlive an abort that came while the consumer worked.
        signal?.throwIfAborted();
        if (decoder.failure !== undefined) throw decoder.failure;
        if (decoder.done) break;
      }
      for (const text of [...decoder.feed(utf8.decode()), ...decoder.end()]) yield { type: 'text', text };
      if (decoder.failure !== undefined) throw decoder.failure;
    } catch (thrown) {
      if (signal?.aborted) throw signal.reason;
      // A socket that drops or stalls after the finish reason has cost us nothing: the answer
      // is complete. Failures the engine itself reported are kept.
      if (thrown instanceof EngineError || decoder.finishReason === undefined) throw client.translate(thrown, signal);
    }
    yield decoder.finish();
  } finally {
    // After [DONE] the rest of the body is read in the background so the socket can serve the
    // next request; stopping any earlier (break, error, abort) must release the socket now.
    if (decoder.done && decoder.failure === undefined) void drain(chunks, body);
    else body.destroy();
  }
}

async function* wholeAnswer(client: EngineClient, response: EngineResponse, signal: AbortSignal | undefined): AsyncGenerator<ChatStreamPart, void, undefined> {
  const result = resultOf(client, await client.readJson(response, signal));
  if (result.text !== '') yield { type: 'text', text: result.text };
  const finish: ChatStreamPart = { type: 'finish', finishReason: result.finishReason };
  if (result.usage !== undefined) finish.usage = result.usage;
  if (result.truncated) finish.truncated = true;
  yield finish;
}

/** How long the end of a body may trail its [DONE] before the socket is given up. */
const DRAIN_GRACE_MS = 1_000;

async function drain(chunks: AsyncIterator<Buffer>, body: { destroy(): void }): Promise<void> {
  const timer = setTimeout(() => body.destroy(), DRAIN_GRACE_MS).unref();
  try {
    while ((await chunks.next()).done !== true) {
      // Whatever follows [DONE] carries nothing.
    }
  } catch {
    // The answer is already complete; a failure now only costs the socket.
  } finally {
    clearTimeout(timer);
  }
}
