/**
 * What a character recalls of what it learned, for a reply's prompt: its own approved
 * memories (used everywhere, as the owner-written ones are), and what it knows about the
 * person it answers, within the rules of `memory-scope.ts`, the most relevant first.
 */
import MiniSearch from 'minisearch';
import { promptSubject, usableOrigins } from '../memory-scope.js';
import { conversationPlace } from './places.js';
import type { Clock, Embedder, Logger } from '../ports.js';
import type { CharacterRecord } from '../records.js';
import type { RecallableMemory, RepositoryStore } from '../repositories.js';

/** What the prompt holds of one person. */
export interface RecalledPerson {
  accountId: string;
  facts: RecallableMemory[];
}

/** Weights of the ranking: what the words say, what they mean (embeddings), how much it matters, how recent it is. */
const weights = { words: 0.6, importance: 0.25, recency: 0.15 } as const;
/** With embeddings, the words' share is split between word matching and meaning. */
const meaningShare = 0.5;
/** A memory's text never changes: its vector is kept for the process's life (bounded). */
const maxCachedVectors = 20_000;
/** Word indexes kept (one per character and person recently answered). */
const maxCachedIndexes = 1_000;
/** A memory's recency counts half after this long. */
const recencyHalfLifeDays = 30;

export class LearnedRecall {
  readonly #vectors = new Map<string, number[]>();
  /** Word indexes per character and person, reused while their memories (by id) are the same. */
  readonly #indexes = new Map<string, { signature: string; index: MiniSearch<RecallableMemory> }>();

  constructor(
    private readonly store: RepositoryStore,
    private readonly clock: Clock,
    private readonly embedder?: Embedder,
    private readonly logger?: Logger,
  ) {}

  /**
   * What `character` may recall about the author of `answered` in this conversation: only that
   * person's (never another speaker's), only from where the rules allow, at most `limit`.
   */
  async about(
    character: CharacterRecord,
    conversation: { id: string; speakerAccountIds: readonly string[] },
    answered: { participantType: 'account' | 'character'; participantId: string },
    query: string,
    limit: number,
  ): Promise<RecalledPerson | undefined> {
    const subject = promptSubject(answered, conversation.speakerAccountIds);
    if (subject === undefined) return undefined;
    const place = await conversationPlace(this.store, conversation.id, conversation.speakerAccountIds);
    const facts = await this.store.learnedMemories.recallable(character.id, subject, usableOrigins(place));
    if (facts.length === 0) return undefined;
    const meaning = facts.length > limit ? await this.#meaning(facts, query) : undefined;
    return { accountId: subject, facts: this.#rank(this.#index(`${character.id}:${subject}`, facts), facts, query, meaning).slice(0, limit) };
  }

  /** The word index of these facts: built once, again only when the facts change (bounded cache). */
  #index(key: string, facts: readonly RecallableMemory[]): MiniSearch<RecallableMemory> {
    const signature = facts.map((fact) => fact.id).join(',');
    const cached = this.#indexes.get(key);
    if (cached?.signature === signature) return cached.index;
    const index = new MiniSearch<RecallableMemory>({ fields: ['text'], storeFields: [], searchOptions: { fuzzy: 0.2, prefix: true } });
    index.addAll(facts);
    if (this.#indexes.size >= maxCachedIndexes) this.#indexes.delete(this.#indexes.keys().next().value as string);
    this.#indexes.set(key, { signature, index });
    return index;
  }

  /** Cosine similarity of each fact to the query, by embeddings when configured; undefined when not (or failing). */
  async #meaning(facts: readonly RecallableMemory[], query: string): Promise<Map<string, number> | undefined> {
    if (!this.embedder || query.trim() === '') return undefined;
    try {
      const key = (fact: RecallableMemory) => `${this.embedder!.modelId}:${fact.id}`;
      const missing = facts.filter((fact) => !this.#vectors.has(key(fact)));
      const [queryVector, ...fresh] = await this.embedder.embed([query, ...missing.map((fact) => fact.text)]);
      if (!queryVector || fresh.length !== missing.length) return undefined;
      if (this.#vectors.size + missing.length > maxCachedVectors) this.#vectors.clear();
      missing.forEach((fact, index) => this.#vectors.set(key(fact), fresh[index]!));
      return new Map(facts.map((fact) => [fact.id, Math.max(0, cosine(queryVector, this.#vectors.get(key(fact)) ?? []))]));
    } catch (error) {
      this.logger?.warn({ err: error }, 'embeddings failed; learned memories are ranked by their words');
      return undefined;
    }
  }

  /** Word matching (BM25), fused with meaning when embeddings are there, then importance and recency. */
  #rank(index: MiniSearch<RecallableMemory>, facts: RecallableMemory[], query: string, meaning?: ReadonlyMap<string, number>): RecallableMemory[] {
    const hits = query.trim() === '' ? [] : index.search(query, { combineWith: 'OR' });
    const best = Math.max(1e-9, ...hits.map((hit) => hit.score));
    const words = new Map(hits.map((hit) => [hit.id as string, hit.score / best]));
    const now = this.clock.nowMicros();
    const score = (fact: RecallableMemory) => {
      const ageDays = Math.max(0, now - fact.statedMicros) / 86_400_000_000;
      const lexical = words.get(fact.id) ?? 0;
      const relevance = meaning === undefined ? lexical : (1 - meaningShare) * lexical + meaningShare * (meaning.get(fact.id) ?? 0);
      return weights.words * relevance + weights.importance * (fact.importance / 5) + weights.recency * 0.5 ** (ageDays / recencyHalfLifeDays);
    };
    return [...facts].sort((left, right) => score(right) - score(left));
  }
}

function cosine(left: readonly number[], right: readonly number[]): number {
  let dot = 0;
  let leftNorm = 0;
  let rightNorm = 0;
  for (let index = 0; index < Math.min(left.length, right.length); index += 1) {
    dot += left[index]! * right[index]!;
    leftNorm += left[index]! ** 2;
    rightNorm += right[index]! ** 2;
  }
  return leftNorm === 0 || rightNorm === 0 ? 0 : dot / Math.sqrt(leftNorm * rightNorm);
}
