/**
 * A queue one producer pushes into and one consumer reads as an async iterable. The
 * producer never waits for the consumer, so a slow or departed reader cannot stall work.
 */
export class AsyncQueue<T> implements AsyncIterable<T> {
  readonly #items: T[] = [];
  #waiting: ((result: IteratorResult<T>) => void) | undefined;
  #rejectWaiting: ((error: unknown) => void) | undefined;
  #ended = false;
  #abandoned = false;
  #failure: { error: unknown } | undefined;

  push(item: T): void {
    if (this.#ended || this.#abandoned) return;
    if (this.#waiting) {
      const resolve = this.#waiting;
      this.#clearWaiting();
      resolve({ value: item, done: false });
    } else {
      this.#items.push(item);
    }
  }

  end(): void {
    this.#ended = true;
    this.#waiting?.({ value: undefined, done: true });
    this.#clearWaiting();
  }

  fail(error: unknown): void {
    if (this.#ended) return;
    this.#failure = { error };
    this.#ended = true;
    this.#rejectWaiting?.(error);
    this.#clearWaiting();
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => {
        if (this.#items.length > 0) return Promise.resolve({ value: this.#items.shift()!, done: false });
        if (this.#failure) return Promise.reject(this.#failure.error);
        if (this.#ended) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve, reject) => {
          this.#waiting = resolve;
          this.#rejectWaiting = reject;
        });
      },
      return: () => {
        // The reader left: drop what it will never read, keep accepting pushes silently.
        this.#abandoned = true;
        this.#items.length = 0;
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }

  #clearWaiting(): void {
    this.#waiting = undefined;
    this.#rejectWaiting = undefined;
  }
}
