/**
 * The OpenAI chat completions wire format: building request bodies and reading the answer
 * shapes that OpenAI, llama-server and Ollama actually send (see shared/notes/engines-wire.md).
 * Readers take `unknown` and never trust a field's presence or type.
 */
import type { Dispatcher } from 'undici';
import type { EngineFailureReason, EnginePurpose } from '../../core/errors.js';
import type { ChatContentPart, ChatMessage, ChatRequest, ChatUsage } from '../../core/ports.js';
import { createEngineClient, type EngineClient, type EngineTimeouts } from '../http.js';

export type WireContentPart =
  | { type: 'text'; text: string }
  | { type: 'image_url'; image_url: { url: string } };

export interface WireMessage {
  role: ChatMessage['role'];
  content: string | WireContentPart[];
}

export interface WireChatRequest {
  model: string;
  messages: WireMessage[];
  stream: boolean;
  stream_options?: { include_usage: true };
  max_tokens?: number;
  temperature?: number;
  response_format?: WireResponseFormat;
}

/** OpenAI's structured output, which vLLM, llama-server and Ollama (`/v1`) also read. */
export interface WireResponseFormat {
  type: 'json_schema';
  json_schema: { name: string; schema: Record<string, unknown>; strict: true };
}

export function toWireRequest(model: string, request: ChatRequest, stream: boolean): WireChatRequest {
  const body: WireChatRequest = { model, messages: request.messages.map(toWireMessage), stream };
  // Without include_usage, streaming servers never report token counts.
  if (stream) body.stream_options = { include_usage: true };
  if (request.maxTokens !== undefined) body.max_tokens = request.maxTokens;
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.responseFormat !== undefined) {
    // Strict, or OpenAI treats the schema as a hint; the others constrain the output either way.
    const { name, schema } = request.responseFormat;
    body.response_format = { type: 'json_schema', json_schema: { name, schema, strict: true } };
  }
  return body;
}

function toWireMessage(message: ChatMessage): WireMessage {
  if (typeof message.content === 'string') return { role: message.role, content: message.content };
  return { role: message.role, content: message.content.map(toWirePart) };
}

function toWirePart(part: ChatContentPart): WireContentPart {
  if (part.type === 'text') return { type: 'text', text: part.text };
  // Ollama rejects http image URLs, so images always travel inline as data URLs.
  const base64 = Buffer.from(part.data.buffer, part.data.byteOffset, part.data.byteLength).toString('base64');
  return { type: 'image_url', image_url: { url: `data:${part.mimeType};base64,${base64}` } };
}

/** The first choice of a completion or chunk, when there is one. */
export function firstChoice(body: unknown): Record<string, unknown> | undefined {
  const choices = field(body, 'choices');
  if (!Array.isArray(choices)) return undefined;
  const choice: unknown = choices[0];
  return isRecord(choice) ? choice : undefined;
}

/** `finish_reason` of a choice; servers send `null` until the last chunk. */
export function finishReasonOf(choice: Record<string, unknown> | undefined): string | undefined {
  const reason = choice?.['finish_reason'];
  return typeof reason === 'string' && reason !== '' ? reason : undefined;
}

/** Text content of a `delta` or `message`; role-only deltas carry `content: null`. */
export function contentOf(container: unknown): string {
  const content = field(container, 'content');
  return typeof content === 'string' ? content : '';
}

/** Token counts, when the body carries a `usage` object (OpenAI sends `usage: null` otherwise). */
export function usageOf(body: unknown): ChatUsage | undefined {
  const usage = field(body, 'usage');
  if (!isRecord(usage)) return undefined;
  const result: ChatUsage = {};
  if (typeof usage['prompt_tokens'] === 'number') result.promptTokens = usage['prompt_tokens'];
  if (typeof usage['completion_tokens'] === 'number') result.completionTokens = usage['completion_tokens'];
  return result;
}

