import type { Actor } from './actor.js';
import type { Characters } from './characters.js';
import { ValidationError, notFound } from './errors.js';
import type { Clock, Embedder, IdGenerator, Logger } from './ports.js';
import type { CharacterRecord, MemoryRecord } from './records.js';
import type { RepositoryStore } from './repositories.js';
import { TextVectors, WordIndexes } from './text-ranking.js';

export const memoryLimits = { text: 1000, count: 1000 } as const;


/**
 * A character's memories: short facts its owner writes. Before each reply the ones most
 * relevant to the latest messages go into the system prompt, ranked by embeddings when an
 * embedder is configured and by BM25 over the words otherwise.
 */
export class Memories {
  /** Word indexes per character, reused while its memories (by id) are the same. */
  readonly #words = new WordIndexes<MemoryRecord>();
  readonly #vectors: TextVectors | undefined;

  constructor(
    private readonly store: RepositoryStore,
    private readonly characters: Characters,
    private readonly clock: Clock,
    private readonly ids: IdGenerator,
    private readonly logger: Logger,
    embedder: Embedder | undefined,
  ) {
    this.#vectors = embedder && new TextVectors(embedder);
  }

  async list(actor: Actor, characterId: string): Promise<MemoryRecord[]> {
    await this.characters.getOwned(actor, characterId, 'read');
    return this.store.memories.list(characterId);
  }

  async add(actor: Actor, characterId: string, text: string): Promise<MemoryRecord> {
    const trimmed = text.trim();
    if (trimmed.length === 0 || trimmed.length > memoryLimits.text) {
      throw ValidationError.field('text', `must be 1 to ${memoryLimits.text} characters`);
    }
    await this.characters.getOwned(actor, characterId);
    const memory: MemoryRecord = { id: this.ids.uuid(), text: trimmed, createdMicros: this.clock.nowMicros() };
    // The repository refuses the memory past the limit (CONFLICT), counting in its own transaction.
    return this.store.memories.add(characterId, memory, memoryLimits.count);
  }

  async remove(actor: Actor, characterId: string, memoryId: string): Promise<void> {
    await this.characters.getOwned(actor, characterId);
    if (!(await this.store.memories.remove(characterId, memoryId))) throw notFound('Memory', memoryId);
    // Nothing derived from a deleted memory stays in the process.
    this.#words.forget([memoryId]);
    this.#vectors?.forget([memoryId]);
  }

  /** The memories most relevant to `query`, best first; all of them when there are few. */
  async relevant(character: CharacterRecord, query: string, limit: number): Promise<MemoryRecord[]> {
    // What its owner wrote, and what the character learned of its owner and the owner approved.
    const [written, learned] = await Promise.all([this.store.memories.list(character.id), this.store.learnedMemories.own(character.id, ['active'])]);
    const memories = [...written, ...learned.map((memory) => ({ id: memory.id, text: memory.text, createdMicros: memory.createdMicros }))];
    if (memories.length <= limit) return memories;
    if (this.#vectors) {
      try {
        return await this.#rankByEmbeddings(this.#vectors, memories, query, limit);
      } catch (error) {
        this.logger.warn({ err: error, characterId: character.id }, 'embeddings failed; ranking memories by words');
      }
    }
    return this.#rankByWords(character.id, memories, query, limit);
  }

  #rankByWords(characterId: string, memories: MemoryRecord[], query: string, limit: number): MemoryRecord[] {
    const scores = this.#words.scores(characterId, memories, query);
    const ranked = memories.filter((memory) => scores.has(memory.id)).sort((left, right) => scores.get(right.id)! - scores.get(left.id)!);
    // With nothing in common, the newest memories are the best guess.
    const rest = memories.filter((memory) => !scores.has(memory.id)).reverse();
    return [...ranked, ...rest].slice(0, limit);
  }

  async #rankByEmbeddings(vectors: TextVectors, memories: MemoryRecord[], query: string, limit: number): Promise<MemoryRecord[]> {
    const similarity = await vectors.similarities(query, memories);
    return [...memories].sort((left, right) => similarity.get(right.id)! - similarity.get(left.id)!).slice(0, limit);
  }
}
