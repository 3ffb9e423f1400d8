/** What the bot (or every shard of it) is doing: `disabled` without DISCORD_TOKEN, `failed` when Discord refused it for good. */
export type DiscordStatus = 'disabled' | 'connecting' | 'ready' | 'failed';

/** Callers of `whenReady()` waiting for the bot to become ready or fail for good. */
export class ReadyWaiters {
  #waiters: Array<{ resolve: () => void; reject: (error: Error) => void }> = [];

  /** Settled at once when `status` is final; otherwise at the next `settle`. */
  wait(status: DiscordStatus): Promise<void> {
    if (status === 'ready') return Promise.resolve();
    if (status === 'failed') return Promise.reject(new Error('the Discord bot failed for good'));
    return new Promise((resolve, reject) => this.#waiters.push({ resolve, reject }));
  }

  /** Resolves every waiter, or rejects them with `error`. */
  settle(error?: Error): void {
    for (const waiter of this.#waiters.splice(0)) {
      if (error) waiter.reject(error);
      else waiter.resolve();
    }
  }
}
