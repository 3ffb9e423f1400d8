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
  /** Requests that asked and have not gone out yet. */
  #waiting = 0;
  /** When requests were promised a place by `book` (they ask moments later), oldest first. */
  readonly #promised: number[] = [];
  #queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly limit: number,
    private readonly windowMs = 1000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Resolves when one more request may go out; in turn with earlier callers. */
  acquire(): Promise<void> {
    this.#waiting += 1;
    const turn = this.#queue.then(() => this.#take());
    this.#queue = turn;
    return turn;
  }

  /**
   * For a request that can wait for a quieter moment (an ordinary edit, which the next one
   * replaces): 0 when it may ask now and still leave `keepFree` places of the window to whatever
   * comes next (final edits, commands), counting the places of requests already sent, waiting
   * to go, or promised; else how long until that may be so.
   * A 0 promises the request a place until it asks (at most `promiseMs`), so requests booked in
   * one instant do not all count on the same room. Where this process shares the limit with
   * others behind one proxy (shards), `share` is its part: the places it may count on.
   */
  book(keepFree: number, { share = 1, promiseMs = 500 }: { share?: number; promiseMs?: number } = {}): number {
    const now = this.now();
    this.#forget(now);
    while (this.#promised.length > 0 && this.#promised[0]! <= now - promiseMs) this.#promised.shift();
    const over = this.#sent.length + this.#waiting + this.#promised.length + keepFree + 1 - this.limit * share;
    if (over <= 0) {
      this.#promised.push(now);
      return 0;
    }
    // The place frees when enough of the window's requests age out, if nobody waits for it first.
    const freed = Math.ceil(over);
    const freedAt = freed <= this.#sent.length ? this.#sent[freed - 1]! + this.windowMs : now + this.windowMs;
    return Math.max(5, Math.ceil(freedAt - now));
  }

  #forget(now: number): void {
    while (this.#sent.length > 0 && this.#sent[0]! <= now - this.windowMs) this.#sent.shift();
  }

  async #take(): Promise<void> {
    for (;;) {
      const now = this.now();
      this.#forget(now);
      if (this.#sent.length < this.limit) {
        this.#sent.push(now);
        this.#waiting -= 1;
        // A promised request has asked (or another took its place): the promise is kept.
        this.#promised.shift();
        return;
      }
      await sleep(this.#sent[0]! + this.windowMs - now);
    }
  }
}

type MakeRequest = RESTOptions['makeRequest'];

/** The two global limits Discord keeps: per bot token, and per IP address for requests without one. */
export interface GlobalWindows {
  /** Requests carrying the bot token. */
  token: SlidingWindow;
  /** Requests without it: webhook executes and edits (personas), interaction follow-ups and edits. */
  unauthenticated: SlidingWindow;
}

/**
 * The two windows at the bot's margin under Discord's 50 a second each. The window is held over
 * `windowMs` (a little over a second): requests leave evenly enough, but arrive bunched (a busy
 * event loop, new connections), and requests that left across 1.1 s can land in one of
 * Discord's seconds.
 */
export function globalWindows(perSecond: number, windowMs = 1100): GlobalWindows {
  return { token: new SlidingWindow(perSecond, windowMs), unauthenticated: new SlidingWindow(perSecond, windowMs) };
}

/**
 * discord.js's request function behind the sliding window of the global limit each request
 * counts against: the bot token's when it carries the token, else the IP address's (Discord:
 * "If no authorization header is provided, then the limit is applied to the IP address").
 * Interaction callbacks count against neither (and must answer within 3 s), so they never wait.
 * The two limits are separate, so persona traffic (webhooks) does not take the bot's budget.
 */
export function withGlobalWindows(windows: GlobalWindows, makeRequest: MakeRequest = DefaultRestOptions.makeRequest): MakeRequest {
  return async (url, init) => {
    if (hasAuthorization(init.headers)) await windows.token.acquire();
    else if (!isInteractionCallback(url)) await windows.unauthenticated.acquire();
    return makeRequest(url, init);
  };
}

const isInteractionCallback = (url: string): boolean => /\/interactions\/\d+\/[^/]+\/callback(?:\?|$)/.test(url);

function hasAuthorization(headers: Parameters<MakeRequest>[1]['headers']): boolean {
  if (headers === undefined || headers === null) return false;
  if (headers instanceof Headers) return headers.has('authorization');
  if (Array.isArray(headers)) return headers.some(([name]) => String(name).toLowerCase() === 'authorization');
  return Object.keys(headers).some((name) => name.toLowerCase() === 'authorization');
}
