/**
 * The text an entry's keys are looked for in: the newest messages, each `speaker: text`, newest
 * last, and in recursion the contents of the entries already in. Its lowercase form and its
 * bounded tail are made once, on first use, and shared by every entry that scans it.
 */

import { unspacedScript, unspacedScripts, wordRuns } from './words.js';

/**
 * Regular expressions read at most this many characters, the newest: a key that backtracks in
 * proportion to a power of the length stays within milliseconds, and a prompt sends less to the
 * thread that runs them (plain keys read everything, in linear time).
 */
export const maxRegexScanCharacters = 8_000;

export class ScanText {
  /**
   * What each regular-expression key (by its id) gave on this text, once run: undefined while
   * not decided (not run yet, or not in time).
   */
  readonly regexOutcomes = new Map<string, boolean | undefined>();
  #lower: string | undefined;
  #bounded: string | undefined;
  #words: Set<string> | undefined;
  #lowerWords: Set<string> | undefined;

  constructor(readonly text: string) {}

  get lower(): string {
    this.#lower ??= this.text.toLowerCase();
    return this.#lower;
  }

  /**
   * The whole words of the text (as `words.ts` bounds them), so a one-word key is a lookup
   * rather than a search of the text: most keys are one word, and a book holds hundreds.
   */
  words(lower: boolean): Set<string> {
    if (lower) {
      this.#lowerWords ??= wordsOf(this.lower);
      return this.#lowerWords;
    }
    this.#words ??= wordsOf(this.text);
    return this.#words;
  }

  /** The newest `maxRegexScanCharacters` characters. */
  get bounded(): string {
    this.#bounded ??= this.text.length <= maxRegexScanCharacters ? this.text : this.text.slice(-maxRegexScanCharacters);
    return this.#bounded;
  }
}

function wordsOf(text: string): Set<string> {
  const words = new Set<string>();
  for (const run of text.match(wordRuns) ?? []) {
    // Letters of unspaced scripts end a word; the runs between them are words of their own.
    if (unspacedScript.test(run)) for (const part of run.split(unspacedScripts)) words.add(part);
    else words.add(run);
  }
  return words;
}

/**
 * The texts to scan, one per scan depth asked for (entries may each have their own), built on
 * demand from `messages` (newest last); with `recursion`, the contents activated so far follow
 * the messages.
 */
export class ScanTexts {
  readonly #byDepth = new Map<number, ScanText>();

  constructor(
    private readonly messages: readonly string[],
    private readonly recursion = '',
  ) {}

  at(depth: number): ScanText {
    let scan = this.#byDepth.get(depth);
    if (!scan) {
      const recent = depth <= 0 ? [] : this.messages.slice(-depth);
      scan = new ScanText([...recent, this.recursion].filter((text) => text !== '').join('\n'));
      this.#byDepth.set(depth, scan);
    }
    return scan;
  }
}
