/**
 * Files let go of are removed by a sweep, a grace period later, never by the deletion itself.
 * Files are content-addressed: a card imported while a character with the same avatar is
 * deleted is told the file is there, then references it, milliseconds apart, and a deletion
 * that checked for holders and removed the file at once could do so in between. Here a
 * deletion records a release (`FileReleaseRepository`); storing the same bytes again renews
 * it; and a worker removes what was released longer ago than the grace period and nothing
 * holds, in the transaction that takes the release, so a renew waits for the file to be gone
 * and the store writes it anew.
 *
 * Spoken audio is let go of the same way, once the cache no longer keeps it (retention, then
 * size: `SpeechOptions`).
 *
 * And a process killed between storing a file and referencing it (or mid-write) leaves a file
 * nothing recorded: now and then the sweep scans the files for those last written over a grace
 * period ago, records a release of each nothing holds (so it goes a grace period later, as if
 * let go of then, unless stored again meanwhile), and removes partial writes.
 */
import type { Clock, FileStore, Logger, StoredFile } from './ports.js';

/** Keys looked up per query while scanning. */
const scanBatch = 500;
import type { RepositoryStore } from './repositories.js';
import { defaultSpeechOptions } from './speech.js';

export interface FileSweepOptions {
  /**
   * How long a file let go of (or stored again since) is kept: longer than anything takes
   * between storing a file and referencing it (an import, an image job's outputs).
   */
  graceMs: number;
  /** How often a worker process sweeps. */
  everyMs: number;
  /** Releases taken per transaction. */
  batch: number;
  /** How often a worker process scans the files for those nothing recorded (at its first sweep, then). */
  scanEveryMs: number;
  /** Spoken audio is kept while asked for within `retentionMs`, and while within `maxBytes` together. */
  speechCache: { retentionMs: number; maxBytes: number };
}

export const defaultFileSweepOptions: FileSweepOptions = {
  graceMs: 60 * 60_000,
  everyMs: 10 * 60_000,
  batch: 100,
  scanEveryMs: 60 * 60_000,
  speechCache: { retentionMs: defaultSpeechOptions.cacheRetentionMs, maxBytes: defaultSpeechOptions.cacheMaxBytes },
};

/** The file store the use cases get: each file stored renews its release, if it has one. */
export class RenewingFileStore implements FileStore {
  constructor(
    private readonly files: FileStore,
    private readonly store: RepositoryStore,
    private readonly clock: Clock,
  ) {}

  async put(bytes: Uint8Array, mimeType: string): Promise<StoredFile> {
    // Renewed before the store looks for the file (hashing the bytes twice): renewed after, a
    // sweep could remove the file between the store finding it and the renewal.
    await this.store.fileReleases.renew(this.files.keyOf(bytes, mimeType), this.clock.nowMicros());
    return this.files.put(bytes, mimeType);
  }

  keyOf(bytes: Uint8Array, mimeType: string): string {
    return this.files.keyOf(bytes, mimeType);
  }

  read(key: string): Promise<Buffer | undefined> {
    return this.files.read(key);
  }

  typeOf(key: string): string | undefined {
    return this.files.typeOf(key);
  }

  remove(key: string): Promise<void> {
    return this.files.remove(key);
  }
}

/** Removes released files nothing holds; worker processes run it now and then, any number at once. */
export class FileSweep {
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<unknown> | undefined;
  #stopped = false;
  /** When this process last scanned the files (clock millis); never yet when undefined. */
  #scannedMillis: number | undefined;

  constructor(
    private readonly store: RepositoryStore,
    private readonly files: FileStore,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly options: FileSweepOptions = defaultFileSweepOptions,
  ) {}

  /** Sweeps every `everyMs` until stopped; a failed sweep is logged and the next tries again. */
  start(): void {
    if (this.#timer || this.#stopped) return;
    const tick = async () => {
      try {
        await this.sweepOnce();
      } catch (error) {
        this.logger.warn({ err: error }, 'sweeping released files failed; the next sweep tries again');
      } finally {
        if (!this.#stopped) this.#timer = setTimeout(() => void (this.#running = tick()), this.options.everyMs).unref();
      }
    };
    this.#timer = setTimeout(() => void (this.#running = tick()), 0).unref();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running?.catch(() => undefined);
  }

  /** Removes the files released over `graceMs` ago that nothing holds; answers how many went. */
  async sweepOnce(): Promise<number> {
    await this.#letGoOfSpeech();
    const now = this.clock.nowMillis();
    if (this.#scannedMillis === undefined || now - this.#scannedMillis >= this.options.scanEveryMs) {
      this.#scannedMillis = now;
      await this.scanOnce();
    }
    const releasedBefore = this.clock.nowMicros() - this.options.graceMs * 1000;
    let removed = 0;
    for (;;) {
      const { taken, unheld } = await this.store.transaction(async ({ fileReleases }) => {
        const due = await fileReleases.takeUnheld(releasedBefore, this.options.batch);
        // Before the commit: a renew of one of these waits for it, and its store then writes the file anew.
        for (const key of due.unheld) await this.files.remove(key);
        return due;
      });
      removed += unheld.length;
      if (unheld.length > 0) this.logger.debug({ removed: unheld.length }, 'released files removed');
      if (taken < this.options.batch || this.#stopped) return removed;
    }
  }

  /**
   * Scans the files for those last written over `graceMs` ago that nothing holds or has let go
   * of, and records their release from now; removes partial writes begun over `graceMs` ago.
   */
  async scanOnce(): Promise<{ released: number; partials: number }> {
    const found = { released: 0, partials: 0 };
    if (!this.files.scan) return found;
    const nowMillis = this.clock.nowMillis();
    // Most files only a job holds (images made over the API): read once, not looked up per file.
    const byJobs = await this.store.fileReleases.heldByJobs();
    let batch: string[] = [];
    const adopt = async () => {
      const released = await this.store.fileReleases.adoptUnheld(batch, this.clock.nowMicros());
      if (released.length > 0) this.logger.info({ files: released.length }, 'files nothing recorded found; they go a grace period from now unless stored again');
      found.released += released.length;
      batch = [];
    };
    for await (const file of this.files.scan(nowMillis - this.options.graceMs)) {
      if (this.#stopped) break;
      if (file.kind === 'partial') {
        await file.remove();
        found.partials += 1;
      } else if (!byJobs.has(file.key)) {
        batch.push(file.key);
        if (batch.length >= scanBatch) await adopt();
      }
    }
    await adopt();
    if (found.partials > 0) this.logger.info({ partials: found.partials }, 'partial writes removed');
    return found;
  }

  /** Releases the files of the spoken audio the cache keeps no more: from now, they go a grace period later. */
  async #letGoOfSpeech(): Promise<void> {
    const { retentionMs, maxBytes } = this.options.speechCache;
    for (;;) {
      const nowMicros = this.clock.nowMicros();
      const taken = await this.store.transaction(async ({ speechAudio, fileReleases }) => {
        const expired = await speechAudio.takeExpired(nowMicros - retentionMs * 1000, maxBytes, this.options.batch);
        for (const accountId of new Set(expired.map((audio) => audio.accountId))) {
          const keys = expired.filter((audio) => audio.accountId === accountId).map((audio) => audio.fileKey);
          await fileReleases.release(keys, accountId, nowMicros);
        }
        return expired.length;
      });
      if (taken > 0) this.logger.debug({ released: taken }, 'spoken audio let go of');
      if (taken < this.options.batch || this.#stopped) return;
    }
  }
}
