import { setTimeout as sleep } from 'node:timers/promises';
import { DefaultRestOptions, type RESTOptions } from '@discordjs/rest';

/**
 * At most `limit` requests in any `windowMs`, let out in the order they ask.
 *
 * discord.js keeps Discord's global limit in fixed seconds counted from its own first request;
 * Discord (and our fake) count their own seconds, so a busy bot can put most of two of
 * discord.js's seconds into one of Discord's and meet a burst of global 429s. A sliding window
 * under the fixed one means no second, however it is placed, sees more than `limit`.
 */
export class SlidingWindow {
  /** When the requests of the last window went out, oldest first. */
  readonly #sent: number[] = [];
  #queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly limit: number,
    private readonly windowMs = 1000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Resolves when one more request may go out; in turn with earlier callers. */
  acquire(): Promise<void> {
    const turn = this.#queue.then(() => this.#take());
    this.#queue = turn;
    return turn;
  }

  async #take(): Promise<void> {
    for (;;) {
      const now = this.now();
      while (this.#sent.length > 0 && this.#sent[0]! <= now - this.windowMs) this.#sent.shift();
      if (this.#sent.length < this.limit) {
        this.#sent.push(now);
        return;
      }
      await sleep(this.#sent[0]! + this.windowMs - now);
    }
  }
}

type MakeRequest = RESTOptions['makeRequest'];

/**
 * discord.js's request function behind a sliding window for the requests Discord counts
 * globally: those carrying the bot token. Interaction callbacks and webhook routes go without
 * it (they are exempt, and an interaction must be answered within 3 s).
 */
export function withGlobalWindow(window: SlidingWindow, makeRequest: MakeRequest = DefaultRestOptions.makeRequest): MakeRequest {
  return async (url, init) => {
    if (hasAuthorization(init.headers)) await window.acquire();
    return makeRequest(url, init);
  };
}

function hasAuthorization(headers: Parameters<MakeRequest>[1]['headers']): boolean {
  if (headers === undefined || headers === null) return false;
  if (headers instanceof Headers) return headers.has('authorization');
  if (Array.isArray(headers)) return headers.some(([name]) => String(name).toLowerCase() === 'authorization');
  return Object.keys(headers).some((name) => name.toLowerCase() === 'authorization');
}
