import { describe, expect, it } from 'vitest';
import { type ActivationRequest, activateLorebook } from '../../../src/core/lorebook/activation.js';
import type { LorebookEntry, LorebookSettings } from '../../../src/core/lorebook/lorebook.js';
import { book, entry, testRegexes, wordCounter } from './book.js';

async function activate(entries: LorebookEntry[], messages: string[], settings: Partial<LorebookSettings> = {}, extra: Partial<ActivationRequest> = {}) {
  return activateLorebook({ book: book(entries, settings), messages, contextTokens: 100_000, tokens: wordCounter(), regexes: testRegexes, ...extra });
}
const ids = async (...args: Parameters<typeof activate>) => (await activate(...args)).entryIds;

describe('scan depth', () => {
  it('reads the last two messages by default, and as many as an entry asks', async () => {
    const book = entry({ keys: ['lighthouse'] });
    const deeper = entry({ keys: ['lighthouse'], scanDepth: 3 });
    const messages = ['Sam: the lighthouse', 'Ada: yes?', 'Sam: go on'];
    expect(await ids([book, deeper], messages)).toEqual([deeper.id]);
    expect(await ids([book], messages, { scanDepth: 3 })).toEqual([book.id]);
    expect(await ids([book], ['Sam: the lighthouse'], { scanDepth: 0 })).toEqual([]);
  });
});

describe('secondary keys', () => {
  const messages = ['Sam: the king and the queen'];
  const logic = (secondaryLogic: LorebookEntry['secondaryLogic'], secondaryKeys: string[]) => entry({ keys: ['king'], secondaryKeys, secondaryLogic });

  it('AND ANY: one of them with the key', async () => {
    expect(await ids([logic('and_any', ['queen', 'jester'])], messages)).toHaveLength(1);
    expect(await ids([logic('and_any', ['jester', 'fool'])], messages)).toHaveLength(0);
  });

  it('AND ALL: all of them with the key', async () => {
    expect(await ids([logic('and_all', ['queen', 'king'])], messages)).toHaveLength(1);
    expect(await ids([logic('and_all', ['queen', 'jester'])], messages)).toHaveLength(0);
  });

  it('NOT ANY: none of them', async () => {
    expect(await ids([logic('not_any', ['jester', 'fool'])], messages)).toHaveLength(1);
    expect(await ids([logic('not_any', ['jester', 'queen'])], messages)).toHaveLength(0);
  });

  it('NOT ALL: not every one of them', async () => {
    expect(await ids([logic('not_all', ['queen', 'jester'])], messages)).toHaveLength(1);
    expect(await ids([logic('not_all', ['queen', 'king'])], messages)).toHaveLength(0);
  });

  it('apply only when there are secondary keys, and never without the primary key', async () => {
    expect(await ids([logic('and_all', [])], messages)).toHaveLength(1);
    expect(await ids([logic('not_any', [''])], messages)).toHaveLength(1);
    expect(await ids([entry({ keys: ['jester'], secondaryKeys: ['nobody'], secondaryLogic: 'not_any' })], messages)).toHaveLength(0);
  });
});

describe('constant and disabled entries', () => {
  it('lets a constant entry in without keys, and a disabled one never', async () => {
    const constant = entry({ constant: true });
    const disabled = entry({ keys: ['moon'], enabled: false });
    const disabledConstant = entry({ constant: true, enabled: false });
    expect(await ids([disabled, disabledConstant, constant], ['Sam: the moon'])).toEqual([constant.id]);
  });

  it('reads @@activate and @@dont_activate and keeps them out of the content', async () => {
    const forced = entry({ keys: ['nothing-here'], content: '@@activate\nAlways told.' });
    const never = entry({ constant: true, content: '@@dont_activate\nNever told.' });
    const activation = await activate([forced, never], ['Sam: hello']);
    expect(activation.entryIds).toEqual([forced.id]);
    expect(activation.beforeCharacter.map((each) => each.content)).toEqual(['Always told.']);
    expect(activation.beforeCharacter[0]!.cause).toBe('message');
  });
});

describe('the budget', () => {
  // The book's share of a 100-token context: 10 tokens. Each entry costs its words and a token.
  const settings = { tokenBudgetShare: 0.1 };
  const request = { contextTokens: 100 };

  it('lets constant entries in first, whatever their priority', async () => {
    const matched = entry({ keys: ['moon'], priority: 100, content: 'one two three four five' });
    const constant = entry({ constant: true, priority: 0, content: 'six seven eight nine' });
    const activation = await activate([matched, constant], ['Sam: the moon'], settings, request);
    expect(activation.entryIds).toEqual([constant.id]);
    expect(activation.overBudget).toBe(true);
    expect(activation.budget).toBe(10);
  });

  it('then higher priority, then lower insertion order, then book order', async () => {
    const low = entry({ keys: ['moon'], priority: 1, insertionOrder: 0, content: 'a b' });
    const high = entry({ keys: ['moon'], priority: 5, insertionOrder: 50, content: 'c d' });
    const highEarlier = entry({ keys: ['moon'], priority: 5, insertionOrder: 10, content: 'e f' });
    const highEarlierTwin = entry({ keys: ['moon'], priority: 5, insertionOrder: 10, content: 'g h' });
    const activation = await activate([low, high, highEarlierTwin, highEarlier], ['Sam: the moon'], settings, request);
    expect(activation.entryIds).toEqual([highEarlierTwin.id, highEarlier.id, high.id]);
    expect(activation.tokens).toBe(9);
  });

  it('stops at the first entry that does not fit, even when a smaller one after it would', async () => {
    const big = entry({ keys: ['moon'], priority: 5, content: 'one two three four five six seven eight nine ten' });
    const small = entry({ keys: ['moon'], priority: 1, content: 'tiny' });
    const activation = await activate([big, small], ['Sam: the moon'], settings, request);
    expect(activation.entryIds).toEqual([]);
    expect(activation.overBudget).toBe(true);
  });

  it('counts what the prompt will hold, after the macros', async () => {
    const named = entry({ keys: ['moon'], content: '{{char}} knows.' });
    const activation = await activate([named], ['Sam: the moon'], {}, { render: (content) => content.replace('{{char}}', 'Ada of the long name') });
    expect(activation.beforeCharacter[0]!.content).toBe('Ada of the long name knows.');
    expect(activation.tokens).toBe(7);
  });

  it('reads macros in keys too', async () => {
    const named = entry({ keys: ['{{char}}'], content: 'Named.' });
    const render = (text: string) => text.replace('{{char}}', 'Ada');
    expect((await activate([named], ['Sam: hello Ada'], {}, { render })).entryIds).toEqual([named.id]);
    expect((await activate([named], ['Sam: hello {{char}}'], {}, { render })).entryIds).toEqual([]);
  });

  it('asks an exact counter once for the same text', async () => {
    const counter = wordCounter(true);
    const moon = entry({ keys: ['moon'], content: 'The moon is made of rock.' });
    await activate([moon], ['Sam: the moon'], {}, { tokens: counter });
    await activate([moon], ['Sam: the moon'], {}, { tokens: counter });
    expect(counter.asked).toEqual(['The moon is made of rock.']);
  });
});

