/**
 * What a character recalls of what it learned, for a reply's prompt: its own approved
 * memories (used everywhere, as the owner-written ones are), and what it knows about the
 * person it answers, within the rules of `memory-scope.ts`, the most relevant first.
 */
import MiniSearch from 'minisearch';
import { placeOf, promptSubject, usableOrigins } from '../memory-scope.js';
import type { Clock } from '../ports.js';
import type { CharacterRecord, LearnedMemoryRecord } from '../records.js';
import type { RepositoryStore } from '../repositories.js';

/** What the prompt holds of one person. */
export interface RecalledPerson {
  accountId: string;
  facts: LearnedMemoryRecord[];
}

/** Weights of the ranking: what the words say, how much it matters, how recent it is. */
const weights = { words: 0.6, importance: 0.25, recency: 0.15 } as const;
/** A memory's recency counts half after this long. */
const recencyHalfLifeDays = 30;

export class LearnedRecall {
  constructor(
    private readonly store: RepositoryStore,
    private readonly clock: Clock,
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
    const link = await this.store.discordLinks.forConversation(conversation.id);
    const place = placeOf({ conversationId: conversation.id, speakerAccountIds: conversation.speakerAccountIds, discord: link ? { guildId: link.guildId } : undefined });
    const facts = await this.store.learnedMemories.usableAbout(character.id, subject, usableOrigins(place));
    if (facts.length === 0) return undefined;
    return { accountId: subject, facts: this.#rank(facts, query).slice(0, limit) };
  }

  /** Word matching (BM25) fused with importance and recency; with no word in common, the latter decide. */
  #rank(facts: LearnedMemoryRecord[], query: string): LearnedMemoryRecord[] {
    const index = new MiniSearch<LearnedMemoryRecord>({ fields: ['text'], storeFields: [], searchOptions: { fuzzy: 0.2, prefix: true } });
    index.addAll(facts);
    const hits = query.trim() === '' ? [] : index.search(query, { combineWith: 'OR' });
    const best = Math.max(1e-9, ...hits.map((hit) => hit.score));
    const words = new Map(hits.map((hit) => [hit.id as string, hit.score / best]));
    const now = this.clock.nowMicros();
    const score = (fact: LearnedMemoryRecord) => {
      const ageDays = Math.max(0, now - fact.statedMicros) / 86_400_000_000;
      return weights.words * (words.get(fact.id) ?? 0) + weights.importance * (fact.importance / 5) + weights.recency * 0.5 ** (ageDays / recencyHalfLifeDays);
    };
    return [...facts].sort((left, right) => score(right) - score(left));
  }
}
