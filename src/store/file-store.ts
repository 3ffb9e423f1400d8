import { createHash, randomBytes } from 'node:crypto';
import type { Dirent } from 'node:fs';
import { mkdir, open, opendir, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { AppError } from '../core/errors.js';
import type { FileStore, ScannedFile, StoredFile } from '../core/ports.js';

/** File extension for each MIME type the service keeps; the extension ends every key. */
export const fileExtensions: Readonly<Record<string, string>> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/webp': 'webp',
  'image/gif': 'gif',
  'audio/mpeg': 'mp3',
  'audio/wav': 'wav',
  'audio/x-wav': 'wav',
  'audio/wave': 'wav',
  'audio/ogg': 'ogg',
  'audio/opus': 'opus',
  'audio/flac': 'flac',
  'audio/mp4': 'm4a',
  'audio/webm': 'weba',
  'video/mp4': 'mp4',
  'video/webm': 'webm',
  'application/zip': 'zip',
  'application/x-tar': 'tar',
};

/** The MIME type a key's extension stands for, e.g. to serve the file. */
const mimeTypes: Readonly<Record<string, string>> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  webp: 'image/webp',
  gif: 'image/gif',
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  ogg: 'audio/ogg',
  opus: 'audio/opus',
  flac: 'audio/flac',
  m4a: 'audio/mp4',
  weba: 'audio/webm',
  mp4: 'video/mp4',
  webm: 'video/webm',
  zip: 'application/zip',
  tar: 'application/x-tar',
};

/** 64 hex digits of SHA-256, a dot and an extension: nothing that can name another path. */
const keyPattern = /^([0-9a-f]{2})([0-9a-f]{2})[0-9a-f]{60}\.([a-z0-9]{2,5})$/;

/** A temporary `put` writes before its rename: the key, a dot, 12 hex digits and `.tmp`. */
const partialPattern = /^[0-9a-f]{64}\.[a-z0-9]{2,5}\.[0-9a-f]{12}\.tmp$/;
/** A fan-out directory: two hex digits. */
const fanOutPattern = /^[0-9a-f]{2}$/;

/** The MIME type of a key made by `DiskFileStore`, or undefined for anything else. */
export function mimeTypeOfKey(key: string): string | undefined {
  const extension = keyPattern.exec(key)?.[3];
  return extension === undefined ? undefined : mimeTypes[extension];
}

/**
 * Content-addressed files on local disk: the key is `<sha256 hex>.<extension>`, so the same
 * bytes always give the same key and a key can be served and cached forever.
 *
 * Files live in two levels of fan-out directories (`ab/cd/abcd….png`) so no directory grows
 * past a few thousand entries; the key itself stays flat. Each file is written to a temporary
 * name, flushed, then renamed, so a reader or a crash never sees a partial file.
 */
export class DiskFileStore implements FileStore {
  typeOf(key: string): string | undefined {
    return mimeTypeOfKey(key);
  }

  readonly #directory: string;

  /** `directory` is created on first write, e.g. `DATA_DIR/files`. */
  constructor(directory: string) {
    this.#directory = path.resolve(directory);
  }

  keyOf(bytes: Uint8Array, mimeType: string): string {
    return `${createHash('sha256').update(bytes).digest('hex')}.${extensionOf(mimeType)}`;
  }

  async put(bytes: Uint8Array, mimeType: string): Promise<StoredFile> {
    const key = this.keyOf(bytes, mimeType);
    const file = this.#pathOf(key);
    const stored: StoredFile = { key, mimeType: mimeTypeOfKey(key) ?? mimeType, size: bytes.byteLength };
    if (await hasSize(file, bytes.byteLength)) return stored;
    await mkdir(path.dirname(file), { recursive: true });
    // Unique per call: two concurrent puts of the same bytes must not share a temporary file.
    const temporary = `${file}.${randomBytes(6).toString('hex')}.tmp`;
    try {
      const handle = await open(temporary, 'wx');
      try {
        await handle.writeFile(bytes);
        // Flushed before the rename, or a power loss could leave the final name on empty data.
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temporary, file);
    } catch (error) {
      await rm(temporary, { force: true });
      throw error;
    }
    return stored;
  }

  /** The file's bytes; undefined for a key this store never made or does not hold. */
  async read(key: string): Promise<Buffer | undefined> {
    if (mimeTypeOfKey(key) === undefined) return undefined;
    try {
      return await readFile(this.#pathOf(key));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  async remove(key: string): Promise<void> {
    if (mimeTypeOfKey(key) === undefined) return;
    await rm(this.#pathOf(key), { force: true });
  }

  /**
   * Walks the fan-out directories one entry at a time (never a whole listing in memory) and
   * answers only names this store writes: files put there by hand are left alone.
   */
  async *scan(modifiedBeforeMillis: number): AsyncIterable<ScannedFile> {
    for await (const first of directories(this.#directory)) {
      for await (const second of directories(path.join(this.#directory, first))) {
        const folder = path.join(this.#directory, first, second);
        for await (const entry of await opened(folder)) {
          if (!entry.isFile()) continue;
          const { name } = entry;
          const stored = keyPattern.test(name) && name.startsWith(first + second);
          if (!stored && !partialPattern.test(name)) continue;
          const file = path.join(folder, name);
          // Gone since it was listed (removed, or renamed from its temporary): nothing to say.
          const modified = await stat(file).then((stats) => stats.mtimeMs, () => undefined);
          if (modified === undefined || modified >= modifiedBeforeMillis) continue;
          yield stored ? { kind: 'stored', key: name } : { kind: 'partial', name, remove: () => rm(file, { force: true }) };
        }
      }
    }
  }

  #pathOf(key: string): string {
    return path.join(this.#directory, key.slice(0, 2), key.slice(2, 4), key);
  }
}

/** The extension of a MIME type the store keeps (parameters and case aside); UNSUPPORTED_MEDIA_TYPE for others. */
function extensionOf(mimeType: string): string {
  const extension = fileExtensions[mimeType.split(';')[0]?.trim().toLowerCase() ?? ''];
  if (extension === undefined) {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', `Files of type ${mimeType} cannot be stored.`, {
      details: { mimeType, supported: Object.keys(fileExtensions) },
    });
  }
  return extension;
}

async function hasSize(file: string, size: number): Promise<boolean> {
  try {
    return (await stat(file)).size === size;
  } catch {
    return false;
  }
}

/** The fan-out directories in `parent`; none when it is not there yet. */
async function* directories(parent: string): AsyncIterable<string> {
  for await (const entry of await opened(parent)) if (entry.isDirectory() && fanOutPattern.test(entry.name)) yield entry.name;
}

/** The entries of `directory`, read a few at a time; none when it is not there. */
async function opened(directory: string): Promise<AsyncIterable<Dirent>> {
  try {
    return await opendir(directory, { bufferSize: 256 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return (async function* () {})();
    throw error;
  }
}
