/**
 * What the fake does as llama.cpp's llama-server (build b4748, see shared/notes/engines-wire.md):
 * its tokenizer and ChatML template, its routes beside `/v1` (`/tokenize`, `/props`,
 * `/apply-template`), and how it refuses or cuts a request against the context of its slot.
 */
import type { ServerResponse } from 'node:http';
import type { FakeChatScript, FakeFailure, FakeRequestBody } from './fake-openai.js';

/**
 * The fake's tokenizer, deterministic and shaped like real ones: about four ASCII characters a
 * token, one token per CJK character (kana, Hangul), three per emoji (byte fallback), one per
 * other non-ASCII character. In a prompt `/apply-template` rendered, each `<|im_start|>role\n`
 * is three tokens and each `<|im_end|>\n` two, as ChatML's special tokens are.
 */
export function fakeTokenCount(text: string): number {
  let tokens = 0;
  let last = 0;
  for (const marker of text.matchAll(/<\|im_start\|>(?:system|user|assistant)\n|<\|im_end\|>\n/g)) {
    tokens += plainTokens(text.slice(last, marker.index)) + (marker[0].startsWith('<|im_start|>') ? 3 : 2);
    last = marker.index + marker[0].length;
  }
  return tokens + plainTokens(text.slice(last));
}

function plainTokens(text: string): number {
  let ascii = 0;
  let tokens = 0;
  for (const character of text) {
    const code = character.codePointAt(0) ?? 0;
    if (code < 0x80) ascii += 1;
    else if ((code >= 0x2e80 && code <= 0x9fff) || (code >= 0xac00 && code <= 0xd7af) || (code >= 0xff00 && code <= 0xffef)) tokens += 1;
    else if (/\p{Extended_Pictographic}/u.test(character) || code > 0xffff) tokens += 3;
    else tokens += 1;
  }
  return tokens + Math.ceil(ascii / 4);
}

/** ChatML: five tokens around each message, three for the generation prompt that opens the reply. */
export const fakeTemplate = { messageTokens: 5, generationPromptTokens: 3 };

/** The prompt `/apply-template` answers: ChatML, ending in the generation prompt. */
export function fakeChatPrompt(messages: readonly { role: string; content: unknown }[]): string {
  const text = (content: unknown) => (typeof content === 'string' ? content : JSON.stringify(content));
  return `${messages.map((message) => `<|im_start|>${message.role}\n${text(message.content)}<|im_end|>\n`).join('')}<|im_start|>assistant\n`;
}

/** Tokens of a whole chat prompt as the fake's template frames it, 256 per image. */
export function fakePromptTokens(body: FakeRequestBody): number {
  const messages = body.messages ?? [];
  return messages.reduce((total, message) => {
    const content = message.content;
    if (typeof content === 'string') return total + fakeTemplate.messageTokens + fakeTokenCount(content);
    if (!Array.isArray(content)) return total + fakeTemplate.messageTokens;
    return total + fakeTemplate.messageTokens + content.reduce((sum: number, part: { type?: string; text?: string }) => sum + (part.type === 'image_url' ? 256 : fakeTokenCount(part.text ?? '')), 0);
  }, messages.length === 0 ? 0 : fakeTemplate.generationPromptTokens);
}

/** Whether context shift had to cut the prompt to fit the slot. */
export function isTruncated(body: FakeRequestBody, script: FakeChatScript): boolean {
  return script.contextShift === true && script.slotContext !== undefined && fakePromptTokens(body) > script.slotContext;
}

/** Whether the answer says the prompt was cut: builds that mark it in `timings`, not b4748. */
export function reportsTruncated(body: FakeRequestBody, script: FakeChatScript): boolean {
  return script.reportsTruncation === true && isTruncated(body, script);
}

/**
 * The prompt's tokens as the slot holds them (its `usage.prompt_tokens`): context shift drops
 * whole blocks of half the slot from the front (`n_keep` 0), as llama-server does.
 */
export function promptTokensHeld(body: FakeRequestBody, script: FakeChatScript): number {
  const prompt = fakePromptTokens(body);
  if (!isTruncated(body, script) || script.slotContext === undefined) return prompt;
  const block = Math.floor(script.slotContext / 2);
  return prompt - Math.floor((prompt - block) / block) * block;
}

