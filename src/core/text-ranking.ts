/**
 * The two ways memories are matched to what is being talked about, shared by the memories
 * owners write and those characters learn: word indexes (BM25, MiniSearch) kept while their
 * texts are the same, and embedding vectors kept while used (a memory's text never changes
 * under its id). Both are bounded (least recently used go first), and both forget a deleted
 * memory at once (`forget`): what was deleted is not kept in the process either.
 */
import { LRUCache } from 'lru-cache';
import MiniSearch from 'minisearch';
import type { Embedder } from './ports.js';

/** What can be ranked: an id and its text. */
export interface RankedText {
  id: string;
  text: string;
}

/** Word indexes by key (a character, a character and a person), rebuilt only when the set of ids changes. */
export class WordIndexes<Item extends RankedText> {
  readonly #indexes: LRUCache<string, { ids: ReadonlySet<string>; signature: string; index: MiniSearch<Item> }>;

  constructor(maxIndexes = 1_000) {
    this.#indexes = new LRUCache({ max: maxIndexes });
  }

  /** Drops every index holding one of these memories (deleted): the next query rebuilds it from what is left. */
  forget(ids: readonly string[]): void {
    const stale = [...this.#indexes.entries()].filter(([, cached]) => ids.some((id) => cached.ids.has(id)));
    for (const [key] of stale) this.#indexes.delete(key);
  }

  /** Scores of the items matching `query`, by id, the best 1. */
  scores(key: string, items: readonly Item[], query: string): Map<string, number> {
    if (query.trim() === '') return new Map();
    const hits = this.#index(key, items).search(query, { fuzzy: 0.2, prefix: true, combineWith: 'OR' });
    const best = Math.max(1e-9, ...hits.map((hit) => hit.score));
    return new Map(hits.map((hit) => [hit.id as string, hit.score / best]));
  }

  #index(key: string, items: readonly Item[]): MiniSearch<Item> {
    const signature = items.map((item) => item.id).join(',');
    const cached = this.#indexes.get(key);
    if (cached?.signature === signature) return cached.index;
    const index = new MiniSearch<Item>({ fields: ['text'], storeFields: [] });
    index.addAll(items);
    this.#indexes.set(key, { ids: new Set(items.map((item) => item.id)), signature, index });
    return index;
  }
}

/** Embedding vectors of texts by id, computed once each; the least recently used go when full. */
export class TextVectors {
  readonly #vectors: LRUCache<string, number[]>;

  constructor(
    private readonly embedder: Embedder,
    maxVectors = 20_000,
  ) {
    this.#vectors = new LRUCache({ max: maxVectors });
  }

  /** Drops the vectors of these memories (deleted). */
  forget(ids: readonly string[]): void {
    for (const id of ids) this.#vectors.delete(`${this.embedder.modelId}:${id}`);
  }

  /** Cosine similarity of each item to `query`, by id; throws what the embedder throws. */
  async similarities(query: string, items: readonly RankedText[]): Promise<Map<string, number>> {
    const key = (item: RankedText) => `${this.embedder.modelId}:${item.id}`;
    const known = new Map(items.flatMap((item): [string, number[]][] => { const vector = this.#vectors.get(key(item)); return vector ? [[item.id, vector]] : []; }));
    const missing = items.filter((item) => !known.has(item.id));
    const [queryVector, ...fresh] = await this.embedder.embed([query, ...missing.map((item) => item.text)]);
    if (!queryVector || fresh.length !== missing.length) throw new Error('embedder returned too few vectors');
    missing.forEach((item, position) => {
      known.set(item.id, fresh[position]!);
      this.#vectors.set(key(item), fresh[position]!);
    });
    return new Map(items.map((item) => [item.id, cosine(queryVector, known.get(item.id) ?? [])]));
  }
}

function cosine(left: readonly number[], right: readonly number[]): number {
  let dot = 0;
  let leftNorm = 0;
  let rightNorm = 0;
  for (let position = 0; position < Math.min(left.length, right.length); position++) {
    dot += left[position]! * right[position]!;
    leftNorm += left[position]! ** 2;
    rightNorm += right[position]! ** 2;
  }
  return leftNorm === 0 || rightNorm === 0 ? 0 : dot / Math.sqrt(leftNorm * rightNorm);
}
