import { notFound } from './errors.js';
import type { FileStore } from './ports.js';

export interface FileContent {
  bytes: Buffer;
  mimeType: string;
}

/**
 * Stored files as front ends hand them out: behind a signed URL (the HTTP API checks the
 * signature), or attached to a Discord message (avatars, generated images, speech).
 */
export class Files {
  constructor(private readonly store: FileStore) {}

  /** The file stored under `key` and its type; NOT_FOUND when there is none. */
  async read(key: string): Promise<FileContent> {
    const mimeType = this.store.typeOf(key);
    const bytes = mimeType === undefined ? undefined : await this.store.read(key);
    if (!bytes || mimeType === undefined) throw notFound('File', key);
    return { bytes, mimeType };
  }
}
