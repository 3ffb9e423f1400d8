/**
 * An entry's keys as matchers, compiled once and kept by what they were compiled from, so a
 * book read again for every prompt is not compiled again. Keys are plain text (substring, whole
 * words by default, case-insensitive by default) or `/pattern/flags`, as SillyTavern reads them.
 */
import type { RegexKey, RegexKeyRunner } from '../ports.js';
import type { ScanText } from './scan-text.js';
import { backreferenceProblem, repetitionProblem } from './regex-safety.js';
import { isSingleWord, unspacedScript, wordCharacter } from './words.js';

/** A plain key, matched where it is asked; a regular expression, run through the RegexKeyRunner port. */
export type KeyMatcher = ((scan: ScanText) => boolean) | RegexMatcher;

export interface RegexMatcher extends RegexKey {
  /** The pattern and its flags, the same for every entry that has them. */
  id: string;
}

export interface CompiledKeys {
  primary: KeyMatcher[];
  secondary: KeyMatcher[];
  /** The regular expressions among both, which activation has run before it matches. */
  regexes: RegexMatcher[];
  /** Why a key cannot be used (a bad or dangerous pattern): the entry is then never activated. */
  problem: string | undefined;
}

export interface KeyRules {
  caseSensitive: boolean;
  matchWholeWords: boolean;
}

/** Compiled entries kept; past this the oldest go (a few books of many entries each). */
const cacheLimit = 20_000;
/**
 * By an entry's first key, then compared key by key: a book is read afresh for every prompt, so
 * its arrays are new each time, and building a text of all keys to look them up cost more than
 * matching them.
 */
const cache = new Map<string, (CompiledKeys & { from: Source })[]>();
let cached = 0;

interface Source {
  primary: readonly string[];
  secondary: readonly string[];
  rules: KeyRules;
}

export function compileKeys(primary: readonly string[], secondary: readonly string[], rules: KeyRules): CompiledKeys {
  const bucketKey = primary[0] ?? '';
  const bucket = cache.get(bucketKey);
  const found = bucket?.find(({ from }) => from.rules.caseSensitive === rules.caseSensitive && from.rules.matchWholeWords === rules.matchWholeWords && sameKeys(from.primary, primary) && sameKeys(from.secondary, secondary));
  if (found) return found;
  let problem: string | undefined;
  const compile = (keys: readonly string[]) =>
    keys.flatMap((key) => {
      if (key.trim() === '') return [];
      const compiled = compileKey(key, rules);
      if (typeof compiled === 'string') {
        problem ??= `${JSON.stringify(key)}: ${compiled}`;
        return [];
      }
      return [compiled];
    });
  const primaryMatchers = compile(primary);
  const secondaryMatchers = compile(secondary);
  const regexes = [...primaryMatchers, ...secondaryMatchers].filter((matcher): matcher is RegexMatcher => typeof matcher !== 'function');
  const compiled = { primary: primaryMatchers, secondary: secondaryMatchers, regexes, problem, from: { primary: [...primary], secondary: [...secondary], rules: { ...rules } } };
  if (cached >= cacheLimit) {
    cache.clear();
    cached = 0;
  }
  cache.set(bucketKey, [...(bucket ?? []), compiled]);
  cached++;
  return compiled;
}

function sameKeys(left: readonly string[], right: readonly string[]): boolean {
  if (left.length !== right.length) return false;
  for (let index = 0; index < left.length; index++) if (left[index] !== right[index]) return false;
  return true;
}

/**
 * Why `key` cannot be used as a key, for an editor to say so when it is written; undefined when
 * it can. Stricter than a card's keys, taken as they are: a backreference, or a pattern `regexes`
 * stopped running, is refused here too.
 */
export function keyProblem(key: string, regexes?: Pick<RegexKeyRunner, 'refusal'>): string | undefined {
  const compiled = compileKey(key, { caseSensitive: false, matchWholeWords: true });
  if (typeof compiled === 'string') return compiled;
  if (typeof compiled === 'function') return undefined;
  return backreferenceProblem(compiled.source) ?? regexes?.refusal(compiled);
}

/** The regular expression `key` stands for, when it is a usable one. */
export function regexOf(key: string): RegexMatcher | undefined {
  const compiled = compileKey(key, { caseSensitive: false, matchWholeWords: true });
  return typeof compiled === 'object' ? compiled : undefined;
}

/** `/pattern/flags`, as SillyTavern recognises a regular-expression key. */
const regexKey = /^\/([\s\S]+)\/([a-z]*)$/;

/** A matcher, or why there can be none. */
function compileKey(key: string, rules: KeyRules): KeyMatcher | string {
  const regex = regexKey.exec(key);
  if (regex) return compileRegex(regex[1]!, regex[2]!);
  const needle = rules.caseSensitive ? key.trim() : key.trim().toLowerCase();
  const haystack = (scan: ScanText) => (rules.caseSensitive ? scan.text : scan.lower);
  if (!rules.matchWholeWords) return (scan) => haystack(scan).includes(needle);
  if (isSingleWord(needle)) return (scan) => scan.words(!rules.caseSensitive).has(needle);
  // Only an edge that is a word character needs a boundary: "Dr." is found in "Dr.Who".
  const startBound = isWordCharacter(needle, 0);
  const endBound = isWordCharacter(needle, needle.length - 1);
  // Every word between spaces in the key is a whole word of any text it is in: the longest, looked up first, rules most texts out.
  const longest = needle
    .split(' ')
    .filter(isSingleWord)
    .reduce((best, word) => (word.length > best.length ? word : best), '');
  if (longest !== '') return (scan) => scan.words(!rules.caseSensitive).has(longest) && containsWholeWord(haystack(scan), needle, startBound, endBound);
  return (scan) => containsWholeWord(haystack(scan), needle, startBound, endBound);
}

function compileRegex(pattern: string, flags: string): KeyMatcher | string {
  if (!/^[dimsuv]*$/.test(flags.replace(/[gy]/g, ''))) return `unknown regular expression flags "${flags}"`;
  const problem = repetitionProblem(pattern);
  if (problem) return problem;
  let expression: RegExp;
  try {
    // Compiled here only to be checked: it runs elsewhere. `g` and `y` would make `test` remember where it stopped between texts.
    expression = new RegExp(pattern, flags.replace(/[gy]/g, ''));
  } catch (error) {
    return `not a valid regular expression (${(error as Error).message})`;
  }
  return { id: `${expression.flags}/${pattern}`, source: pattern, flags: expression.flags };
}

function containsWholeWord(haystack: string, needle: string, startBound: boolean, endBound: boolean): boolean {
  for (let index = haystack.indexOf(needle); index !== -1; index = haystack.indexOf(needle, index + 1)) {
    const before = !startBound || index === 0 || !isWordCharacter(haystack, index - 1);
    const end = index + needle.length;
    const after = !endBound || end === haystack.length || !isWordCharacter(haystack, end);
    if (before && after) return true;
  }
  return false;
}

function isWordCharacter(text: string, index: number): boolean {
  const code = text.charCodeAt(index);
  if (code < 0x80) return (code >= 0x30 && code <= 0x39) || (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a) || code === 0x5f;
  // A surrogate pair's halves stand for one character: read it whole.
  const character = String.fromCodePoint(text.codePointAt(code >= 0xdc00 && code <= 0xdfff && index > 0 ? index - 1 : index) ?? code);
  return wordCharacter.test(character) && !unspacedScript.test(character);
}
