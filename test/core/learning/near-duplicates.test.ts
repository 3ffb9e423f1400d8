import { describe, expect, it } from 'vitest';
import { contentWords, refusedParaphrase, wordSimilarity, wordThreshold } from '../../../src/core/learning/near-duplicates.js';
import type { Embedder } from '../../../src/core/ports.js';
import { TextVectors } from '../../../src/core/text-ranking.js';

/** Said in other words: the same fact. */
const paraphrases: Array<[string, string]> = [
  ['I grew up by the sea.', 'I grew up near the sea.'],
  ['My favourite colour is green.', 'Green is my favourite colour.'],
  ['I love hiking in the mountains.', 'I love to hike in the mountains.'],
  ['I have two cats called Tom and Kit.', 'I own two cats called Tom and Kit.'],
  ['I work as a nurse at the hospital.', 'I am a nurse at the hospital.'],
  ["My sister's name is Ana.", 'My sister is named Ana.'],
];

/** Alike in words, different facts. */
const differentFacts: Array<[string, string]> = [
  ['I have a sister called Ana.', 'I have a sister called Mia.'],
  ['I work as a nurse.', 'I work as a teacher.'],
  ['I grew up by the sea.', 'I grew up in the mountains.'],
  ['I play the cello.', 'I play the violin.'],
  ['I was born in 1990.', 'I was born in 1991.'],
  ['My favourite colour is green.', 'My favourite colour is blue.'],
  ['I have a dog.', 'I am afraid of dogs.'],
];

const refused = (text: string) => [{ id: 'refused', text }];

describe('a refused proposal in other words', () => {
  it('is the same fact for paraphrases', async () => {
    for (const [before, now] of paraphrases) {
      expect(await refusedParaphrase(now, refused(before)), `${now} / ${before}`).toMatchObject({ id: 'refused' });
    }
  });

  it('is another fact when a name, a number, or the thing itself differs', async () => {
    for (const [before, now] of differentFacts) {
      expect(await refusedParaphrase(now, refused(before)), `${now} / ${before}`).toBeUndefined();
    }
  });

  it('compares content words, stemmed, without fillers', () => {
    expect([...contentWords("I love hiking and my sister's hikes.")]).toEqual(['lov', 'hik', 'sister']);
    expect(wordSimilarity('I play the cello.', 'I play the violin.')).toBeLessThan(wordThreshold);
  });

  it('counts meaning too with embeddings, but never across different names or numbers', async () => {
    // An embedder that puts "moved to the coast" and "live by the sea" together, as a sentence model would.
    const embedder: Embedder = {
      modelId: 'toy',
      embed: async (texts) => texts.map((text) => (/coast|sea/.test(text) ? [1, 0.05] : /Lisbon|Porto/.test(text) ? [0.05, 1] : [0.5, 0.5])),
    };
    const vectors = new TextVectors(embedder);
    expect(await refusedParaphrase('I moved to the coast.', refused('I live by the sea.'))).toBeUndefined();
    expect(await refusedParaphrase('I moved to the coast.', refused('I live by the sea.'), vectors)).toMatchObject({ id: 'refused' });
    expect(await refusedParaphrase('I moved to Lisbon.', refused('I moved to Porto.'), vectors)).toBeUndefined();
    const failing = new TextVectors({ modelId: 'down', embed: async () => Promise.reject(new Error('down')) });
    expect(await refusedParaphrase('I moved to the coast.', refused('I live by the sea.'), failing)).toBeUndefined();
  });
});
