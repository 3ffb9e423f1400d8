/**
 * A fake OpenAI-compatible server on 127.0.0.1 that speaks the wire format byte for byte in the
 * shapes of OpenAI, llama-server and Ollama (see shared/notes/engines-wire.md), including their
 * failures. Scriptable per test; cheap enough for benchmarks: one timer per open stream at most.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { answerLlamaServerRoute, generateLikeLlamaServer, promptTokensHeld, refuseImageParts, refuseLikeLlamaServer, reportsTruncated } from './fake-llama-server.js';
import { listenWithThreads } from './http-threads.js';

export { fakeChatPrompt, fakePromptTokens, fakeTemplate, fakeTokenCount } from './fake-llama-server.js';

export type FakeFlavor = 'openai' | 'llama-server' | 'ollama';

/** How a request fails. `afterTokens` defaults to all tokens (so before the finish chunk). */
export type FakeFailure =
  | { kind: 'http'; status: number; message: string; type?: string; code?: string | number | null; rawBody?: string }
  | { kind: 'error-event'; message: string; type?: string; code?: string | number; afterTokens?: number }
  | { kind: 'legacy-error-line'; message: string; code?: number; afterTokens?: number }
  | { kind: 'malformed'; afterTokens?: number }
  /** Destroys the socket mid-stream: no finish chunk, no `[DONE]`. */
  | { kind: 'drop'; afterTokens?: number }
  /** Ends the response cleanly but without a finish chunk or `[DONE]`. */
  | { kind: 'end-without-done'; afterTokens?: number }
  /** Never answers, not even headers. */
  | { kind: 'hang' }
  /** Sends headers (and `afterTokens` tokens), then goes silent. */
  | { kind: 'stall'; afterTokens?: number };

export interface FakeChatScript {
  /** The reply, split into word tokens; default: the last user message, echoed. */
  reply?: string;
  /** The exact tokens to stream; wins over `reply`. */
  tokens?: string[];
  /** `reasoning_content` (Ollama: `reasoning`) deltas sent before the reply. */
  reasoning?: string[];
  flavor?: FakeFlavor;
  /** Pace of token chunks; absent means as fast as possible. */
  tokensPerSecond?: number;
  /** Delay before the first token, after the headers (prompt processing). */
  firstTokenDelayMs?: number;
  /** Comment lines (e.g. `:` and `: ping`) written before every token and every keep-alive tick. */
  keepAlives?: string[];
  /** While waiting for the next token, write `keepAlives` this often. */
  keepAliveIntervalMs?: number;
  /** Adds an `event: <name>` line to every data event. */
  eventName?: string;
  lineEnding?: '\n' | '\r\n';
  finishReason?: string;
  /** Time between the last event and the end of the response body (a late chunked terminator). */
  endDelayMs?: number;
  /** Ends after the finish (and usage) chunk without `data: [DONE]`. */
  omitDone?: boolean;
  /** Answers a streaming request with one JSON completion, as servers that ignore `stream` do. */
  ignoreStream?: boolean;
  /** Answers `/embeddings` with the data list reversed (indexes still correct). */
  reverseEmbeddings?: boolean;
  failure?: FakeFailure;
  /**
   * llama-server only: the context of one slot (`-c` / `-np`), in the fake's tokens (see
   * `fakeTokenCount`). A longer prompt gets the 400 `exceed_context_size_error`, or with
   * `contextShift` is cut from the front (see `reportsTruncation`).
   */
  slotContext?: number;
  /** llama-server only: how many slots `/props` reports (default 1). */
  slots?: number;
  contextShift?: boolean;
  /**
   * llama-server only: mark a prompt context shift cut with `truncated: true` in `timings`, as
   * some builds do. b4748 does not: only `usage.prompt_tokens` smaller than the prompt tells.
   */
  reportsTruncation?: boolean;
  /** llama-server only: a model without a vision projector; image parts get the 500 that echoes the prompt. */
  textOnly?: boolean;
  /** llama-server only: no `/tokenize` (a proxy in front of it, say): 404 like any unknown route. */
  noTokenize?: boolean;
  /** llama-server only: no `/apply-template` (builds before it): 404. */
  noApplyTemplate?: boolean;
}

