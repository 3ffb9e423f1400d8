import { LRUCache } from 'lru-cache';

export interface ChangeTokenMemoOptions<V> {
  /** At most this many entries. */
  max: number;
  /** With `sizeOf`: at most this many units (bytes, say) in all. */
  maxSize?: number;
  sizeOf?: (value: V) => number;
}

/**
 * Results read from the database, each kept with the store's change token it was read under
 * (`RepositoryStore.changeToken`) and handed out again only while the token stays the same:
 * then nothing in the database changed, in any process, so the result is still what a fresh
 * read would give. Every call still asks the store for a token read after it asked (the SQL
 * stores share one reading among the asks of a turn of the event loop); where the store has
 * none every call reads afresh. Failed reads are not kept.
 */
export class ChangeTokenMemo<V> {
  readonly #kept: LRUCache<string, { token: string; value: V }>;

  constructor(
    private readonly changeToken: () => Promise<string | undefined>,
    options: ChangeTokenMemoOptions<V>,
  ) {
    const { sizeOf, maxSize } = options;
    this.#kept = new LRUCache<string, { token: string; value: V }>({
      max: options.max,
      ...(sizeOf && maxSize ? { maxSize, sizeCalculation: (entry: { value: V }) => Math.max(1, sizeOf(entry.value)) } : {}),
    });
  }

  async get(key: string, read: () => Promise<V>): Promise<V> {
    // Taken before reading, so what is kept is at least as new as its token.
    const token = await this.changeToken();
    if (token === undefined) return read();
    const kept = this.#kept.get(key);
    if (kept !== undefined && kept.token === token) return kept.value;
    const value = await read();
    this.#kept.set(key, { token, value });
    return value;
  }
}