/** llama-server's own routes beside `/v1`; true when answered. */
export function answerLlamaServerRoute(response: ServerResponse, method: string, path: string, body: FakeRequestBody, script: FakeChatScript): boolean {
  if (method === 'POST' && path === '/tokenize' && !script.noTokenize) {
    const content = typeof body['content'] === 'string' ? body['content'] : '';
    return json(response, 200, { tokens: Array.from({ length: fakeTokenCount(content) }, (_, index) => 1000 + index) });
  }
  if (method === 'POST' && path === '/apply-template' && !script.noTokenize && !script.noApplyTemplate) {
    return json(response, 200, { prompt: fakeChatPrompt(body.messages ?? []) });
  }
  if (method === 'GET' && path === '/props') {
    return json(response, 200, { default_generation_settings: { n_ctx: script.slotContext ?? 4096, params: {} }, total_slots: script.slots ?? 1, model_path: 'fake.gguf', n_ctx_train: 32768 });
  }
  return false;
}

/** llama-server's 500 for image parts on a model without a vision projector. True when it refused. */
export function refuseImageParts(response: ServerResponse, body: FakeRequestBody): boolean {
  const withImages = (body.messages ?? []).some((message) => Array.isArray(message.content) && message.content.some((part: { type?: string }) => part.type === 'image_url'));
  if (!withImages) return false;
  // The real message echoes the whole prompt, system prompt and memories included.
  const message = `Failed to parse messages: Unsupported content part type: "image_url"; messages = ${JSON.stringify(body.messages)}`;
  return json(response, 500, { error: { code: 500, message, type: 'server_error' } });
}

/**
 * What llama-server answers before generating: the image-part 500, the context 400. True when it
 * refused. Build b4748 finds a prompt too long only once its slot takes the request, after a
 * streamed answer's headers went out: a stream gets 200, a bare `error:` line and `[DONE]`.
 */
export function refuseLikeLlamaServer(response: ServerResponse, body: FakeRequestBody, script: FakeChatScript): boolean {
  if (script.textOnly && refuseImageParts(response, body)) return true;
  const prompt = fakePromptTokens(body);
  if (script.slotContext === undefined || script.contextShift || prompt <= script.slotContext) return false;
  const error = {
    code: 400,
    message: 'the request exceeds the available context size. try increasing the context size or enable context shift',
    type: 'exceed_context_size_error',
  };
  if (body.stream === true) {
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    response.end(`error: ${JSON.stringify(error)}\n\ndata: [DONE]\n\n`);
    return true;
  }
  return json(response, 400, { error: { ...error, n_prompt_tokens: prompt, n_ctx: script.slotContext } });
}

/**
 * The reply as llama-server generates it: cut at `max_tokens` (finish reason `length`) and,
 * without context shift, failing with "context shift is disabled" when it reaches the end of
 * the slot: a 500 before a whole answer, a bare `error:` line after the tokens that fit in a stream.
 */
export function generateLikeLlamaServer(body: FakeRequestBody, script: FakeChatScript, reply: string[]): FakeChatScript {
  if (script.failure !== undefined) return script;
  const maxTokens = typeof body['max_tokens'] === 'number' ? body['max_tokens'] : Number.POSITIVE_INFINITY;
  const tokens = reply.slice(0, maxTokens);
  const finishReason = reply.length > maxTokens ? 'length' : script.finishReason;
  const room = script.slotContext !== undefined && !script.contextShift ? script.slotContext - fakePromptTokens(body) : Number.POSITIVE_INFINITY;
  if (tokens.length <= room) return { ...script, tokens, ...(finishReason === undefined ? {} : { finishReason }) };
  const message = 'context shift is disabled';
  const failure: FakeFailure = body.stream === true ? { kind: 'legacy-error-line', code: 500, message, afterTokens: room } : { kind: 'http', status: 500, code: 500, message };
  return { ...script, tokens, failure };
}

function json(response: ServerResponse, status: number, body: unknown): true {
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  response.end(JSON.stringify(body));
  return true;
}
