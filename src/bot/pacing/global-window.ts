import { DefaultRestOptions, type RESTOptions } from '@discordjs/rest';

/**
 * At most `limit` requests reach Discord in any `windowMs`, let out in the order they ask.
 *
 * discord.js keeps Discord's global limit in fixed seconds counted from its own first request;
 * Discord (and our fake) count their own seconds, so a busy bot can put most of two of
 * discord.js's seconds into one of Discord's and meet a burst of global 429s. A sliding window
 * under the fixed one means no second, however it is placed, sees more than `limit`.
 *
 * A request holds its place from the moment it is let out until `windowMs` after its answer,
 * not after it left: it reaches Discord somewhere between the two, and a busy event loop (or a
 * new connection) can hold requests let out over more than a second and send them together.
 * Counted this way, any `limit + 1` requests that arrive within `windowMs` of each other would
 * have had to be let out while all the others still held their places, which the window never
 * does: the guarantee holds however late requests leave.
 */
export class SlidingWindow {
  /** When the answers to the last window's requests came, oldest first. */
  readonly #answered: number[] = [];
  /** Requests let out and not answered yet: each may reach Discord at any moment until then. */
  #inFlight = 0;
  /** Requests that asked and have not gone out yet. */
  #waiting = 0;
  /** When requests were promised a place by `book` (they ask moments later), oldest first. */
  readonly #promised: number[] = [];
  #queue: Promise<unknown> = Promise.resolve();
  /** Wakes the request at the head of the queue when a request in flight is answered. */
  #onAnswer: (() => void) | undefined;

  constructor(
    private readonly limit: number,
    private readonly windowMs = 1000,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Resolves when one more request may go out, in turn with earlier callers, with the function
   * to call once it is answered (or has failed): its place frees `windowMs` after that.
   */
  acquire(): Promise<() => void> {
    this.#waiting += 1;
    const turn = this.#queue.then(() => this.#take());
    this.#queue = turn;
    return turn;
  }

  /**
   * For a request that can wait for a quieter moment (an ordinary edit, which the next one
   * replaces): 0 when it may ask now and still leave `keepFree` places of the window to whatever
   * comes next (final edits, commands), counting the places of requests in flight or answered
   * within the window, waiting to go, or promised; else how long until that may be so.
   * A 0 promises the request a place until it asks (at most `promiseMs`), so requests booked in
   * one instant do not all count on the same room. Where this process shares the limit with
   * others behind one proxy (shards), `share` is its part: the places it may count on.
   */
  book(keepFree: number, { share = 1, promiseMs = defaultPromiseMs }: { share?: number; promiseMs?: number } = {}): number {
    const now = this.now();
    this.#forget(now, promiseMs);
    const over = this.#answered.length + this.#inFlight + this.#waiting + this.#promised.length + keepFree + 1 - this.limit * share;
    if (over <= 0) {
      this.#promised.push(now);
      return 0;
    }
    // The place frees when enough answered requests age out, if nobody waits for it first; a
    // request still in flight frees its place a window after its answer at the soonest.
    const freed = Math.ceil(over);
    const freedAt = freed <= this.#answered.length ? this.#answered[freed - 1]! + this.windowMs : now + this.windowMs;
    return Math.max(5, Math.ceil(freedAt - now));
  }

  /**
   * Places of the window not taken now: its limit less the requests in flight, answered within
   * it, waiting to go and promised. Below 0 when requests wait: minus the backlog a new request
   * would queue behind.
   */
  free(): number {
    this.#forget(this.now(), defaultPromiseMs);
    return this.limit - this.#answered.length - this.#inFlight - this.#waiting - this.#promised.length;
  }

  #forget(now: number, promiseMs?: number): void {
    while (this.#answered.length > 0 && this.#answered[0]! <= now - this.windowMs) this.#answered.shift();
    if (promiseMs === undefined) return;
    while (this.#promised.length > 0 && this.#promised[0]! <= now - promiseMs) this.#promised.shift();
  }

  async #take(): Promise<() => void> {
    for (;;) {
      const now = this.now();
      this.#forget(now);
      if (this.#answered.length + this.#inFlight < this.limit) {
        this.#inFlight += 1;
        this.#waiting -= 1;
        // A promised request has asked (or another took its place): the promise is kept.
        this.#promised.shift();
        let done = false;
        return () => {
          if (done) return;
          done = true;
          this.#inFlight -= 1;
          this.#answered.push(this.now());
          this.#onAnswer?.();
        };
      }
      // Every place is held: wait for the oldest answer to age out, or for an answer to come.
      await new Promise<void>((resolve) => {
        const timer = this.#answered.length > 0 ? setTimeout(resolve, this.#answered[0]! + this.windowMs - now) : undefined;
        this.#onAnswer = () => {
          clearTimeout(timer);
          this.#onAnswer = undefined;
          resolve();
        };
      });
    }
  }
}

