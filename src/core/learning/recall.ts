/**
 * What a character recalls of what it learned about the person it answers, for a reply's
 * prompt: within the rules of `memory-scope.ts`, the most relevant first. (Its own approved
 * memories are ranked with the written ones, in `Memories`.)
 */
import { promptSubject, usableOrigins } from '../memory-scope.js';
import type { Clock, Embedder, Logger } from '../ports.js';
import type { CharacterRecord } from '../records.js';
import type { RecallableMemory, RepositoryStore } from '../repositories.js';
import { TextVectors, WordIndexes } from '../text-ranking.js';
import { conversationPlace } from './places.js';

/** What the prompt holds of one person. */
export interface RecalledPerson {
  accountId: string;
  facts: RecallableMemory[];
}

/** Weights of the ranking: what the words say (and mean, with embeddings), how much it matters, how recent it is. */
const weights = { words: 0.6, importance: 0.25, recency: 0.15 } as const;
/** With embeddings, the words' share is split between word matching and meaning. */
const meaningShare = 0.5;
/** A memory's recency counts half after this long. */
const recencyHalfLifeDays = 30;

export class LearnedRecall {
  /** Per character and person, over all their memories: the same index serves every place. */
  readonly #words = new WordIndexes<RecallableMemory>();
  readonly #vectors: TextVectors | undefined;

  constructor(
    private readonly store: RepositoryStore,
    private readonly clock: Clock,
    embedder?: Embedder,
    private readonly logger?: Logger,
  ) {
    this.#vectors = embedder && new TextVectors(embedder);
  }

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
    // Read together: where this is, and everything known of the person, kept below by where it was said.
    const [place, all] = await Promise.all([
      conversationPlace(this.store, conversation.id, conversation.speakerAccountIds),
      this.store.learnedMemories.recallable(character.id, subject),
    ]);
    const origins = usableOrigins(place);
    const facts = origins === undefined ? all : all.filter((fact) => origins.includes(fact.origin));
    if (facts.length === 0) return undefined;
    const words = this.#words.scores(`${character.id}:${subject}`, all, query);
    const meaning = facts.length > limit ? await this.#meaning(facts, query) : undefined;
    return { accountId: subject, facts: this.#rank(facts, words, meaning).slice(0, limit) };
  }

  /** Forgets what it derived from these memories (deleted): their words and vectors. */
  forget(memoryIds: readonly string[]): void {
    this.#words.forget(memoryIds);
    this.#vectors?.forget(memoryIds);
  }

  /** Similarity to the query by embeddings when configured; undefined when not (or failing). */
  async #meaning(facts: readonly RecallableMemory[], query: string): Promise<Map<string, number> | undefined> {
    if (!this.#vectors || query.trim() === '') return undefined;
    try {
      return await this.#vectors.similarities(query, facts);
    } catch (error) {
      this.logger?.warn({ err: error }, 'embeddings failed; learned memories are ranked by their words');
      return undefined;
    }
  }

  /** Word matching (BM25), fused with meaning when embeddings are there, then importance and recency. */
  #rank(facts: readonly RecallableMemory[], words: ReadonlyMap<string, number>, meaning?: ReadonlyMap<string, number>): RecallableMemory[] {
    const now = this.clock.nowMicros();
    const score = (fact: RecallableMemory) => {
      const ageDays = Math.max(0, now - fact.statedMicros) / 86_400_000_000;
      const lexical = words.get(fact.id) ?? 0;
      const relevance = meaning === undefined ? lexical : (1 - meaningShare) * lexical + meaningShare * Math.max(0, meaning.get(fact.id) ?? 0);
      return weights.words * relevance + weights.importance * (fact.importance / 5) + weights.recency * 0.5 ** (ageDays / recencyHalfLifeDays);
    };
    return [...facts].sort((left, right) => score(right) - score(left));
  }
}
