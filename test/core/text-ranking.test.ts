import { describe, expect, it } from 'vitest';
import type { Embedder } from '../../src/core/ports.js';
import { TextVectors, WordIndexes } from '../../src/core/text-ranking.js';

/** An embedder that counts what it is asked to embed. */
function countingEmbedder(): Embedder & { embedded: string[] } {
  const embedded: string[] = [];
  return { modelId: 'toy', embedded, embed: async (texts) => (embedded.push(...texts), texts.map((text) => [text.length, 1])) };
}

describe('the caches of ranking', () => {
  it('forgets the vector of a deleted memory at once, and keeps the others', async () => {
    const embedder = countingEmbedder();
    const vectors = new TextVectors(embedder);
    const items = [
      { id: 'secret', text: 'ana told a secret' },
      { id: 'boat', text: 'ana has a boat' },
    ];
    await vectors.similarities('query', items);
    vectors.forget(['secret']);
    embedder.embedded.length = 0;
    await vectors.similarities('query', items);
    // Only the forgotten one (and the query) is embedded again.
    expect(embedder.embedded).toEqual(['query', 'ana told a secret']);
  });

  it('keeps at most its bound of vectors, dropping the least recently used', async () => {
    const embedder = countingEmbedder();
    const vectors = new TextVectors(embedder, 2);
    await vectors.similarities('q', [{ id: 'a', text: 'a' }]);
    await vectors.similarities('q', [{ id: 'b', text: 'b' }]);
    await vectors.similarities('q', [{ id: 'a', text: 'a' }]);
    await vectors.similarities('q', [{ id: 'c', text: 'c' }]);
    embedder.embedded.length = 0;
    await vectors.similarities('q', [{ id: 'a', text: 'a' }, { id: 'b', text: 'b' }]);
    expect(embedder.embedded).toEqual(['q', 'b']);
  });

  it('drops a word index holding a deleted memory, so no index keeps its words', () => {
    const indexes = new WordIndexes<{ id: string; text: string }>();
    const items = [
      { id: 'secret', text: 'a lighthouse secret' },
      { id: 'boat', text: 'a boat called Gull' },
    ];
    expect(indexes.scores('character:ana', items, 'lighthouse').has('secret')).toBe(true);
    indexes.forget(['secret']);
    // Were the old index still held, asking with the same ids would answer from it.
    expect(indexes.scores('character:ana', [{ id: 'secret', text: 'something else' }, items[1]!], 'lighthouse').has('secret')).toBe(false);
  });
});
