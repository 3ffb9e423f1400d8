/**
 * HTTP plumbing shared by every engine adapter: one undici agent with explicit timeouts, one
 * way to send a request, and one mapping from transport failures and non-2xx answers to
 * `EngineError`. Nothing here knows which engine it talks to; callers pass a provider name.
 */
import { Agent, request, type Dispatcher } from 'undici';
import { EngineError, type EngineErrorOptions, type EngineFailureReason, type EnginePurpose } from '../core/errors.js';

/** How long an engine may take at each step. undici's own 300 s defaults are never used. */
export interface EngineTimeouts {
  /** Time to open the TCP (and TLS) connection. */
  connectTimeoutMs?: number;
  /** Time from sending the request to receiving the response headers (prompt processing). */
  headersTimeoutMs?: number;
  /** Longest silence allowed between two body chunks; keep-alive comments count as chunks. */
  bodyTimeoutMs?: number;
}

export const DEFAULT_ENGINE_TIMEOUTS: Required<EngineTimeouts> = {
  connectTimeoutMs: 10_000,
  headersTimeoutMs: 120_000,
  bodyTimeoutMs: 60_000,
};

export interface EngineClientOptions extends EngineTimeouts {
  /** Which engine this is, e.g. `openai-compatible`; copied onto every `EngineError`. */
  provider: string;
  /** How log details name the engine, e.g. `Chat engine`. */
  label: string;
  /** What the engine is for; the messages people read name it by this, never by its address. */
  purpose?: EnginePurpose;
  baseURL: string;
  /** Headers sent with every request, e.g. authorization. */
  headers?: Record<string, string>;
  /** A caller-owned dispatcher; when absent the client owns an `Agent` built from the timeouts. */
  dispatcher?: Dispatcher;
  /**
   * Most connections the owned agent opens to the engine at once; further requests queue in the
   * client. Unbounded by default. llama-server serves each open connection, idle ones included,
   * with one of a few HTTP threads: a client that opens many starves every other.
   */
  connections?: number;
  /**
   * Largest JSON answer `readJson` reads (default `DEFAULT_MAX_JSON_BYTES`); past it the body is
   * dropped and the call fails, so an endless answer cannot fill the memory.
   */
  maxJsonBytes?: number;
}

/** 32 MiB: far above any chat completion or embedding list we ask for. */
export const DEFAULT_MAX_JSON_BYTES = 32 * 1024 * 1024;

export interface EngineRequest {
  method?: Dispatcher.HttpMethod;
  /** Appended to the base URL, e.g. `/chat/completions`. */
  path: string;
  body?: Dispatcher.DispatchOptions['body'];
  headers?: Record<string, string>;
  signal?: AbortSignal | undefined;
  /** Reads a refusal the core acts on (context exceeded, images unsupported) from the raw error body. */
  reasonOf?: (status: number, body: string) => EngineFailureReason | undefined;
}

/** A successful (2xx) answer whose body the caller must consume or destroy. */
export type EngineResponse = Dispatcher.ResponseData;

/** Sends requests to one engine and turns every failure into an `EngineError`. */
export interface EngineClient {
  readonly provider: string;
  /** The base URL without credentials, safe for messages and logs. */
  readonly displayURL: string;
  /** Sends a request; resolves only for 2xx answers. */
  send(engineRequest: EngineRequest): Promise<EngineResponse>;
  /** Reads and parses a JSON answer body. */
  readJson(response: EngineResponse, signal?: AbortSignal): Promise<unknown>;
  /** Sends `body` as JSON and parses a JSON answer. */
  postJson(path: string, body: unknown, signal?: AbortSignal): Promise<unknown>;
  /**
   * Builds an `EngineError` for this engine. `detail` (which may quote the engine) is kept for
   * the log only; the error's message is written from its code and status.
   */
  error(detail: string, options?: Omit<EngineErrorOptions, 'provider' | 'purpose'>): EngineError;
  /** Maps a thrown value to an `EngineError`, or returns the abort reason when `signal` fired. */
  translate(thrown: unknown, signal?: AbortSignal): unknown;
  /** Closes the agent this client owns; a caller-owned dispatcher is left alone. */
  close(): Promise<void>;
}

/** An agent whose every timeout is set explicitly, with at most `connections` per engine when given. */
export function createEngineAgent(timeouts: EngineTimeouts = {}, connections?: number): Agent {
  const resolved = { ...DEFAULT_ENGINE_TIMEOUTS, ...timeouts };
  return new Agent({
    connectTimeout: resolved.connectTimeoutMs,
    headersTimeout: resolved.headersTimeoutMs,
    bodyTimeout: resolved.bodyTimeoutMs,
    ...(connections === undefined ? {} : { connections }),
  });
}

