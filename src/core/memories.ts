import MiniSearch from 'minisearch';
import type { Actor } from './actor.js';
import type { Characters } from './characters.js';
import { ValidationError, notFound } from './errors.js';
import type { Clock, Embedder, IdGenerator, Logger } from './ports.js';
import type { CharacterRecord, MemoryRecord } from './records.js';
import type { RepositoryStore } from './repositories.js';

export const memoryLimits = { text: 1000, count: 1000 } as const;

/** A memory's text never changes, so its vector is cached for the process's life (bounded). */
const maxCachedEmbeddings = 20_000;

/**
 * A character's memories: short facts its owner writes. Before each reply the ones most
 * relevant to the latest messages go into the system prompt, ranked by embeddings when an
 * embedder is configured and by BM25 over the words otherwise.
 */
export class Memories {
  /** Word indexes per character, reused while its memories (by id) are the same. */
  readonly #lexicalIndexes = new Map<string, { signature: string; index: MiniSearch<MemoryRecord> }>();
  readonly #embeddings = new Map<string, number[]>();

  constructor(
    private readonly store: RepositoryStore,
    private readonly characters: Characters,
    private readonly clock: Clock,
    private readonly ids: IdGenerator,
    private readonly logger: Logger,
    private readonly embedder: Embedder | undefined,
  ) {}

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
  }

  /** The memories most relevant to `query`, best first; all of them when there are few. */
  async relevant(character: CharacterRecord, query: string, limit: number): Promise<MemoryRecord[]> {
    // What its owner wrote, and what the character learned of its owner and the owner approved.
    const [written, learned] = await Promise.all([this.store.memories.list(character.id), this.store.learnedMemories.own(character.id, ['active'])]);
    const memories = [...written, ...learned.map((memory) => ({ id: memory.id, text: memory.text, createdMicros: memory.createdMicros }))];
    if (memories.length <= limit) return memories;
    if (this.embedder) {
      try {
        return await this.#rankByEmbeddings(this.embedder, memories, query, limit);
      } catch (error) {
        this.logger.warn({ err: error, characterId: character.id }, 'embeddings failed; ranking memories by words');
      }
    }
    return this.#rankByWords(character.id, memories, query, limit);
  }

  #rankByWords(characterId: string, memories: MemoryRecord[], query: string, limit: number): MemoryRecord[] {
    const signature = memories.map((memory) => memory.id).join(',');
    let cached = this.#lexicalIndexes.get(characterId);
    if (!cached || cached.signature !== signature) {
      const index = new MiniSearch<MemoryRecord>({ fields: ['text'], storeFields: [] });
      index.addAll(memories);
      cached = { signature, index };
      this.#lexicalIndexes.set(characterId, cached);
    }
    const byId = new Map(memories.map((memory) => [memory.id, memory]));
    const ranked = cached.index
      .search(query, { fuzzy: 0.2, prefix: true, combineWith: 'OR' })
      .map((result) => byId.get(result.id as string))
      .filter((memory): memory is MemoryRecord => memory !== undefined);
    // With nothing in common, the newest memories are the best guess.
    const rest = memories.filter((memory) => !ranked.includes(memory)).reverse();
    return [...ranked, ...rest].slice(0, limit);
  }

  async #rankByEmbeddings(embedder: Embedder, memories: MemoryRecord[], query: string, limit: number): Promise<MemoryRecord[]> {
    const cacheKey = (memory: MemoryRecord) => `${embedder.modelId}:${memory.id}`;
    const stored = memories.map((memory) => this.#embeddings.get(cacheKey(memory)));
    const missing = memories.filter((_, position) => stored[position] === undefined);
    const [queryVector, ...fresh] = await embedder.embed([query, ...missing.map((memory) => memory.text)]);
    if (!queryVector || fresh.length !== missing.length) throw new Error('embedder returned too few vectors');
    const freshById = new Map(missing.map((memory, position) => [memory.id, fresh[position]!]));
    if (this.#embeddings.size + missing.length > maxCachedEmbeddings) this.#embeddings.clear();
    for (const memory of missing) this.#embeddings.set(cacheKey(memory), freshById.get(memory.id)!);
    const scored = memories.map((memory, position) => ({
      memory,
      score: cosine(queryVector, stored[position] ?? freshById.get(memory.id)!),
    }));
    return scored.sort((left, right) => right.score - left.score).slice(0, limit).map((entry) => entry.memory);
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
