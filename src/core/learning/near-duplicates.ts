/**
 * Whether a new proposal of a character's own memory says what its owner already refused in
 * other words. The database refuses the same words (normalised); this catches a paraphrase, so
 * "a rejected fact is never proposed again" holds for the fact, not only its wording.
 *
 * Two facts are the same when they name the same names and numbers (so "my sister is called
 * Ana" never hides "my sister is called Mia", nor "born in 1990" "born in 1991") and either
 * their content words mostly agree (Dice coefficient of stemmed words without fillers, at least
 * `wordThreshold`) or, with embeddings, their meanings are close (cosine at least
 * `meaningThreshold`). Both thresholds lean to letting a fact through: a paraphrase missed is
 * one more proposal the owner rejects, a new fact refused is lost for good.
 */
import type { TextVectors } from '../text-ranking.js';

/** Content words two texts share for them to be one fact: 3 of 4 on average ("I play the cello" / "I play the violin" is 1/2). */
export const wordThreshold = 0.75;
/** Sentence embeddings put paraphrases above 0.9 and related but different facts mostly below. */
export const meaningThreshold = 0.9;

/** Words that carry no fact of their own: pronouns, articles, auxiliaries, prepositions. */
const fillers = new Set(
  (
    'i me my mine myself am is are was were be been being have has had do does did a an the to of in on at by near for with from into up ' +
    'and or but so that this these those it its as very really just also too now then still there here who which what when where ' +
    "i'm i've i'd we us our you your he she they them their his her"
  ).split(' '),
);

/** The content words of a text, crudely stemmed ("hiking", "hikes", "hike" are one). */
export function contentWords(text: string): Set<string> {
  const words = text.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? [];
  return new Set(words.map((word) => word.replace(/'s$/u, '')).filter((word) => word !== '' && !fillers.has(word)).map(stem));
}

function stem(word: string): string {
  for (const suffix of ['ing', 'ed', 'es', 's', 'e']) {
    if (word.endsWith(suffix) && word.length - suffix.length >= 3) return word.slice(0, -suffix.length);
  }
  return word;
}

/** How much two texts' content words agree, 0 to 1 (Dice coefficient). */
export function wordSimilarity(left: string, right: string): number {
  const [a, b] = [contentWords(left), contentWords(right)];
  if (a.size === 0 && b.size === 0) return 1;
  let shared = 0;
  for (const word of a) if (b.has(word)) shared += 1;
  return (2 * shared) / (a.size + b.size);
}

/** Names (capitalised words past the first) and numbers: what tells two otherwise alike facts apart. */
function particulars(text: string): string {
  const words = text.match(/[\p{L}\p{N}]+/gu) ?? [];
  const found = words.filter((word, index) => /^\p{N}+$/u.test(word) || (index > 0 && word !== 'I' && /^\p{Lu}/u.test(word)));
  return [...new Set(found.map((word) => word.toLowerCase()))].sort().join(' ');
}

/**
 * The refused memory `text` repeats in other words, if any. With `vectors` (embeddings
 * configured), meaning counts too; an embedder that fails leaves the words to judge.
 */
export async function refusedParaphrase<Memory extends { id: string; text: string }>(
  text: string,
  refused: readonly Memory[],
  vectors?: TextVectors,
): Promise<Memory | undefined> {
  const alike = refused.filter((memory) => particulars(memory.text) === particulars(text));
  if (alike.length === 0) return undefined;
  const byWords = alike.find((memory) => wordSimilarity(memory.text, text) >= wordThreshold);
  if (byWords || !vectors) return byWords;
  const meaning = await vectors.similarities(text, alike).catch(() => undefined);
  return meaning && alike.find((memory) => (meaning.get(memory.id) ?? 0) >= meaningThreshold);
}
