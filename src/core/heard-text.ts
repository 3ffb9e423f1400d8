/**
 * How much of a spoken reply a listener heard, when they talked over it: the sentences played
 * to the end, and of the sentence cut off, its words in proportion to the time it played.
 * Speech engines give no word timings, and speech runs at a near-even rate within a sentence,
 * so the proportion is close; the cut is made at a word, never inside one.
 */

/** One sentence as played: its text and how long its audio lasts. */
export interface SpokenSentence {
  text: string;
  durationMs: number;
}

/** The words heard of `sentences` (played in order, back to back) after `playedMs` of audio. */
export function heardText(sentences: readonly SpokenSentence[], playedMs: number): string {
  const heard: string[] = [];
  let elapsed = 0;
  for (const sentence of sentences) {
    if (elapsed + sentence.durationMs <= playedMs) {
      heard.push(sentence.text.trim());
      elapsed += sentence.durationMs;
      continue;
    }
    const share = sentence.durationMs > 0 ? (playedMs - elapsed) / sentence.durationMs : 0;
    const partial = wordsUpTo(sentence.text, share);
    if (partial !== '') heard.push(`${partial}…`);
    break;
  }
  return heard.filter((text) => text !== '').join(' ');
}

/** The leading words of `text` whose characters make up `share` (0–1) of it, rounded down to a word. */
function wordsUpTo(text: string, share: number): string {
  const words = text.trim().split(/\s+/).filter((word) => word !== '');
  const total = words.reduce((sum, word) => sum + word.length, 0);
  const budget = Math.max(0, share) * total;
  const kept: string[] = [];
  let used = 0;
  for (const word of words) {
    if (used + word.length > budget) break;
    kept.push(word);
    used += word.length;
  }
  // Dangling punctuation after the last heard word (a comma) reads badly before the ellipsis.
  return kept.join(' ').replace(/[,;:—–-]+$/u, '');
}
