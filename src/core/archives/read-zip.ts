/**
 * Reading an uploaded zip without trusting it: entries are inflated as a stream, a small piece
 * of the archive at a time, with running caps on bytes, entries and compression ratio, so a zip
 * bomb is refused after a few megabytes of output instead of after gigabytes.
 */
import { Unzip, UnzipInflate, UnzipPassThrough } from 'fflate';
import { AppError, ValidationError } from '../errors.js';

export interface ZipLimits {
  /** Most entries the archive may list (folders and skipped files count too). */
  maxEntries: number;
  /** Most bytes one entry may inflate to. */
  maxEntryBytes: number;
  /** Most bytes all entries together may inflate to. */
  maxTotalBytes: number;
  /**
   * Most bytes of output per byte of archive read so far (photos barely compress; a bomb of
   * zeros reaches about 1000). The first `ratioAllowanceBytes` of output are not held to it.
   */
  maxRatio: number;
  ratioAllowanceBytes: number;
}

/** Which entries to inflate; every listed name passes through `accept` first, so it may also refuse one. */
export interface ZipReadOptions {
  /** Whether to inflate this entry (default: all). Entries not accepted are skipped unread; throwing refuses the archive. */
  accept?: (name: string) => boolean;
}

export interface ZipEntry {
  name: string;
  data: Uint8Array;
}

/**
 * Bytes of the archive handed to the inflater per turn of the event loop. Deflate expands at
 * most about 1032:1, so one turn produces at most ~4 MB (a few milliseconds of work) before the
 * caps are checked and other requests get their turn. A worker thread would also free the
 * loop, but would copy the archive and its output across threads; this keeps memory at the
 * caps and needs no second copy.
 */
const pieceBytes = 4 * 1024;

/** Names that are not content: folders, macOS resource forks, hidden files. */
export function isSkippedEntry(name: string): boolean {
  return name.endsWith('/') || name.startsWith('__MACOSX/') || /(^|\/)\./.test(name);
}

/**
 * The entries of a zip (those `isSkippedEntry` keeps and `options.accept` wants), inflated within `limits`. Throws
 * PAYLOAD_TOO_LARGE the moment a cap is passed, and a field error when the zip is unreadable.
 */
export async function readZip(field: string, archive: Uint8Array, limits: ZipLimits, options: ZipReadOptions = {}): Promise<ZipEntry[]> {
  const entries: ZipEntry[] = [];
  let listed = 0;
  let totalBytes = 0;
  let readBytes = 0;
  let unfinished = 0;
  const refuse = (message: string, details: Record<string, unknown>) =>
    new AppError('PAYLOAD_TOO_LARGE', message, { details: { field, ...details } });

  const unzip = new Unzip((file) => {
    listed += 1;
    if (listed > limits.maxEntries) throw refuse(`${field} lists more than ${limits.maxEntries} entries.`, { maxEntries: limits.maxEntries });
    if (options.accept !== undefined && !options.accept(file.name)) return;
    if (isSkippedEntry(file.name)) return;
    if (file.originalSize !== undefined && file.originalSize > limits.maxEntryBytes) {
      throw refuse(`${field}: ${file.name} is larger than ${megabytes(limits.maxEntryBytes)} MB.`, { entry: file.name, maxEntryBytes: limits.maxEntryBytes });
    }
    const pieces: Uint8Array[] = [];
    let entryBytes = 0;
    file.ondata = (error, data, final) => {
      if (error) throw error;
      entryBytes += data.byteLength;
      totalBytes += data.byteLength;
      if (entryBytes > limits.maxEntryBytes) {
        throw refuse(`${field}: ${file.name} is larger than ${megabytes(limits.maxEntryBytes)} MB.`, { entry: file.name, maxEntryBytes: limits.maxEntryBytes });
      }
      if (totalBytes > limits.maxTotalBytes) {
        throw refuse(`${field} unpacks to more than ${megabytes(limits.maxTotalBytes)} MB.`, { maxTotalBytes: limits.maxTotalBytes, inflatedBytes: totalBytes });
      }
      if (totalBytes > limits.ratioAllowanceBytes && totalBytes > readBytes * limits.maxRatio) {
        throw refuse(`${field} is compressed more than ${limits.maxRatio}:1, far beyond what real photos or documents compress to; it looks like a zip bomb.`, {
          maxRatio: limits.maxRatio,
          inflatedBytes: totalBytes,
          readBytes,
        });
      }
      pieces.push(data);
      if (final) {
        unfinished -= 1;
        entries.push({ name: file.name, data: pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces, entryBytes) });
      }
    };
    unfinished += 1;
    file.start();
  });
  unzip.register(UnzipInflate);
  unzip.register(UnzipPassThrough);

  try {
    for (let offset = 0; offset < archive.byteLength; offset += pieceBytes) {
      const end = Math.min(offset + pieceBytes, archive.byteLength);
      readBytes = end;
      unzip.push(archive.subarray(offset, end), end === archive.byteLength);
      if (end < archive.byteLength) await new Promise<void>((resolve) => setImmediate(resolve));
    }
  } catch (error) {
    if (error instanceof AppError) throw error;
    throw ValidationError.field(field, `is not a readable zip (${error instanceof Error ? error.message : String(error)})`);
  }
  if (unfinished > 0) throw ValidationError.field(field, 'is not a readable zip (it is cut short)');
  return entries;
}

function megabytes(bytes: number): number {
  return Math.floor(bytes / 1024 / 1024);
}