const MAXIMUM_ERROR_BODY_BYTES = 64 * 1024;
const MAXIMUM_MESSAGE_CHARACTERS = 300;
const CLOSED_CODES = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']);
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL']);

/** Every timeout set: the caller's, else our defaults (never undici's 300 s). */
export function resolveEngineTimeouts(options: EngineTimeouts): Required<EngineTimeouts> {
  return {
    connectTimeoutMs: options.connectTimeoutMs ?? DEFAULT_ENGINE_TIMEOUTS.connectTimeoutMs,
    headersTimeoutMs: options.headersTimeoutMs ?? DEFAULT_ENGINE_TIMEOUTS.headersTimeoutMs,
    bodyTimeoutMs: options.bodyTimeoutMs ?? DEFAULT_ENGINE_TIMEOUTS.bodyTimeoutMs,
  };
}

export function createEngineClient(options: EngineClientOptions): EngineClient {
  const timeouts = resolveEngineTimeouts(options);
  const ownedAgent = options.dispatcher ? undefined : createEngineAgent(timeouts, options.connections);
  const dispatcher: Dispatcher = options.dispatcher ?? (ownedAgent as Agent);
  const baseURL = options.baseURL.replace(/\/+$/, '');
  const displayURL = withoutCredentials(baseURL);
  const { provider, label } = options;

  const error: EngineClient['error'] = (detail, errorOptions = {}) =>
    new EngineError(detail, { ...errorOptions, provider, purpose: options.purpose });

  const translate: EngineClient['translate'] = (thrown, signal) => {
    if (signal?.aborted) return signal.reason;
    if (thrown instanceof EngineError) return thrown;
    const code = errorCode(thrown);
    const cause = thrown;
    if (code === 'UND_ERR_CONNECT_TIMEOUT') {
      return error(`${label} at ${displayURL} did not accept a connection within ${timeouts.connectTimeoutMs} ms.`, { code: 'ENGINE_TIMEOUT', retryable: true, cause });
    }
    if (code === 'UND_ERR_HEADERS_TIMEOUT') {
      return error(`${label} at ${displayURL} did not start answering within ${timeouts.headersTimeoutMs} ms.`, { code: 'ENGINE_TIMEOUT', retryable: true, cause });
    }
    if (code === 'UND_ERR_BODY_TIMEOUT') {
      return error(`${label} at ${displayURL} went silent for more than ${timeouts.bodyTimeoutMs} ms while answering.`, { code: 'ENGINE_TIMEOUT', retryable: true, cause });
    }
    if (code !== undefined && UNREACHABLE_CODES.has(code)) {
      return error(`${label} at ${displayURL} is unreachable (${code}).`, { code: 'ENGINE_UNAVAILABLE', retryable: true, cause });
    }
    const detail = thrown instanceof Error ? thrown.message : String(thrown);
    if (code !== undefined && CLOSED_CODES.has(code)) {
      return error(`${label} at ${displayURL} closed the connection before the answer was complete (${detail}).`, { retryable: true, cause });
    }
    return error(`${label} at ${displayURL} failed: ${detail}`, { retryable: true, cause });
  };

  const send: EngineClient['send'] = async (engineRequest) => {
    let response: EngineResponse;
    try {
      response = await request(`${baseURL}${engineRequest.path}`, {
        method: engineRequest.method ?? 'POST',
        headers: { ...options.headers, ...engineRequest.headers },
        body: engineRequest.body ?? null,
        signal: engineRequest.signal,
        dispatcher,
        // Per request as well, so the timeouts hold even on a caller-owned dispatcher.
        headersTimeout: timeouts.headersTimeoutMs,
        bodyTimeout: timeouts.bodyTimeoutMs,
      });
    } catch (thrown) {
      throw translate(thrown, engineRequest.signal);
    }
    if (response.statusCode >= 200 && response.statusCode < 300) return response;
    let text: string;
    try {
      text = await readLimited(response.body, MAXIMUM_ERROR_BODY_BYTES);
    } catch (thrown) {
      throw translate(thrown, engineRequest.signal);
    }
    const status = response.statusCode;
    const reason = engineRequest.reasonOf?.(status, text);
    throw error(`${label} answered ${status}: ${upstreamMessage(text) || 'no details'}`, reason === undefined ? { status } : { status, reason });
  };

  const maxJsonBytes = options.maxJsonBytes ?? DEFAULT_MAX_JSON_BYTES;
  const readJson: EngineClient['readJson'] = async (response, signal) => {
    let text: string;
    try {
      text = await readLimited(response.body, maxJsonBytes + 1);
    } catch (thrown) {
      throw translate(thrown, signal);
    }
    if (Buffer.byteLength(text) > maxJsonBytes) {
      throw error(`${label} sent a JSON answer larger than ${maxJsonBytes} bytes; it was not read further.`, { status: response.statusCode, retryable: false });
    }
    try {
      return JSON.parse(text) as unknown;
    } catch (cause) {
      throw error(`${label} answered with malformed JSON: ${truncate(text)}`, { status: response.statusCode, retryable: false, cause });
    }
  };

  const postJson: EngineClient['postJson'] = async (path, body, signal) => {
    const response = await send({
      path,
      body: JSON.stringify(body),
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      signal,
    });
    return readJson(response, signal);
  };

  return {
    provider,
    displayURL,
    send,
    readJson,
    postJson,
    error,
    translate,
    close: async () => {
      await ownedAgent?.close();
    },
  };
}

