import { LRUCache } from 'lru-cache';
import type { CharacterRecord } from '../records.js';
import type { RepositoryStore } from '../repositories.js';
import type { Lorebook } from './lorebook.js';

/**
 * Characters' lorebooks as every prompt reads them, parsed once per revision: the character's
 * row (read fresh for each reply) carries the revision every write to its book moves in the
 * same transaction, in any process, so a book kept at that revision is still the book. Reading
 * and parsing a large book costs more than activating it.
 */
export class LorebookCache {
  readonly #kept = new LRUCache<string, { revision: number; book: Lorebook }>({ max: 500 });

  constructor(private readonly store: RepositoryStore) {}

  async of(character: Pick<CharacterRecord, 'id' | 'lorebookRevision'>): Promise<Lorebook> {
    const kept = this.#kept.get(character.id);
    if (kept && kept.revision === character.lorebookRevision) return kept.book;
    const book = await this.store.lorebooks.get(character.id);
    // Kept under the revision the caller read: a write since then moved it, and the next reader
    // with the newer row reads again.
    this.#kept.set(character.id, { revision: character.lorebookRevision, book });
    return book;
  }
}