export interface WireError {
  message: string;
  /** The numeric `code` llama-server puts in its error objects, read as an HTTP status. */
  status?: number;
}

/** The `error` member of a body, in the `{error:{message,type,code}}` or `{error:'...'}` form. */
export function errorOf(body: unknown): WireError | undefined {
  const error = field(body, 'error');
  if (typeof error === 'string') return { message: error };
  if (!isRecord(error)) return undefined;
  const message = typeof error['message'] === 'string' ? error['message'] : JSON.stringify(error);
  const code = error['code'];
  const status = typeof code === 'number' && code >= 400 && code <= 599 ? code : undefined;
  return status === undefined ? { message } : { message, status };
}

export function field(value: unknown, name: string): unknown {
  return isRecord(value) ? value[name] : undefined;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * The refusals the core acts on, read from an error body: a prompt longer than the context
 * (llama-server's 400 `exceed_context_size_error`, OpenAI's `context_length_exceeded`, vLLM's
 * "maximum context length"), or prompt and reply together longer (llama-server with
 * `--no-context-shift`: 500 "context shift is disabled" when the reply reaches the end of the
 * slot), and image parts on a text-only model (llama-server's 500
 * "Unsupported content part type", or a 4xx saying images are not supported).
 */
export function chatFailureReason(status: number, body: string): EngineFailureReason | undefined {
  if (/exceed_context_size_error|context_length_exceeded|exceeds the available context|maximum context length|context shift is disabled/i.test(body)) return 'context-exceeded';
  if (/Unsupported content part type:?\s*\\?"?image_url/i.test(body)) return 'images-unsupported';
  if (status >= 400 && status < 500 && /image/i.test(body) && /not (be )?supported|unsupported|does not support|cannot (see|process|accept)|mmproj/i.test(body)) return 'images-unsupported';
  if (status >= 500 && /image input is not supported/i.test(body)) return 'images-unsupported';
  return undefined;
}

/** `truncated: true` in an answer or its `timings`: llama-server shifted the context, cutting the prompt's start. */
export function truncatedOf(body: unknown): boolean {
  return field(body, 'truncated') === true || field(field(body, 'timings'), 'truncated') === true;
}

export const OPENAI_COMPATIBLE_PROVIDER = 'openai-compatible';

/** How to reach an OpenAI-compatible server: providers are data. */
export interface OpenAICompatibleOptions extends EngineTimeouts {
  /** Up to and including the API version, e.g. `http://127.0.0.1:8080/v1`. */
  baseURL: string;
  /** Sent as `Authorization: Bearer`; local servers usually need none. */
  apiKey?: string;
  model: string;
  /** A caller-owned undici dispatcher; by default the client owns an agent with the timeouts. */
  dispatcher?: Dispatcher;
  /** Most connections open to the server at once (see `EngineClientOptions.connections`); unbounded by default. */
  connections?: number;
  /** Largest whole (unstreamed) JSON answer read; see `EngineClientOptions.maxJsonBytes`. */
  maxJsonBytes?: number;
}

/** The HTTP client every OpenAI-compatible adapter (chat, embeddings, speech) uses; `label` names it in error messages. */
export function createOpenAICompatibleClient(label: string, options: Omit<OpenAICompatibleOptions, 'model'>, purpose?: EnginePurpose): EngineClient {
  return createEngineClient({
    provider: OPENAI_COMPATIBLE_PROVIDER,
    label,
    ...(purpose === undefined ? {} : { purpose }),
    baseURL: options.baseURL,
    headers: options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {},
    dispatcher: options.dispatcher,
    ...(options.connections === undefined ? {} : { connections: options.connections }),
    connectTimeoutMs: options.connectTimeoutMs,
    headersTimeoutMs: options.headersTimeoutMs,
    bodyTimeoutMs: options.bodyTimeoutMs,
    ...(options.maxJsonBytes === undefined ? {} : { maxJsonBytes: options.maxJsonBytes }),
  });
}
