import { describe, expect, it } from 'vitest';
import { activateLorebook } from '../../../src/core/lorebook/activation.js';
import { compileKeys, keyProblem } from '../../../src/core/lorebook/keys.js';
import type { LorebookEntry } from '../../../src/core/lorebook/lorebook.js';
import { repetitionProblem } from '../../../src/core/lorebook/regex-safety.js';
import { maxRegexScanCharacters } from '../../../src/core/lorebook/scan-text.js';
import { book, entry, testRegexes, wordCounter } from './book.js';

/** The ids of `entries` activated by `messages` (newest last). */
async function active(entries: LorebookEntry[], ...messages: string[]): Promise<string[]> {
  return (await activateLorebook({ book: book(entries), messages, contextTokens: 100_000, tokens: wordCounter(), regexes: testRegexes })).entryIds;
}

describe('plain keys', () => {
  it('match without regard to case unless the entry says so', async () => {
    const loose = entry({ keys: ['Dragon'] });
    const strict = entry({ keys: ['Dragon'], caseSensitive: true });
    expect(await active([loose, strict], 'Sam: a dragon flew by')).toEqual([loose.id]);
    expect(await active([loose, strict], 'Sam: a Dragon flew by')).toEqual([loose.id, strict.id]);
  });

  it('match whole words by default, and inside words when the entry says so', async () => {
    const whole = entry({ keys: ['cat'] });
    const inside = entry({ keys: ['cat'], matchWholeWords: false });
    expect(await active([whole, inside], 'Sam: concatenate these')).toEqual([inside.id]);
    expect(await active([whole, inside], 'Sam: the cat, purring.')).toEqual([whole.id, inside.id]);
    expect(await active([whole], 'Sam: cat')).toEqual([whole.id]);
    expect(await active([entry({ keys: ['dark forest'] })], 'Sam: the dark forests')).toEqual([]);
    expect(await active([entry({ keys: ['café'] })], 'Sam: cafés')).toEqual([]);
  });

  it('need a boundary only where the key has a word character at its edge', async () => {
    const title = entry({ keys: ['Dr.'] });
    expect(await active([title], 'Sam: ask Dr.Who')).toEqual([title.id]);
    expect(await active([title], 'Sam: ask ADr.Who')).toEqual([]);
  });

  it('are found inside sentences written without spaces (CJK)', async () => {
    const tokyo = entry({ keys: ['東京'] });
    expect(await active([tokyo], 'Sam: 私は東京に住んでいます')).toEqual([tokyo.id]);
  });

  it('are found in the speaker names that head the messages', async () => {
    const named = entry({ keys: ['Sam'] });
    expect(await active([named], 'Sam: hello')).toEqual([named.id]);
  });

  it('ignore empty keys, and an entry with no key only comes in when constant', async () => {
    const empty = entry({ keys: ['', '  '] });
    const constant = entry({ keys: [], constant: true });
    expect(await active([empty, constant], 'Sam: anything at all')).toEqual([constant.id]);
  });
});

describe('regular-expression keys', () => {
  it('match as /pattern/flags, the flags deciding case', async () => {
    const regex = entry({ keys: ['/dragons?\\b/'] });
    const loose = entry({ keys: ['/DRAGON/i'] });
    expect(await active([regex, loose], 'Sam: two dragons')).toEqual([regex.id, loose.id]);
    expect(await active([regex], 'Sam: two DRAGONS')).toEqual([]);
  });

  it('keep no state between texts with the g flag', async () => {
    const global = entry({ keys: ['/moon/g'] });
    for (let run = 0; run < 3; run++) expect(await active([global], 'Sam: the moon')).toEqual([global.id]);
  });

  it('skip an entry with a bad pattern, never throwing, and say why to an editor', async () => {
    const bad = entry({ keys: ['/([unclosed/', 'moon'] });
    const good = entry({ keys: ['moon'] });
    expect(await active([bad, good], 'Sam: the moon')).toEqual([good.id]);
    expect(keyProblem('/([unclosed/')).toMatch(/not a valid regular expression/);
    expect(keyProblem('/x/q')).toMatch(/flags/);
    expect(keyProblem('plain words')).toBeUndefined();
  });

  it('skip an entry whose bad key is a secondary one: a NOT key that never matches would let it in', async () => {
    const bad = entry({ keys: ['moon'], secondaryKeys: ['/(/'], secondaryLogic: 'not_any' });
    expect(await active([bad], 'Sam: the moon')).toEqual([]);
  });

  it('refuse nested repetition, which can backtrack for minutes, and still run in time', async () => {
    const evil = entry({ keys: ['/(a+)+$/'] });
    const started = performance.now();
    expect(await active([evil], `Sam: ${'a'.repeat(40)}!`)).toEqual([]);
    // Run, it would backtrack for minutes: an answer within seconds means it was refused unrun.
    expect(performance.now() - started).toBeLessThan(15_000);
    for (const pattern of ['(a+)+', '(a*)*b', '(?:\\w+\\s?)*$', '((ab)+c)+', '(x{2,})+']) expect(repetitionProblem(pattern), pattern).toBeDefined();
    for (const pattern of ['(cat|dog)s?', '[(a+)+]', '\\(a+\\)+', '(ab){2}', 'a+b*', '(a+)?']) expect(repetitionProblem(pattern), pattern).toBeUndefined();
  });

  it('read only the newest part of a very long text', async () => {
    const far = entry({ keys: ['/needle/'] });
    const plain = entry({ keys: ['needle'] });
    const text = `Sam: needle ${'hay '.repeat(maxRegexScanCharacters)}`;
    expect(await active([far, plain], text)).toEqual([plain.id]);
  });
});

describe('compiled keys', () => {
  it('are compiled once for the same keys and rules', () => {
    const rules = { caseSensitive: false, matchWholeWords: true };
    expect(compileKeys(['a', '/b/'], ['c'], rules)).toBe(compileKeys(['a', '/b/'], ['c'], rules));
    expect(compileKeys(['a'], [], rules)).not.toBe(compileKeys(['a'], [], { ...rules, caseSensitive: true }));
  });
});