/** A JSON request body as received. */
export interface FakeRequestBody {
  model?: string;
  messages?: Array<{ role: string; content: unknown }>;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  input?: string | string[];
  [key: string]: unknown;
}

export type FakeScriptSource = FakeChatScript | ((body: FakeRequestBody, path: string) => FakeChatScript);

/** `completed`: the fake ended the answer; `client-closed`: the client left first; `dropped`: the fake cut it. */
export type FakeOutcome = 'completed' | 'client-closed' | 'dropped';

export interface FakeRequestRecord {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: FakeRequestBody;
  /** `performance.now()` when the body was read. */
  receivedAt: number;
  /** `performance.now()` of each content token write, when `recordChunkTimes` is set. */
  chunkWrittenAt: number[];
  outcome: Promise<FakeOutcome>;
}

export type FakeChunkKind = 'role' | 'reasoning' | 'token' | 'finish' | 'usage' | 'done' | 'keep-alive' | 'error';

export interface FakeChunkWritten {
  request: FakeRequestRecord;
  kind: FakeChunkKind;
  /** The token text for `token` chunks, else the raw bytes written. */
  text: string;
  writtenAt: number;
}

export interface FakeOpenAIOptions {
  script?: FakeScriptSource;
  /** When set, requests without `Authorization: Bearer <apiKey>` get OpenAI's 401. */
  apiKey?: string;
  embeddingDimensions?: number;
  /** Keep each request in `requests` (default true; benchmarks may turn it off). */
  recordRequests?: boolean;
  recordChunkTimes?: boolean;
  onChunkWritten?: (event: FakeChunkWritten) => void;
  /**
   * Connections served at once, as llama-server's `--threads-http` (default there:
   * max(np + 2, cores - 1)); further ones wait until a served one closes. Unbounded by default.
   */
  httpThreads?: number;
  /** How long an idle kept-alive connection stays open (and holds its thread); llama-server's is 5 s, like Node's default. */
  keepAliveTimeoutMs?: number;
}

export interface FakeOpenAI {
  /** Ends in `/v1`, like a real server's OpenAI base URL. */
  readonly baseURL: string;
  readonly requests: FakeRequestRecord[];
  setScript(script: FakeScriptSource): void;
  /** Responses still open. */
  openResponses(): number;
  /** TCP connections accepted so far; fewer than requests means sockets were reused. */
  connectionCount(): number;
  /** Connections accepted but waiting for one of the `httpThreads`. */
  waitingConnections(): number;
  close(): Promise<void>;
}

/** One write of a streamed answer, or how the answer stops when it fails. */
type Frame =
  | { kind: FakeChunkKind; text: string; delayMs: number; token?: string }
  | { kind: 'fail'; how: 'end' | 'drop' | 'stall'; delayMs: number };