describe('placement', () => {
  it('groups entries by position in insertion order, the deepest first in the history', async () => {
    const after = entry({ constant: true, position: 'after_character', insertionOrder: 1 });
    const beforeLate = entry({ constant: true, insertionOrder: 9, priority: 100 });
    const beforeEarly = entry({ constant: true, insertionOrder: 2 });
    const shallow = entry({ constant: true, position: 'at_depth', depth: 0, role: 'user' });
    const deep = entry({ constant: true, position: 'at_depth', depth: 3, role: 'assistant' });
    const activation = await activate([after, beforeLate, beforeEarly, shallow, deep], ['Sam: hi']);
    expect(activation.beforeCharacter.map((each) => each.entry.id)).toEqual([beforeEarly.id, beforeLate.id]);
    expect(activation.afterCharacter.map((each) => each.entry.id)).toEqual([after.id]);
    expect(activation.atDepth.map((each) => [each.entry.depth, each.entry.role])).toEqual([
      [3, 'assistant'],
      [0, 'user'],
    ]);
    // Admission order: the higher priority first.
    expect(activation.entryIds[0]).toBe(beforeLate.id);
  });
});

describe('recursion', () => {
  const chain = () => {
    const first = entry({ keys: ['castle'], content: 'The castle belongs to the duke.' });
    const second = entry({ keys: ['duke'], content: 'The duke fears the witch.' });
    const third = entry({ keys: ['witch'], content: 'The witch lives in the marsh.' });
    const fourth = entry({ keys: ['marsh'], content: 'The marsh is cold.' });
    return [first, second, third, fourth] as const;
  };

  it('is off unless the book says so', async () => {
    const [first, second] = chain();
    expect(await ids([first, second], ['Sam: the castle'])).toEqual([first.id]);
    expect(await ids([first, second], ['Sam: the castle'], { recursiveScanning: true })).toEqual([first.id, second.id]);
  });

  it('goes at most the book’s number of steps', async () => {
    const entries = chain();
    const steps = async (maxRecursionSteps: number) => (await ids([...entries], ['Sam: the castle'], { recursiveScanning: true, maxRecursionSteps })).length;
    expect(await steps(1)).toBe(2);
    expect(await steps(2)).toBe(3);
    expect(await steps(3)).toBe(4);
    expect(await steps(0)).toBe(1);
  });

  it('never reads a preventRecursion entry’s content, nor lets an excludeRecursion entry in by content (SillyTavern’s meanings)', async () => {
    const [first, second] = chain();
    const quiet = { ...first, preventRecursion: true };
    expect(await ids([quiet, second], ['Sam: the castle'], { recursiveScanning: true })).toEqual([quiet.id]);
    const shy = { ...second, excludeRecursion: true };
    expect(await ids([first, shy], ['Sam: the castle'], { recursiveScanning: true })).toEqual([first.id]);
    expect(await ids([first, shy], ['Sam: the castle and the duke'], { recursiveScanning: true })).toEqual([first.id, shy.id]);
  });

  it('lets a constant entry’s content activate others', async () => {
    const [, second] = chain();
    const constant = entry({ constant: true, content: 'A duke rules here.' });
    const activation = await activate([second, constant], ['Sam: hello'], { recursiveScanning: true });
    expect(activation.entryIds).toEqual([constant.id, second.id]);
    expect(activation.beforeCharacter.find((each) => each.entry.id === second.id)?.cause).toBe('recursion');
  });

  it('puts direct matches before recursive ones in the budget, whatever their priority', async () => {
    const first = entry({ keys: ['castle'], priority: 0, content: 'The castle belongs to the duke.' });
    const direct = entry({ keys: ['castle'], priority: 0, content: 'Walls.' });
    const recursive = entry({ keys: ['duke'], priority: 100, content: 'The duke fears the witch.' });
    const activation = await activate([recursive, first, direct], ['Sam: the castle'], { recursiveScanning: true, tokenBudgetShare: 0.1 }, { contextTokens: 100 });
    expect(activation.entryIds).toEqual([first.id, direct.id]);
    expect(activation.overBudget).toBe(true);
  });
});