/**
 * The human part of an upstream error body, whatever engine sent it: OpenAI-style
 * `{error:{message}}`, a bare `{error:'...'}`, FastAPI's `{detail}` (a text, or a list of
 * validation issues `[{loc, msg}]`), Replicate's `{title, detail}`, AUTOMATIC1111's
 * `{error: <exception class>, errors: <its message>}`, or `{message}`; otherwise the raw text.
 * Always shortened.
 */
export function upstreamMessage(text: string): string {
  try {
    const parsed = JSON.parse(text) as unknown;
    const found = messageOf(parsed);
    if (found !== undefined) return truncate(found);
  } catch {
    // Not JSON (a proxy's HTML page, plain text): the raw text is the best we have.
  }
  return truncate(text.trim());
}

function messageOf(value: unknown): string | undefined {
  if (typeof value === 'string') return value.trim() === '' ? undefined : value.trim();
  if (Array.isArray(value)) {
    const issues = value.map(issueText).filter((issue) => issue !== '');
    return issues.length > 0 ? issues.join('; ') : undefined;
  }
  if (value === null || typeof value !== 'object') return undefined;
  const record = value as Record<string, unknown>;
  const { error, errors } = record;
  // AUTOMATIC1111 names the exception's class in `error` and says what happened in `errors`.
  if (typeof error === 'string' && typeof errors === 'string' && errors.trim() !== '' && messageOf(record['detail']) === undefined) {
    return `${error}: ${errors.trim()}`;
  }
  for (const key of ['detail', 'error', 'message', 'title']) {
    const found = messageOf(record[key]);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** One FastAPI validation issue as `input.width: must be at most 1024`. */
function issueText(issue: unknown): string {
  if (typeof issue === 'string') return issue;
  if (issue === null || typeof issue !== 'object') return '';
  const { loc, msg } = issue as { loc?: unknown; msg?: unknown };
  if (typeof msg !== 'string') return messageOf(issue) ?? '';
  // `body` is where every field lives, so it says nothing to the reader.
  const path = Array.isArray(loc) ? loc.filter((part) => part !== 'body').join('.') : '';
  return path === '' ? msg : `${path}: ${msg}`;
}

export function truncate(text: string, limit = MAXIMUM_MESSAGE_CHARACTERS): string {
  return text.length <= limit ? text : `${text.slice(0, limit)}…`;
}

function errorCode(thrown: unknown): string | undefined {
  if (thrown === null || typeof thrown !== 'object') return undefined;
  const code = (thrown as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  // Happy Eyeballs reports every failed address in an AggregateError.
  const errors = (thrown as { errors?: unknown }).errors;
  return Array.isArray(errors) ? errorCode(errors[0]) : undefined;
}

function withoutCredentials(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    return parsed.toString().replace(/\/+$/, '');
  } catch {
    return url;
  }
}

/**
 * The whole body, or undefined (and the body destroyed) once it passes `limit` bytes: what an
 * engine or a model host sends is bounded before it costs memory.
 */
export async function readBodyWithin(body: EngineResponse['body'], limit: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > limit) {
      body.destroy();
      return undefined;
    }
    chunks.push(buffer);
  }
  return Buffer.concat(chunks);
}

async function readLimited(body: EngineResponse['body'], limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buffer = chunk as Buffer;
    chunks.push(buffer);
    size += buffer.length;
    if (size >= limit) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks).toString('utf8');
}