export async function startFakeOpenAI(options: FakeOpenAIOptions = {}): Promise<FakeOpenAI> {
  let script: FakeScriptSource = options.script ?? {};
  const requests: FakeRequestRecord[] = [];
  const open = new Set<ServerResponse>();
  const server = createServer((incoming, response) => {
    void handle(incoming, response).catch((error: unknown) => {
      if (!response.headersSent) sendError(response, 500, String(error), 'server_error', 500);
    });
  });

  async function handle(incoming: IncomingMessage, response: ServerResponse): Promise<void> {
    const raw = await readBody(incoming);
    const path = (incoming.url ?? '/').split('?')[0] ?? '/';
    let body: FakeRequestBody;
    try {
      body = JSON.parse(raw === '' ? '{}' : raw) as FakeRequestBody;
    } catch {
      return sendError(response, 400, 'Invalid JSON body', 'invalid_request_error', null);
    }
    let settle: (outcome: FakeOutcome) => void = () => {};
    const record: FakeRequestRecord = {
      method: incoming.method ?? 'GET', path, headers: incoming.headers, body,
      receivedAt: performance.now(), chunkWrittenAt: [],
      outcome: new Promise((resolve) => { settle = resolve; }),
    };
    if (options.recordRequests !== false) requests.push(record);
    open.add(response);
    response.on('close', () => {
      open.delete(response);
      settle(response.writableFinished ? 'completed' : 'client-closed');
    });
    if (options.apiKey !== undefined && incoming.headers.authorization !== `Bearer ${options.apiKey}`) {
      return sendError(response, 401, 'Incorrect API key provided.', 'invalid_request_error', 'invalid_api_key');
    }
    let current = typeof script === 'function' ? script(body, path) : script;
    if ((current.flavor ?? 'openai') === 'llama-server' && answerLlamaServerRoute(response, incoming.method ?? 'GET', path, body, current)) return;
    const known = incoming.method === 'POST' && (path === '/v1/chat/completions' || path === '/v1/embeddings');
    if (!known) return sendError(response, 404, `Unknown route ${incoming.method} ${path}`, 'not_found_error', null);
    const failure = current.failure;
    // A text-only model refuses image parts this way whatever the flavor (llama-server's words).
    if (current.textOnly && refuseImageParts(response, body)) return;
    if (failure?.kind === 'hang') return;
    if (failure?.kind === 'http') return answerHttpFailure(response, failure);
    if (failure?.kind === 'drop' && body.stream !== true) return void drop(response, settle);
    if (path === '/v1/chat/completions' && (current.flavor ?? 'openai') === 'llama-server') {
      if (refuseLikeLlamaServer(response, body, current)) return;
      current = generateLikeLlamaServer(body, current, tokensOf(body, current));
      if (current.failure?.kind === 'http') return answerHttpFailure(response, current.failure);
    }
    if (path === '/v1/embeddings') return answerEmbeddings(response, body, current, options.embeddingDimensions ?? 64);
    if (body.stream !== true || current.ignoreStream) return answerCompletion(response, body, current);
    streamCompletion(response, record, settle, current);
  }

  /** Writes the frames on one timer at most, so thousands of streams stay cheap. */
  function streamCompletion(response: ServerResponse, record: FakeRequestRecord, settle: (outcome: FakeOutcome) => void, current: FakeChatScript): void {
    const { body } = record;
    const flavor = current.flavor ?? 'openai';
    const frames = buildFrames(body, current);
    const eol = current.lineEnding ?? '\n';
    const keepAlive = (current.keepAlives ?? []).map((line) => `${line}${eol}${eol}`).join('');
    response.writeHead(200, { 'content-type': flavor === 'openai' ? 'text/event-stream; charset=utf-8' : 'text/event-stream', 'cache-control': 'no-cache' });
    response.flushHeaders();
    // llama-server closes the connection after a streamed answer although it announced
    // keep-alive, which frees its HTTP thread.
    const socket = response.socket;
    if (flavor === 'llama-server') response.once('finish', () => socket?.end());
    let timer: NodeJS.Timeout | undefined;
    response.on('close', () => clearTimeout(timer));
    const write = (kind: FakeChunkKind, text: string, token?: string): void => {
      response.write(text);
      const writtenAt = performance.now();
      if (kind === 'token' && options.recordChunkTimes) record.chunkWrittenAt.push(writtenAt);
      options.onChunkWritten?.({ request: record, kind, text: token ?? text, writtenAt });
    };
    let index = 0;
    const step = (): void => {
      timer = undefined;
      while (index < frames.length && !response.destroyed) {
        const frame = frames[index] as Frame;
        const interval = current.keepAliveIntervalMs;
        if (frame.delayMs > 0) {
          const wait = interval !== undefined && keepAlive !== '' ? Math.min(interval, frame.delayMs) : frame.delayMs;
          frame.delayMs -= wait;
          timer = setTimeout(() => {
            if (frame.delayMs > 0) write('keep-alive', keepAlive);
            step();
          }, wait);
          return;
        }
        index += 1;
        if (frame.kind === 'fail') return failStream(response, frame.how, settle);
        if (frame.kind === 'token' && keepAlive !== '') write('keep-alive', keepAlive);
        write(frame.kind, frame.text, frame.token);
      }
      if (response.destroyed) return;
      if (current.endDelayMs) timer = setTimeout(() => response.end(), current.endDelayMs);
      else response.end();
    };
    step();
  }

  if (options.keepAliveTimeoutMs !== undefined) server.keepAliveTimeout = options.keepAliveTimeoutMs;
  const threads = await listenWithThreads(server, options.httpThreads);
  const { port } = threads;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    setScript: (next) => { script = next; },
    openResponses: () => open.size,
    connectionCount: () => threads.accepted(),
    waitingConnections: () => threads.waiting(),
    close: async () => {
      for (const response of open) response.destroy();
      await threads.close();
    },
  };
}

