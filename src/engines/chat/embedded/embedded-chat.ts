/**
 * The `ChatModel` on llama.cpp in this process. Each request borrows one of the context's
 * sequences (waiting in a fair queue when all are busy), is formatted with the model's own
 * chat template, checked to fit the slot with the model's own tokenizer (a prompt that does
 * not fit is refused as `context-exceeded`, as llama-server does, so the core sends less
 * history), and streamed as it is generated. Leaving the stream, or aborting, stops the
 * generation and frees the slot at once.
 */
import type { ChatHistoryItem, GbnfJsonSchema } from 'node-llama-cpp';
import { AsyncQueue } from '../../../core/async-queue.js';
import { EngineError } from '../../../core/errors.js';
import type { CallOptions, ChatMessage, ChatModel, ChatRequest, ChatResult, ChatStreamPart } from '../../../core/ports.js';
import { JsonSchemaGrammars } from './json-schema-grammars.js';
import { EMBEDDED_PROVIDER, type LlamaRuntime, type LlamaSlot, type LoadedLlama } from './llama-runtime.js';

/** Sampling for characters: varied but on topic. A request's own temperature wins. */
const sampling = { temperature: 0.8, topP: 0.95, minP: 0.05, topK: 40 } as const;

export interface EmbeddedChatModel extends ChatModel {
  close(): Promise<void>;
}

export function createEmbeddedChatModel(runtime: LlamaRuntime, modelId: string): EmbeddedChatModel {
  // The runtime loads one model for its life, so its grammars can be kept as long as this model.
  // The schema is typed loosely here; the library checks it as it builds.
  const grammars = new JsonSchemaGrammars((schema) => runtime.loaded().model.llama.createGrammarForJsonSchema<GbnfJsonSchema>(schema as GbnfJsonSchema));
  return {
    provider: EMBEDDED_PROVIDER,
    modelId,
    generate: (request, options) => generate(runtime, grammars, request, options),
    stream: (request, options) => stream(runtime, grammars, request, options),
    close: () => runtime.close(),
  };
}

async function generate(runtime: LlamaRuntime, grammars: JsonSchemaGrammars, request: ChatRequest, options: CallOptions = {}): Promise<ChatResult> {
  let text = '';
  for await (const part of stream(runtime, grammars, request, options)) {
    if (part.type === 'text') text += part.text;
    else return { text, finishReason: part.finishReason, ...(part.usage ? { usage: part.usage } : {}) };
  }
  throw failure('the embedded engine ended without a finish');
}

async function* stream(runtime: LlamaRuntime, grammars: JsonSchemaGrammars, request: ChatRequest, options: CallOptions = {}): AsyncGenerator<ChatStreamPart, void, undefined> {
  const loaded = runtime.loaded();
  const history = toHistory(request.messages);
  // Before a slot is taken: a schema that cannot be followed is refused without waiting in line.
  const grammar = request.responseFormat === undefined ? undefined : await grammars.forFormat(request.responseFormat);
  const { signal } = options;
  const slot = await loaded.slots.acquire({ affinity: (candidate) => sharedPrefix(candidate.history, history), signal, onQueued: options.onQueued, background: options.background });
  // Ours, so that a reader leaving the loop (break, throw) stops the generation too.
  const stop = new AbortController();
  const onAbort = () => stop.abort(signal?.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  let generation: Promise<unknown> | undefined;
  try {
    signal?.throwIfAborted();
    const promptTokens = countPrompt(loaded, slot, history);
    const room = loaded.contextTokens - promptTokens;
    if (room < 2) {
      throw new EngineError(`the prompt takes ${promptTokens} tokens and the slot holds ${loaded.contextTokens}: exceeds the available context size`, {
        provider: EMBEDDED_PROVIDER,
        purpose: 'chat',
        code: 'ENGINE_CONTEXT_EXCEEDED',
        reason: 'context-exceeded',
        retryable: false,
      });
    }
    // One token short of the slot's end: LlamaChat shifts the context (cutting history) on the last one.
    const maxTokens = Math.max(1, Math.min(request.maxTokens ?? room - 1, room - 1));
    const pieces = new AsyncQueue<string>();
    let completionTokens = 0;
    let stopReason: string | undefined;
    generation = slot.chat
      .generateResponse([...history, { type: 'model', response: [] }], {
        onTextChunk: (text) => pieces.push(text),
        onToken: (tokens) => {
          completionTokens += tokens.length;
        },
        signal: stop.signal,
        maxTokens,
        temperature: request.temperature ?? sampling.temperature,
        topP: sampling.topP,
        minP: sampling.minP,
        topK: sampling.topK,
        ...(grammar === undefined ? {} : { grammar }),
      })
      .then(
        (response) => {
          slot.history = [...history, { type: 'model', response: [response.response] }];
          stopReason = response.metadata.stopReason;
          pieces.end();
        },
        (error: unknown) => {
          // What the sequence holds is no longer known: no prefix is claimed for it.
          slot.history = [];
          pieces.fail(error);
        },
      );
    try {
      for await (const text of pieces) if (text !== '') yield { type: 'text', text };
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      throw failure('generation failed', error);
    }
    yield { type: 'finish', finishReason: stopReason === 'maxTokens' ? 'length' : 'stop', usage: { promptTokens, completionTokens } };
  } finally {
    signal?.removeEventListener('abort', onAbort);
    stop.abort();
    // The sequence is lent again only once its generation has really stopped.
    await generation;
    loaded.slots.release(slot);
  }
}

/** The model's own template applied to the messages, generation prompt included, in tokens. */
function countPrompt(loaded: LoadedLlama, slot: LlamaSlot, history: ChatHistoryItem[]): number {
  const { contextText } = slot.chat.chatWrapper.generateContextState({ chatHistory: [...history, { type: 'model', response: [] }] });
  return contextText.tokenize(loaded.model.tokenizer).length;
}

/** Our messages as the library's history; image parts are refused as llama-server refuses them. */
function toHistory(messages: readonly ChatMessage[]): ChatHistoryItem[] {
  return messages.map((message) => {
    const text = textOf(message);
    if (message.role === 'system') return { type: 'system', text };
    if (message.role === 'assistant') return { type: 'model', response: [text] };
    return { type: 'user', text };
  });
}

function textOf(message: ChatMessage): string {
  if (typeof message.content === 'string') return message.content;
  return message.content
    .map((part) => {
      if (part.type === 'text') return part.text;
      throw new EngineError('image input is not supported by this text-only model', {
        provider: EMBEDDED_PROVIDER,
        purpose: 'chat',
        code: 'ENGINE_FAILED',
        reason: 'images-unsupported',
        retryable: false,
      });
    })
    .join('\n');
}

/** How many leading history items two histories share: the slot whose cache fits best. */
function sharedPrefix(cached: readonly ChatHistoryItem[], next: readonly ChatHistoryItem[]): number {
  let shared = 0;
  while (shared < cached.length && shared < next.length && sameItem(cached[shared]!, next[shared]!)) shared += 1;
  return shared;
}

function sameItem(left: ChatHistoryItem, right: ChatHistoryItem): boolean {
  if (left.type !== right.type) return false;
  if (left.type === 'model' || right.type === 'model') return JSON.stringify(left) === JSON.stringify(right);
  return left.text === right.text;
}

function failure(detail: string, cause?: unknown): EngineError {
  const reason = cause instanceof Error ? `: ${cause.message}` : '';
  return new EngineError(`${detail}${reason}`, { provider: EMBEDDED_PROVIDER, purpose: 'chat', code: 'ENGINE_FAILED', retryable: true, ...(cause === undefined ? {} : { cause }) });
}