/** How long a place promised by `book` is held for a request that has not asked yet. */
const defaultPromiseMs = 500;

type MakeRequest = RESTOptions['makeRequest'];

/** The two global limits Discord keeps: per bot token, and per IP address for requests without one. */
export interface GlobalWindows {
  /** Requests carrying the bot token. */
  token: SlidingWindow;
  /** Requests without it: webhook executes and edits (personas), interaction follow-ups and edits. */
  unauthenticated: SlidingWindow;
  /**
   * Set when webhook requests may carry the bot token. Webhook routes need none, but Discord
   * counts a request that carries one against the token's global limit instead of the address's;
   * so when the address's window is full (every persona reply ending at once) a webhook request
   * goes with the token, and the two windows share the load.
   */
  spill?: {
    /** The bot's `Authorization` header. */
    authorization: () => string;
    /**
     * Places of the token's window a spilled request leaves free, for the bot's own requests
     * (commands, its own replies) and as a margin: spilled requests never queue there.
     */
    reserve: number;
  };
}

/**
 * The two windows at the bot's margin under Discord's 50 a second each, over Discord's second:
 * a place is held until a second after the answer (see `SlidingWindow`), so requests that leave
 * bunched by a busy event loop still never put more than `perSecond` into one of Discord's
 * seconds. With `token`, webhook requests may spill onto the token's window.
 */
export function globalWindows(
  perSecond: number,
  { windowMs = 1000, token, spillReserve = Math.round(perSecond / 5) }: { windowMs?: number; token?: () => string | undefined; spillReserve?: number } = {},
): GlobalWindows {
  const windows: GlobalWindows = { token: new SlidingWindow(perSecond, windowMs), unauthenticated: new SlidingWindow(perSecond, windowMs) };
  if (token !== undefined) {
    const authorization = () => {
      const value = token();
      if (value === undefined || value === '') throw new Error('the bot token is not known yet');
      return `Bot ${value}`;
    };
    windows.spill = { authorization, reserve: spillReserve };
  }
  return windows;
}

/**
 * The window a token-less webhook request counts against if sent now: the address's while it has
 * a free place; else the token's if it can take one at once and still keep its reserve; else the
 * address's, to wait there.
 */
export function windowForWebhook(windows: GlobalWindows): 'token' | 'unauthenticated' {
  if (windows.spill === undefined || windows.unauthenticated.free() > 0) return 'unauthenticated';
  return windows.token.free() > windows.spill.reserve ? 'token' : 'unauthenticated';
}

/**
 * discord.js's request function behind the sliding window of the global limit each request
 * counts against: the bot token's when it carries the token, else the IP address's (Discord:
 * "If no authorization header is provided, then the limit is applied to the IP address").
 * Interaction callbacks count against neither (and must answer within 3 s), so they never wait,
 * and never carry the token (it would count them). Webhook requests go with the token when the
 * address's window is full (see `GlobalWindows.spill`).
 */
export function withGlobalWindows(windows: GlobalWindows, makeRequest: MakeRequest = DefaultRestOptions.makeRequest): MakeRequest {
  const within = async (window: SlidingWindow, url: string, init: Parameters<MakeRequest>[1]) => {
    const answered = await window.acquire();
    try {
      return await makeRequest(url, init);
    } finally {
      answered();
    }
  };
  return async (url, init) => {
    if (hasAuthorization(init.headers)) return within(windows.token, url, init);
    if (isWebhookRequest(url) && windowForWebhook(windows) === 'token') {
      return within(windows.token, url, { ...init, headers: withAuthorization(init.headers, windows.spill!.authorization()) });
    }
    if (isInteractionCallback(url)) return makeRequest(url, init);
    return within(windows.unauthenticated, url, init);
  };
}

const isInteractionCallback = (url: string): boolean => /\/interactions\/\d+\/[^/]+\/callback(?:\?|$)/.test(url);
/** Execute, edit and delete of a webhook's messages, interaction webhooks included (`/webhooks/{id}/{token}…`). */
const isWebhookRequest = (url: string): boolean => /\/webhooks\/\d+\/[^/?]+/.test(url);

type RequestHeaders = Parameters<MakeRequest>[1]['headers'];

function hasAuthorization(headers: RequestHeaders): boolean {
  if (headers === undefined || headers === null) return false;
  if (headers instanceof Headers) return headers.has('authorization');
  if (Array.isArray(headers)) return headers.some(([name]) => String(name).toLowerCase() === 'authorization');
  return Object.keys(headers).some((name) => name.toLowerCase() === 'authorization');
}

/** The request's headers with the Authorization added, as a plain object (what discord.js itself passes). */
function withAuthorization(headers: RequestHeaders, authorization: string): Record<string, string> {
  const entries = new Headers((headers ?? undefined) as ConstructorParameters<typeof Headers>[0]);
  entries.set('Authorization', authorization);
  return Object.fromEntries(entries);
}
