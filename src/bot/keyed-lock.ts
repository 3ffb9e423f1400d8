/**
 * A keyed in-process async mutex: tasks under one name run one at a time, in the order they
 * asked; tasks under different names run concurrently.
 *
 * Each name maps to the promise that settles when its last queued task releases, so a
 * waiter only needs the tail it found when it arrived. A name's entry is removed when its last
 * task releases, so the map holds only names that are busy now and memory does not grow with
 * the number of names ever used.
 *
 * Not re-entrant: calling `run` with a name from inside a task holding that name waits forever.
 */
export class KeyedLock {
  readonly #tails = new Map<string, Promise<void>>();

  /** Runs `task` once every earlier task on `name` has settled; a task that throws releases too. */
  async run<T>(name: string, task: () => T | Promise<T>): Promise<T> {
    const previous = this.#tails.get(name);
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    // Tails never reject (they are release signals), so a failed task cannot break the chain.
    const tail = previous === undefined ? released : previous.then(() => released);
    this.#tails.set(name, tail);
    try {
      if (previous !== undefined) await previous;
      return await task();
    } finally {
      release();
      // Only the last waiter in the queue removes the entry; later arrivals replaced it.
      if (this.#tails.get(name) === tail) this.#tails.delete(name);
    }
  }

  /** How many names are held or waited on now; 0 when idle. */
  get size(): number {
    return this.#tails.size;
  }
}
