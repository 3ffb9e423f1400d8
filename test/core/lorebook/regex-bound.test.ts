import { describe, expect, it } from 'vitest';
import { activateLorebook } from '../../../src/core/lorebook/activation.js';
import { keyProblem, regexOf } from '../../../src/core/lorebook/keys.js';
import type { LorebookEntry } from '../../../src/core/lorebook/lorebook.js';
import { probeRegexKeys } from '../../../src/core/lorebook/regex-probe.js';
import type { Logger } from '../../../src/core/ports.js';
import { WorkerRegexRunner } from '../../../src/engines/regex/worker-regex-runner.js';
import { book, entry, testRegexes, wordCounter } from './book.js';

/** Long enough that a busy machine's thread start or scheduling is not mistaken for a hung pattern. */
const boundMs = 200;

function recorded(): { logger: Logger; warnings: object[] } {
  const warnings: object[] = [];
  return { warnings, logger: { debug() {}, info() {}, error() {}, warn: (fields) => warnings.push(fields) } };
}

async function timed(entries: LorebookEntry[], regexes: WorkerRegexRunner, ...messages: string[]): Promise<{ ids: string[]; ms: number }> {
  const started = performance.now();
  const activation = await activateLorebook({ book: book(entries), messages, contextTokens: 100_000, tokens: wordCounter(), regexes });
  return { ids: activation.entryIds, ms: performance.now() - started };
}

/** Letters, digits and commas, with no `c`, `!` or `x`: each pattern below backtracks for seconds to minutes on it. */
const hostile = `Sam: ${'a'.repeat(200)} ${'1'.repeat(40)} ${'a,'.repeat(30)}`;

describe('regular-expression keys bounded in time', () => {
  for (const key of ['/(a|aa)*c/', '/a*a*a*a*a*c/i', '/(\\w|\\d)*!/', '/(.*,){9}x/', '/(a|aa)*\\1c/']) {
    it(`stop ${key} within the bound, refuse it from then on, and keep the other entries`, async () => {
      const { logger, warnings } = recorded();
      const regexes = new WorkerRegexRunner({ boundMs, logger });
      const plain = entry({ keys: ['Sam'] });
      const safe = entry({ keys: ['/^sam:/i'] });
      const evil = entry({ keys: [key] });
      const guarded = entry({ keys: ['Sam'], secondaryKeys: [key], secondaryLogic: 'not_any' });
      try {
        const first = await timed([plain, safe, evil, guarded], regexes, hostile);
        // Unbounded, each pattern backtracks for minutes on this text: an answer within seconds is
        // the bound's doing (no tighter figure: a busy machine may be slow to start the thread).
        expect(first.ms).toBeLessThan(15_000);
        expect(regexes.lateRuns).toBe(1);
        // Undecided is never "no match": the NOT entry stays out rather than guessed in.
        expect(first.ids).toEqual([plain.id, safe.id]);
        expect(warnings).toHaveLength(1);
        expect(warnings[0]).toMatchObject({ pattern: regexOf(key)!.source, boundMs });
        expect(JSON.stringify(warnings[0])).not.toContain('aaaa');
        expect(regexes.refusal(regexOf(key)!)).toMatch(/ran for more than/);

        // A fresh thread; the refused pattern is not run again, so nothing outruns its time again.
        const second = await timed([plain, safe, evil, guarded], regexes, hostile);
        expect(second.ids).toEqual([plain.id, safe.id]);
        const third = await timed([plain, safe, evil, guarded], regexes, 'Sam: hello');
        expect(third.ids).toEqual([plain.id, safe.id]);
        expect(regexes.lateRuns).toBe(1);
        expect(warnings).toHaveLength(1);
      } finally {
        regexes.close();
      }
    });
  }

  it('share one bound among all the rounds of a prompt, recursion included', async () => {
    const regexes = new WorkerRegexRunner({ boundMs, logger: recorded().logger });
    const opener = entry({ keys: ['Sam'], content: hostile });
    const slow = entry({ keys: ['/(a|aa)*c/'] });
    try {
      const started = performance.now();
      const activation = await activateLorebook({ book: book([opener, slow], { recursiveScanning: true, maxRecursionSteps: 10 }), messages: ['Sam: hi'], contextTokens: 100_000, tokens: wordCounter(), regexes });
      expect(activation.entryIds).toEqual([opener.id]);
      // One bound for every round: one late run, not one a round (minutes, unbounded).
      expect(regexes.lateRuns).toBe(1);
      expect(performance.now() - started).toBeLessThan(15_000);
    } finally {
      regexes.close();
    }
  });

  it('honour the flags, and find patterns in recursion, through the thread', async () => {
    const caseless = entry({ keys: ['/DRAGON/i'] });
    const exact = entry({ keys: ['/DRAGON/'] });
    const dotAll = entry({ keys: ['/wing.tip/s'] });
    const unicode = entry({ keys: ['/\\p{Script=Greek}{3}/u'] });
    expect((await timed([caseless, exact, dotAll, unicode], testRegexes, 'Sam: a dragon wing\ntip, αβγ')).ids).toEqual([caseless.id, dotAll.id, unicode.id]);
    const first = entry({ keys: ['moon'], content: 'the Tower of Bells' });
    const second = entry({ keys: ['/tower of \\w+/i'] });
    const activation = await activateLorebook({ book: book([first, second], { recursiveScanning: true }), messages: ['Sam: the moon'], contextTokens: 100_000, tokens: wordCounter(), regexes: testRegexes });
    expect(activation.entryIds).toEqual([first.id, second.id]);
  });
});

describe('keys written through the API', () => {
  it('refuse backreferences, which can take exponential time whatever else the pattern says', () => {
    expect(keyProblem('/(a|aa)*\\1c/')).toMatch(/backreference/);
    expect(keyProblem('/(?<word>\\w+) \\k<word>/')).toMatch(/backreference/);
    expect(keyProblem('/[\\1]x/')).toBeUndefined();
    expect(keyProblem('/\\\\1/')).toBeUndefined();
  });

  it('refuse a pattern that hung, and one that hangs on a test text', async () => {
    const regexes = new WorkerRegexRunner({ boundMs, logger: recorded().logger });
    try {
      const hung = regexOf('/(a|aa)*c/')!;
      const fine = regexOf('/dragons?/i')!;
      const refused = await probeRegexKeys([hung, fine, regexOf('/a*a*a*a*a*c/i')!], regexes);
      expect([...refused.keys()].map((key) => key.source)).toEqual(['(a|aa)*c', 'a*a*a*a*a*c']);
      expect(keyProblem('/(a|aa)*c/', regexes)).toMatch(/ran for more than/);
      expect(keyProblem('/dragons?/i', regexes)).toBeUndefined();
    } finally {
      regexes.close();
    }
  });
});
