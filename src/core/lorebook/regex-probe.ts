/**
 * A person writing a regular-expression key is told at once when it backtracks without end on
 * a few texts that make the usual culprits do so (`(a|aa)*c`, `a*a*a*c`, `(\w|\d)*!`,
 * `(.*,){9}x` on runs of letters, digits, commas), rather than the first chat that meets it
 * paying the bound. Not a proof of safety: the bound at prompt time is that.
 */
import type { RegexCheck, RegexKeyRunner } from '../ports.js';
import type { RegexMatcher } from './keys.js';

const testTexts = ['a'.repeat(200), '1'.repeat(64), 'a,'.repeat(32), ' '.repeat(64), 'aA1 ,.-'.repeat(16)];

/** The keys among `keys` that ran past the bound on a test text, with why; each learned refused by `regexes`. */
export async function probeRegexKeys(keys: readonly RegexMatcher[], regexes: RegexKeyRunner): Promise<Map<RegexMatcher, string>> {
  const refused = new Map<RegexMatcher, string>();
  let waiting = [...keys];
  // A run ends at the first pattern that hangs and leaves the rest undecided: those run again.
  for (let round = 0; round <= keys.length && waiting.length > 0; round++) {
    const checks: RegexCheck[] = waiting.flatMap((key) => testTexts.map((_, text) => ({ key, text })));
    const outcomes = await regexes.run(testTexts, checks, regexes.boundMs);
    const undecided = new Set(waiting.filter((_, index) => outcomes.slice(index * testTexts.length, (index + 1) * testTexts.length).includes(undefined)));
    for (const key of undecided) {
      const problem = regexes.refusal(key);
      if (problem !== undefined) refused.set(key, problem);
    }
    const next = waiting.filter((key) => undecided.has(key) && !refused.has(key));
    // Undecided without a culprit (a busy machine): given the benefit of the doubt, as prompts would.
    if (next.length === waiting.length) break;
    waiting = next;
  }
  return refused;
}