/** The frames of one streamed answer, in the chosen flavor, ending as the failure says. */
function buildFrames(body: FakeRequestBody, script: FakeChatScript): Frame[] {
  const flavor = script.flavor ?? 'openai';
  const eol = script.lineEnding ?? '\n';
  const tokens = tokensOf(body, script);
  const model = JSON.stringify(body.model ?? 'fake-model');
  const created = Math.floor(Date.now() / 1000);
  const id = flavor === 'ollama' ? 'chatcmpl-742' : `chatcmpl-${Math.random().toString(36).slice(2, 12)}`;
  const includeUsage = body.stream_options?.include_usage === true;
  const event = (json: string): string => `${script.eventName ? `event: ${script.eventName}${eol}` : ''}data: ${json}${eol}${eol}`;
  const chunk = (delta: string, finish: string | null): string => {
    const reason = finish === null ? 'null' : JSON.stringify(finish);
    if (flavor === 'llama-server') {
      return `{"choices":[{"finish_reason":${reason},"index":0,"delta":${delta}}],"created":${created},"id":"${id}","model":${model},"system_fingerprint":"b6000-fake","object":"chat.completion.chunk"}`;
    }
    const fingerprint = flavor === 'ollama' ? 'fp_ollama' : 'fp_fake';
    const usage = flavor === 'openai' && includeUsage ? ',"usage":null' : '';
    const logprobs = flavor === 'openai' ? ',"logprobs":null' : '';
    return `{"id":"${id}","object":"chat.completion.chunk","created":${created},"model":${model},"system_fingerprint":"${fingerprint}","choices":[{"index":0,"delta":${delta}${logprobs},"finish_reason":${reason}}]${usage}}`;
  };
  const role = flavor === 'ollama' ? '"role":"assistant",' : '';
  const frames: Frame[] = [];
  if (flavor === 'openai') frames.push({ kind: 'role', text: event(chunk('{"role":"assistant","content":"","refusal":null}', null)), delayMs: 0 });
  if (flavor === 'llama-server') frames.push({ kind: 'role', text: event(chunk('{"role":"assistant","content":null}', null)), delayMs: 0 });
  const reasoningField = flavor === 'ollama' ? '"content":"","reasoning"' : '"reasoning_content"';
  for (const thought of script.reasoning ?? []) {
    frames.push({ kind: 'reasoning', text: event(chunk(`{${role}${reasoningField}:${JSON.stringify(thought)}}`, null)), delayMs: 0 });
  }
  const interval = script.tokensPerSecond ? 1000 / script.tokensPerSecond : 0;
  tokens.forEach((token, position) => {
    const delayMs = position === 0 ? (script.firstTokenDelayMs ?? 0) : interval;
    frames.push({ kind: 'token', text: event(chunk(`{${role}"content":${JSON.stringify(token)}}`, null)), delayMs, token });
  });
  const failure = script.failure;
  if (failure !== undefined && failure.kind !== 'http' && failure.kind !== 'hang') {
    const cut = frames.length - tokens.length + Math.min(failure.afterTokens ?? tokens.length, tokens.length);
    frames.splice(cut, frames.length, ...failureFrames(failure, event, eol));
    return frames;
  }
  const lastDelta = flavor === 'ollama' ? '{"role":"assistant","content":""}' : '{}';
  frames.push({ kind: 'finish', text: event(chunk(lastDelta, script.finishReason ?? 'stop')), delayMs: 0 });
  if (includeUsage) {
    const usage = usageOf(body, tokens.length, script);
    const rest = flavor === 'llama-server'
      ? `{"choices":[],"created":${created},"id":"${id}","model":${model},"system_fingerprint":"b6000-fake","object":"chat.completion.chunk","usage":{"completion_tokens":${usage.completion_tokens},"prompt_tokens":${usage.prompt_tokens},"total_tokens":${usage.total_tokens}},"timings":{"prompt_n":${usage.prompt_tokens},"predicted_n":${usage.completion_tokens}${reportsTruncated(body, script) ? ',"truncated":true' : ''}}}`
      : `{"id":"${id}","object":"chat.completion.chunk","created":${created},"model":${model},"system_fingerprint":"${flavor === 'ollama' ? 'fp_ollama' : 'fp_fake'}","choices":[],"usage":${JSON.stringify(usage)}}`;
    frames.push({ kind: 'usage', text: event(rest), delayMs: 0 });
  }
  if (!script.omitDone) frames.push({ kind: 'done', text: event('[DONE]'), delayMs: 0 });
  return frames;
}

