import { LRUCache } from 'lru-cache';
import type { CharacterRecord } from '../records.js';
import type { RepositoryStore } from '../repositories.js';
import { lorebookTextSize } from '../lorebooks.js';
import type { Lorebook } from './lorebook.js';

/**
 * Characters' lorebooks as every prompt reads them, parsed once per revision: the character's
 * row (read fresh for each reply) carries the revision every write to its book moves in the
 * same transaction, in any process, so a book kept at that revision is still the book. Reading
 * and parsing a large book costs more than activating it.
 */
export class LorebookCache {
  // Bounded by what the books hold, not only their number: a book may hold up to 2 MB of text.
  readonly #kept = new LRUCache<string, { revision: number; book: Lorebook }>({
    max: 500,
    maxSize: 64 * 1024 * 1024,
    sizeCalculation: (kept) => Math.max(1, lorebookTextSize(kept.book.entries)),
  });

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
