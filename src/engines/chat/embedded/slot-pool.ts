/**
 * The embedded engine's parallel slots (a context's sequences), lent to one request at a time.
 * Requests past the slots wait in a fair queue, in arrival order, and hear how many are ahead
 * of them whenever that changes. A waiter that leaves (its signal aborts) leaves the queue at
 * once, and the ones behind it move up.
 *
 * Which free slot a request gets is chosen by `affinity`: the slot whose cached tokens share
 * the longest prefix with the new prompt, so a conversation's next turn lands where its
 * previous turn left its tokens and only the new part is evaluated.
 */

/** How a waiting request learns its place: `ahead` requests are served before it. */
export type QueuedListener = (ahead: number) => void;

interface Waiter<Slot> {
  /** Served after every waiting request that is not. */
  background: boolean;
  score: (slot: Slot) => number;
  onQueued: QueuedListener | undefined;
  resolve: (slot: Slot) => void;
  reject: (reason: unknown) => void;
  detach: () => void;
}

export class SlotPool<Slot> {
  readonly #free: Slot[];
  readonly #waiters: Waiter<Slot>[] = [];
  readonly #size: number;
  readonly #all: readonly Slot[];

  constructor(slots: readonly Slot[]) {
    this.#free = [...slots];
    this.#all = [...slots];
    this.#size = slots.length;
  }

  /** Any one slot, lent or not, to read what every slot shares (its model, its template). */
  peek(): Slot {
    return this.#all[0]!;
  }

  /** How many requests wait for a slot now. */
  get waiting(): number {
    return this.#waiters.length;
  }

  /** How many slots are lent out now. */
  get busy(): number {
    return this.#size - this.#free.length;
  }

  /**
   * A free slot, the one scoring highest by `affinity` (ties: the one free longest); or, when
   * all are lent, the first one given back after the requests that came earlier.
   */
  acquire(options: { affinity?: (slot: Slot) => number; signal?: AbortSignal | undefined; onQueued?: QueuedListener | undefined; background?: boolean | undefined } = {}): Promise<Slot> {
    const { signal } = options;
    const score = options.affinity ?? (() => 0);
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#free.length > 0 && this.#waiters.length === 0) return Promise.resolve(this.#take(score));
    return new Promise<Slot>((resolve, reject) => {
      const onAbort = () => {
        const index = this.#waiters.indexOf(waiter);
        if (index >= 0) {
          this.#waiters.splice(index, 1);
          this.#announceFrom(index);
        }
        reject(signal?.reason);
      };
      const waiter: Waiter<Slot> = {
        background: options.background ?? false,
        score,
        onQueued: options.onQueued,
        resolve,
        reject,
        detach: () => signal?.removeEventListener('abort', onAbort),
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      // Arrival order, except that background work waits behind every request someone waits for.
      const firstBackground = waiter.background ? -1 : this.#waiters.findIndex((each) => each.background);
      const place = firstBackground === -1 ? this.#waiters.length : firstBackground;
      this.#waiters.splice(place, 0, waiter);
      this.#announceFrom(place);
    });
  }

  /** Gives a slot back: the longest-waiting request gets it, or it waits free. */
  release(slot: Slot): void {
    this.#free.push(slot);
    const waiter = this.#waiters.shift();
    if (waiter === undefined) return;
    waiter.detach();
    waiter.resolve(this.#take(waiter.score));
    this.#announceFrom(0);
  }

  /** Refuses every waiting request (the engine is closing). */
  rejectAll(reason: unknown): void {
    for (const waiter of this.#waiters.splice(0)) {
      waiter.detach();
      waiter.reject(reason);
    }
  }

  #take(score: (slot: Slot) => number): Slot {
    let best = 0;
    let bestScore = Number.NEGATIVE_INFINITY;
    this.#free.forEach((slot, index) => {
      const value = score(slot);
      if (value > bestScore) {
        best = index;
        bestScore = value;
      }
    });
    return this.#free.splice(best, 1)[0]!;
  }

  /** Tells every waiter from `index` on its new place. */
  #announceFrom(index: number): void {
    for (let position = index; position < this.#waiters.length; position += 1) this.#waiters[position]!.onQueued?.(position);
  }
}
