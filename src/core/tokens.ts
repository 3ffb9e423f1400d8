/**
 * Counting tokens without the engine's tokenizer. The estimate is built to over-count, never
 * under-count: a prompt we think fits but the engine refuses breaks the conversation, while an
 * over-count only sends a little less history. Exact counts come from engines that offer them
 * (llama-server's `/tokenize`, see src/engines/chat/llama-server-tokens.ts); every engine's
 * `usage.prompt_tokens` teaches the estimate how far off it is for that model.
 */
import type { PromptFraming, TokenCounter } from './ports.js';

/**
 * What a chat template adds, when the engine cannot say: more than the common ones take.
 * ChatML, Llama 3, Gemma and Granite put five tokens around each message, Mistral fewer; the
 * generation prompt takes three or four, a begin-of-text token one, and Llama 3.1 writes a
 * dated preamble of about twenty into the system message.
 */
export const defaultPromptFraming: PromptFraming = { messageTokens: 6, promptTokens: 32 };

/** The framing the counter measured from the engine, else the default; never fails. */
export async function promptFramingOf(counter: TokenCounter): Promise<PromptFraming> {
  return (await counter.promptFraming?.().catch(() => undefined)) ?? defaultPromptFraming;
}

/**
 * Tokens per character by kind of character, from what common tokenizers (Llama 2/3, Mistral,
 * Qwen, GPT-4's cl100k) do, taking the worst of them:
 * - ASCII letters, digits and spaces: 3.5 to 4.5 characters a token in English; we say 3.
 * - ASCII punctuation often stands alone: half a token each.
 * - Accented Latin, Greek, Cyrillic, Hebrew, Arabic: often split per character; one each.
 * - CJK, kana, Hangul: about one a character in large vocabularies, two or three (bytes) in
 *   small ones with byte fallback; we say 1.5.
 * - Emoji and other characters beyond the BMP: byte fallback, up to one token per UTF-8 byte (4).
 * - Anything else (Indic, Thai, symbols, joiners): one token per UTF-8 byte, the byte-fallback worst.
 */
function characterTokens(codePoint: number): number {
  if (codePoint < 0x80) {
    const isWordOrSpace = (codePoint >= 0x30 && codePoint <= 0x39) || (codePoint >= 0x41 && codePoint <= 0x5a) || (codePoint >= 0x61 && codePoint <= 0x7a) || codePoint === 0x20;
    if (isWordOrSpace) return 1 / 3;
    return codePoint === 0x0a || codePoint === 0x09 ? 1 / 3 : 0.5;
  }
  if (codePoint < 0x0800 && codePoint >= 0x00c0) return 1; // Latin-1 letters to Arabic and Syriac
  if (codePoint < 0x00c0) return 1; // Latin-1 punctuation and symbols
  if (isCjk(codePoint)) return 1.5;
  if (codePoint > 0xffff) return 4;
  return 3;
}

function isCjk(codePoint: number): boolean {
  return (
    (codePoint >= 0x2e80 && codePoint <= 0x9fff) || // radicals, punctuation, kana, CJK unified
    (codePoint >= 0xac00 && codePoint <= 0xd7af) || // Hangul syllables
    (codePoint >= 0x1100 && codePoint <= 0x11ff) || // Hangul jamo
    (codePoint >= 0xf900 && codePoint <= 0xfaff) || // compatibility ideographs
    (codePoint >= 0xff00 && codePoint <= 0xffef) // full-width forms
  );
}

/** A conservative token count of `text` alone, without message framing. */
export function estimateTextTokens(text: string): number {
  let tokens = 0;
  for (const character of text) tokens += characterTokens(character.codePointAt(0) ?? 0);
  return Math.ceil(tokens);
}

/** A conservative count of one chat message of `text`, framing included. */
export function estimateTokens(text: string): number {
  return estimateTextTokens(text) + defaultPromptFraming.messageTokens;
}

/** How many answers' ratios the learning estimate remembers; it uses the largest. */
const remembered = 8;

/**
 * The estimate, corrected by what the engine reported. `observe` receives the estimate of a
 * prompt and the engine's `usage.prompt_tokens` for it; later counts are scaled by the largest
 * ratio of the last few answers, so the correction follows the model but errs high.
 */
export class LearningTokenEstimator implements TokenCounter {
  readonly exact = false;
  readonly #ratios: number[] = [];

  /** The factor applied to the estimate: at least 0.5 (an estimate is never trusted to shrink more). */
  get ratio(): number {
    return this.#ratios.length === 0 ? 1 : Math.max(0.5, ...this.#ratios);
  }

  async count(texts: readonly string[]): Promise<number[]> {
    return texts.map((text) => Math.ceil(estimateTextTokens(text) * this.ratio));
  }

  observe(estimatedTokens: number, promptTokens: number): void {
    if (estimatedTokens <= 0 || promptTokens <= 0) return;
    // The estimate given was already scaled by the current ratio; learn against the raw one.
    this.#ratios.push(promptTokens / (estimatedTokens / this.ratio));
    if (this.#ratios.length > remembered) this.#ratios.shift();
  }
}
