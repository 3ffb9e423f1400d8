import { LRUCache } from 'lru-cache';

interface Entry {
  sources: readonly unknown[];
  body: string;
}

/**
 * Response bodies reused while every record they were built from is still the same object.
 * The store hands out frozen records and replaces the object on every write, so identity
 * means "unchanged"; a store that copies on read just never hits. Conversation reads are the
 * hot path (clients poll them), and a hit skips reading and serialising every message.
 */
export class ResponseCache {
  readonly #entries: LRUCache<string, Entry>;

  constructor(maxCharacters = 32 * 1024 * 1024) {
    this.#entries = new LRUCache<string, Entry>({
      maxSize: maxCharacters,
      sizeCalculation: (entry) => Math.max(1, entry.body.length),
    });
  }

  get(key: string, sources: readonly unknown[]): string | undefined {
    const entry = this.#entries.get(key);
    if (!entry || entry.sources.length !== sources.length) return undefined;
    return entry.sources.every((source, index) => source === sources[index]) ? entry.body : undefined;
  }

  set(key: string, sources: readonly unknown[], body: string): void {
    this.#entries.set(key, { sources, body });
  }
}