function failureFrames(failure: Exclude<FakeFailure, { kind: 'http' | 'hang' }>, event: (json: string) => string, eol: string): Frame[] {
  switch (failure.kind) {
    case 'error-event':
      return [{ kind: 'error', text: event(JSON.stringify({ error: { code: failure.code ?? 500, message: failure.message, type: failure.type ?? 'server_error' } })), delayMs: 0 }, { kind: 'fail', how: 'end', delayMs: 0 }];
    case 'legacy-error-line':
      return [
        { kind: 'error', text: `error: ${JSON.stringify({ code: failure.code ?? 500, message: failure.message, type: 'server_error' })}${eol}${eol}`, delayMs: 0 },
        { kind: 'done', text: event('[DONE]'), delayMs: 0 },
      ];
    case 'malformed':
      return [{ kind: 'error', text: event('{"choices":[{"delta":{"content":"oops"'), delayMs: 0 }, { kind: 'fail', how: 'end', delayMs: 0 }];
    case 'drop':
      return [{ kind: 'fail', how: 'drop', delayMs: 0 }];
    case 'end-without-done':
      return [{ kind: 'fail', how: 'end', delayMs: 0 }];
    case 'stall':
      return [{ kind: 'fail', how: 'stall', delayMs: 0 }];
  }
}

function answerHttpFailure(response: ServerResponse, failure: Extract<FakeFailure, { kind: 'http' }>): void {
  const text = failure.rawBody ?? JSON.stringify({ error: { message: failure.message, type: failure.type ?? 'server_error', code: failure.code ?? null } });
  response.writeHead(failure.status, { 'content-type': failure.rawBody === undefined ? 'application/json' : 'text/plain' });
  response.end(text);
}

function failStream(response: ServerResponse, how: 'end' | 'drop' | 'stall', settle: (outcome: FakeOutcome) => void): void {
  if (how === 'end') response.end();
  if (how === 'drop') drop(response, settle);
  // 'stall': leave the response open and silent.
}

function drop(response: ServerResponse, settle: (outcome: FakeOutcome) => void): void {
  settle('dropped');
  response.socket?.destroy();
}

