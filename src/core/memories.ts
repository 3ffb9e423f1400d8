import MiniSearch from 'minisearch';
import type { Actor } from './actor.js';
import type { Characters } from './characters.js';
import { AppError, ValidationError, notFound } from './errors.js';
import { keys } from './keys.js';
import type { Clock, Embedder, IdGenerator, Logger, Store } from './ports.js';
import type { CharacterRecord, MemoryRecord } from './records.js';

export const memoryLimits = { text: 1000, count: 1000 } as const;

interface MemoryList {
  version: number;
  items: MemoryRecord[];
}

/**
 * A character's memories: short facts its owner writes. Before each reply the ones most
 * relevant to the latest messages go into the system prompt, ranked by embeddings when an
 * embedder is configured and by BM25 over the words otherwise.
 */
export class Memories {
  readonly #lexicalIndexes = new Map<string, { version: number; index: MiniSearch<MemoryRecord> }>();

  constructor(
    private readonly store: Store,
    private readonly characters: Characters,
    private readonly clock: Clock,
    private readonly ids: IdGenerator,
    private readonly logger: Logger,
    private readonly embedder: Embedder | undefined,
  ) {}

  async list(actor: Actor, characterId: string): Promise<MemoryRecord[]> {
    await this.characters.getOwned(actor, characterId, 'read');
    return (await this.#read(characterId)).items;
  }

  async add(actor: Actor, characterId: string, text: string): Promise<MemoryRecord> {
    const trimmed = text.trim();
    if (trimmed.length === 0 || trimmed.length > memoryLimits.text) {
      throw ValidationError.field('text', `must be 1 to ${memoryLimits.text} characters`);
    }
    await this.characters.getOwned(actor, characterId);
    return this.store.withLock(keys.memories(characterId), async () => {
      const list = await this.#read(characterId);
      if (list.items.length >= memoryLimits.count) {
        throw new AppError('CONFLICT', `A character holds at most ${memoryLimits.count} memories; forget some first.`);
      }
      const memory: MemoryRecord = { id: this.ids.uuid(), text: trimmed, createdMicros: this.clock.nowMicros() };
      await this.store.set<MemoryList>(keys.memories(characterId), { version: list.version + 1, items: [...list.items, memory] });
      return memory;
    });
  }

  async remove(actor: Actor, characterId: string, memoryId: string): Promise<void> {
    await this.characters.getOwned(actor, characterId);
    await this.store.withLock(keys.memories(characterId), async () => {
      const list = await this.#read(characterId);
      const items = list.items.filter((memory) => memory.id !== memoryId);
      if (items.length === list.items.length) throw notFound('Memory', memoryId);
      await this.store.set<MemoryList>(keys.memories(characterId), { version: list.version + 1, items });
    });
  }

  /** The memories most relevant to `query`, best first; all of them when there are few. */
  async relevant(character: CharacterRecord, query: string, limit: number): Promise<MemoryRecord[]> {
    const list = await this.#read(character.id);
    if (list.items.length <= limit) return list.items;
    if (this.embedder) {
      try {
        return await this.#rankByEmbeddings(this.embedder, list.items, query, limit);
      } catch (error) {
        this.logger.warn({ err: error, characterId: character.id }, 'embeddings failed; ranking memories by words');
      }
    }
    return this.#rankByWords(character.id, list, query, limit);
  }

  #rankByWords(characterId: string, list: MemoryList, query: string, limit: number): MemoryRecord[] {
    let cached = this.#lexicalIndexes.get(characterId);
    if (!cached || cached.version !== list.version) {
      const index = new MiniSearch<MemoryRecord>({ fields: ['text'], storeFields: [] });
      index.addAll(list.items);
      cached = { version: list.version, index };
      this.#lexicalIndexes.set(characterId, cached);
    }
    const byId = new Map(list.items.map((memory) => [memory.id, memory]));
    const ranked = cached.index
      .search(query, { fuzzy: 0.2, prefix: true, combineWith: 'OR' })
      .map((result) => byId.get(result.id as string))
      .filter((memory): memory is MemoryRecord => memory !== undefined);
    // With nothing in common, the newest memories are the best guess.
    const rest = list.items.filter((memory) => !ranked.includes(memory)).reverse();
    return [...ranked, ...rest].slice(0, limit);
  }

  async #rankByEmbeddings(embedder: Embedder, memories: MemoryRecord[], query: string, limit: number): Promise<MemoryRecord[]> {
    const embeddingKeys = memories.map((memory) => keys.memoryEmbedding(memory.id, embedder.modelId));
    const stored = await this.store.getMany<number[]>(embeddingKeys);
    const missing = memories.filter((_, position) => stored[position] === undefined);
    const [queryVector, ...fresh] = await embedder.embed([query, ...missing.map((memory) => memory.text)]);
    if (!queryVector || fresh.length !== missing.length) throw new Error('embedder returned too few vectors');
    const freshById = new Map(missing.map((memory, position) => [memory.id, fresh[position]!]));
    await Promise.all(missing.map((memory) => this.store.set(keys.memoryEmbedding(memory.id, embedder.modelId), freshById.get(memory.id))));
    const scored = memories.map((memory, position) => ({
      memory,
      score: cosine(queryVector, stored[position] ?? freshById.get(memory.id)!),
    }));
    return scored.sort((left, right) => right.score - left.score).slice(0, limit).map((entry) => entry.memory);
  }

  async #read(characterId: string): Promise<MemoryList> {
    return (await this.store.get<MemoryList>(keys.memories(characterId))) ?? { version: 0, items: [] };
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
