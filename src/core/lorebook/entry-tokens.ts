/**
 * What activated entries cost. An engine's exact count is a request per text (llama-server's
 * `/tokenize`), and a book's entries are the same from prompt to prompt: exact counts are kept
 * per counter and text. An estimate follows what the engine reports, so it is asked afresh.
 */
import type { TokenCounter } from '../ports.js';

/** Texts kept per counter; past this the oldest go. */
const cacheLimit = 20_000;
const exactCounts = new WeakMap<Pick<TokenCounter, 'count'>, Map<string, number>>();

export async function countEntryTokens(counter: Pick<TokenCounter, 'count' | 'exact'>, texts: readonly string[]): Promise<number[]> {
  if (texts.length === 0) return [];
  if (!counter.exact) return counter.count(texts);
  let known = exactCounts.get(counter);
  if (!known) {
    known = new Map();
    exactCounts.set(counter, known);
  }
  const missing = [...new Set(texts.filter((text) => !known.has(text)))];
  const fresh = new Map<string, number>();
  if (missing.length > 0) {
    const counts = await counter.count(missing);
    missing.forEach((text, index) => {
      fresh.set(text, counts[index] ?? 0);
      if (known.size >= cacheLimit) known.delete(known.keys().next().value!);
      known.set(text, counts[index] ?? 0);
    });
  }
  return texts.map((text) => fresh.get(text) ?? known.get(text) ?? 0);
}