function answerCompletion(response: ServerResponse, body: FakeRequestBody, script: FakeChatScript): void {
  const flavor = script.flavor ?? 'openai';
  const tokens = tokensOf(body, script);
  const answer = JSON.stringify({
    id: `chatcmpl-${Math.random().toString(36).slice(2, 12)}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: body.model ?? 'fake-model',
    system_fingerprint: flavor === 'ollama' ? 'fp_ollama' : 'fp_fake',
    choices: [{ index: 0, message: { role: 'assistant', content: tokens.join('') }, finish_reason: script.finishReason ?? 'stop' }],
    usage: usageOf(body, tokens.length, script),
    ...(flavor === 'llama-server' ? { timings: { prompt_n: usageOf(body, tokens.length, script).prompt_tokens, predicted_n: tokens.length, ...(reportsTruncated(body, script) ? { truncated: true } : {}) } } : {}),
  });
  if (script.failure?.kind === 'stall') {
    response.writeHead(200, { 'content-type': 'application/json' });
    return void response.write(answer.slice(0, 20));
  }
  setTimeout(() => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(answer);
  }, script.firstTokenDelayMs ?? 0);
}

function answerEmbeddings(response: ServerResponse, body: FakeRequestBody, script: FakeChatScript, dimensions: number): void {
  const inputs = typeof body.input === 'string' ? [body.input] : (body.input ?? []);
  const data = inputs.map((text, index) => ({ object: 'embedding', embedding: fakeEmbedding(text, dimensions), index }));
  if (script.reverseEmbeddings) data.reverse();
  const words = inputs.reduce((total, text) => total + wordsOf(text).length, 0);
  response.writeHead(200, { 'content-type': 'application/json' });
  response.end(JSON.stringify({ object: 'list', data, model: body.model ?? 'fake-embedding', usage: { prompt_tokens: words, total_tokens: words } }));
}

/** A unit vector from hashed words: texts sharing words point the same way. */
export function fakeEmbedding(text: string, dimensions = 64): number[] {
  const vector = new Array<number>(dimensions).fill(0);
  for (const word of wordsOf(text)) {
    let hash = 0x811c9dc5;
    for (let index = 0; index < word.length; index += 1) hash = Math.imul(hash ^ word.charCodeAt(index), 0x01000193);
    const slot = (hash >>> 0) % dimensions;
    vector[slot] = (vector[slot] ?? 0) + 1;
  }
  const length = Math.hypot(...vector) || 1;
  return vector.map((value) => value / length);
}

/** The reply tokens: the script's, else the last user message split into words. */
export function tokensOf(body: FakeRequestBody, script: FakeChatScript): string[] {
  if (script.tokens !== undefined) return script.tokens;
  const reply = script.reply ?? lastUserText(body) ?? 'Hello from the fake.';
  return reply.match(/\s*\S+\s*/g) ?? [];
}

function lastUserText(body: FakeRequestBody): string | undefined {
  const user = [...(body.messages ?? [])].reverse().find((message) => message.role === 'user');
  if (user === undefined) return undefined;
  if (typeof user.content === 'string') return user.content;
  if (!Array.isArray(user.content)) return undefined;
  return user.content.flatMap((part: { type?: string; text?: string }) => (part.type === 'text' && part.text ? [part.text] : [])).join(' ');
}

function usageOf(body: FakeRequestBody, completionTokens: number, script: FakeChatScript): { prompt_tokens: number; completion_tokens: number; total_tokens: number } {
  let prompt: number;
  if ((script.flavor ?? 'openai') === 'llama-server') {
    prompt = promptTokensHeld(body, script);
  } else {
    prompt = (body.messages ?? []).reduce((total, message) => total + wordsOf(typeof message.content === 'string' ? message.content : JSON.stringify(message.content)).length, 0);
  }
  return { prompt_tokens: prompt, completion_tokens: completionTokens, total_tokens: prompt + completionTokens };
}

function wordsOf(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

function sendError(response: ServerResponse, status: number, message: string, type: string, code: string | number | null): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify({ error: { message, type, code } }));
}

async function readBody(incoming: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of incoming) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
