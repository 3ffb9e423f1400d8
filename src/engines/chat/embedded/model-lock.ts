/**
 * One process at a time fetches a given model file. The lock is proper-lockfile's directory
 * `<file>.lock`, whose time the holder touches every few seconds: a holder that died leaves a
 * lock that goes stale after `LOCK_STALE_MS`, and the next process takes it over (and resumes
 * the part the dead one left). A waiter wakes when the lock directory goes away (watched), or
 * every `POLL_MS` to look for staleness, and at once when its signal aborts.
 */
import { watch } from 'node:fs';
import path from 'node:path';
import lockfile from 'proper-lockfile';

/** A lock untouched this long belongs to a process that is gone. */
export const LOCK_STALE_MS = 10_000;
const POLL_MS = 1000;

export interface ModelLockOptions {
  signal?: AbortSignal | undefined;
  /** Called once, when the lock is first found held by another process. */
  onWaiting: () => void;
  /** Called if the lock is taken from us (we stalled past the stale time); the download must stop. */
  onCompromised: (error: Error) => void;
}

/** Takes the lock on `target` (whose folder must exist), waiting for another holder; resolves to its release. */
export async function lockModelFile(target: string, options: ModelLockOptions): Promise<() => Promise<void>> {
  const { signal } = options;
  let waiting = false;
  for (;;) {
    signal?.throwIfAborted();
    try {
      const release = await lockfile.lock(target, { realpath: false, stale: LOCK_STALE_MS, retries: 0, onCompromised: options.onCompromised });
      return async () => {
        try {
          await release();
        } catch {
          // Already released, or compromised and taken by another process: nothing of ours to remove.
        }
      };
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'ELOCKED') throw error;
    }
    if (!waiting) {
      waiting = true;
      options.onWaiting();
    }
    await lockChangedOrPoll(`${target}.lock`, signal);
  }
}

/** Resolves when something happens to the lock directory, after `POLL_MS` at the latest; rejects on abort. */
function lockChangedOrPoll(lockPath: string, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const name = path.basename(lockPath);
    let watcher: ReturnType<typeof watch> | undefined;
    const finish = (error?: unknown): void => {
      clearTimeout(timer);
      watcher?.close();
      signal?.removeEventListener('abort', onAbort);
      if (error === undefined) resolve();
      else reject(error);
    };
    const onAbort = (): void => finish(signal?.reason);
    const timer = setTimeout(() => finish(), POLL_MS);
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) return onAbort();
    try {
      watcher = watch(path.dirname(lockPath), (_event, filename) => {
        if (filename === null || filename === name) finish();
      });
      // A watcher that fails (the folder removed, no inotify left) leaves the poll to do its work.
      watcher.on('error', () => watcher?.close());
    } catch {
      // Same: polling alone is slower but still correct.
    }
  });
}
