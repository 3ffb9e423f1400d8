/**
 * The text side of speech engines: checking what may be spoken, and cutting it at sentence
 * ends so the first sentence can play while the rest is still being made.
 */
import { ValidationError } from '../../core/errors.js';

/** The text to speak, trimmed; a `ValidationError` when it is empty or longer than `maxLength`. */
export function checkSpeechText(text: string, maxLength: number): string {
  const spoken = text.trim();
  if (spoken.length === 0) throw ValidationError.field('text', 'must not be empty');
  if (spoken.length > maxLength) throw ValidationError.field('text', `must be at most ${maxLength} characters, not ${spoken.length}`);
  return spoken;
}

/** Sentence-ending punctuation, Western and CJK, with closing quotes and brackets after it. */
const SENTENCE_END = /[.!?…。！？]+["'”’»)\]]*(?=\s|$)|[。！？]+/gu;
const LOWER_CASE_NEXT = /\s*\p{Ll}/uy;
/** Words after which a full stop rarely ends a sentence. */
const ABBREVIATIONS = new Set(['mr', 'mrs', 'ms', 'dr', 'prof', 'sr', 'jr', 'st', 'mt', 'vs', 'e.g', 'i.e', 'fig', 'approx']);

/**
 * Splits text into sentences at `.`, `!`, `?`, `…` (and their CJK forms) followed by a space,
 * and at blank lines. Abbreviations such as "Dr." and initials such as "J." do not end a
 * sentence, nor does a stop followed by a lower-case word. Pieces shorter than
 * `minimumLength` are joined to the next, so a lone "Oh!" is not a request of its own; a short
 * last piece joins the one before it, unless `keepShortTail` (text still being written, whose
 * tail is the start of a sentence to come). Whitespace inside a piece is kept; pieces are trimmed.
 */
export function splitSentences(text: string, minimumLength = 12, { keepShortTail = false } = {}): string[] {
  const pieces: string[] = [];
  for (const paragraph of text.split(/\n\s*\n/)) {
    let start = 0;
    for (const match of paragraph.matchAll(SENTENCE_END)) {
      const end = match.index + match[0].length;
      if (match[0].startsWith('.') && match[0].length === 1 && isAbbreviation(paragraph.slice(start, match.index))) continue;
      // A lower-case word next continues the sentence: `"Really?" she asked.`
      LOWER_CASE_NEXT.lastIndex = end;
      if (LOWER_CASE_NEXT.test(paragraph)) continue;
      pieces.push(paragraph.slice(start, end));
      start = end;
    }
    pieces.push(paragraph.slice(start));
  }
  const sentences: string[] = [];
  let carried = '';
  for (const piece of pieces) {
    const joined = carried === '' ? piece.trim() : `${carried} ${piece.trim()}`.trim();
    if (joined.length < minimumLength) carried = joined;
    else {
      sentences.push(joined);
      carried = '';
    }
  }
  if (carried !== '') {
    if (sentences.length > 0 && !keepShortTail) sentences[sentences.length - 1] = `${sentences.at(-1)} ${carried}`;
    else sentences.push(carried);
  }
  return sentences;
}

/** Whether the text before a full stop ends with an abbreviation or a single initial. */
function isAbbreviation(before: string): boolean {
  const word = /(\S+)$/u.exec(before)?.[1] ?? '';
  const bare = word.replace(/^["'“‘«(\[]+/u, '').toLowerCase();
  return ABBREVIATIONS.has(bare) || /^\p{Lu}$/u.test(word);
}
