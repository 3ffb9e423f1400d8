/**
 * Measures what the model's chat template adds to a prompt, as llama-server applies it: two
 * probe conversations rendered by `POST /apply-template` (build b4748 and later) and counted by
 * `/tokenize`, less the count of their messages' own text. The difference between them is two
 * messages' framing; what is left of the shorter is the generation prompt, a begin-of-text
 * token and any preamble the template writes (Llama 3.1 dates its system message).
 */
import type { PromptFraming } from '../../core/ports.js';
import type { EngineClient } from '../http.js';
import { field } from './openai-wire.js';

/** Counts `text` as the engine does; `addSpecial` adds the begin-of-text token a prompt gets. */
export type Tokenize = (text: string, addSpecial: boolean) => Promise<number>;

const shorter = [
  { role: 'system', content: 'You are a kind friend.' },
  { role: 'user', content: 'Hello there.' },
];
const longer = [...shorter, { role: 'assistant', content: 'Hi! How are you?' }, { role: 'user', content: 'Well, thank you.' }];

/** A token more each: the tokenizer may split a message's edges differently inside the whole prompt. */
const boundaryMargin = 1;

export async function measurePromptFraming(client: EngineClient, tokenize: Tokenize): Promise<PromptFraming> {
  const [shorterPrompt, longerPrompt] = await Promise.all([render(client, shorter), render(client, longer)]);
  const [shorterTokens, longerTokens, ...texts] = await Promise.all([
    tokenize(shorterPrompt, true),
    tokenize(longerPrompt, true),
    ...longer.map((message) => tokenize(message.content, false)),
  ]);
  const text = (count: number) => texts.slice(0, count).reduce((sum, tokens) => sum + tokens, 0);
  const messageTokens = Math.max(0, Math.ceil((longerTokens - shorterTokens - (text(4) - text(2))) / 2));
  const promptTokens = Math.max(0, shorterTokens - text(2) - 2 * messageTokens);
  return { messageTokens: messageTokens + boundaryMargin, promptTokens: promptTokens + boundaryMargin };
}

async function render(client: EngineClient, messages: readonly { role: string; content: string }[]): Promise<string> {
  const prompt = field(await client.postJson('/apply-template', { messages }), 'prompt');
  if (typeof prompt !== 'string') throw client.error('Chat engine answered /apply-template without a prompt.', { retryable: false });
  return prompt;
}
