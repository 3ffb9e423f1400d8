/**
 * What a whole word is for a key: a run of letters, marks, digits and underscores. Scripts
 * written without spaces between words (Chinese, Japanese, Thai…) do not count as word
 * characters, so a key in them is found inside a sentence, as SillyTavern's ASCII `\W` lets it be.
 */

export const wordCharacter = /[\p{L}\p{M}\p{N}_]/u;
export const wordRuns = /[\p{L}\p{M}\p{N}_]+/gu;
const unspacedRange = '\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\p{Script=Thai}\\p{Script=Lao}\\p{Script=Khmer}\\p{Script=Myanmar}';
export const unspacedScript = new RegExp(`[${unspacedRange}]`, 'u');
export const unspacedScripts = new RegExp(`[${unspacedRange}]+`, 'u');

/** Whether `text` is one whole word, so it can be looked up among a text's words. */
export function isSingleWord(text: string): boolean {
  return /^[\p{L}\p{M}\p{N}_]+$/u.test(text) && !unspacedScript.test(text);
}
