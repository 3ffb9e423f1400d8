import { LRUCache } from 'lru-cache';
import type { GlobalWindows } from './global-window.js';

/** Discord's global limit: requests a second per bot token, whichever process sends them. */
export const discordRequestsPerSecond = 50;
/**
 * What the bot lets out a second, all processes together (one process's REST client, or the
 * sharding proxy's): a margin under Discord's 50. discord.js counts fixed seconds from its own
 * first request of each, Discord from the arrival of its first; requests of a burst that
 * travel faster than that one land in Discord's previous second. Two of margin still met a
 * global 429 when 100 final edits went out at once; five did not.
 */
export const sentRequestsPerSecond = 45;
/**
 * The part of the requests a second that reach Discord which ordinary edits may take; the rest
 * is kept for final edits, new messages and commands, which then never wait behind edits.
 */
export const ordinaryEditShare = 0.8;
/**
 * Pacing keys of webhooks (personas, interaction replies) start with this. Their requests carry
 * no bot token, so Discord counts them against the IP address's global limit, not the token's:
 * their edits take a budget of their own.
 */
export const webhookKeyPrefix = 'webhook:';
/** Places of the global window ordinary edits leave to final edits, new messages and commands. */
const defaultKeepFree = Math.round((1 - ordinaryEditShare) * sentRequestsPerSecond);

export interface PacerOptions {
  /** Spacing of ordinary edits in one channel when Discord says nothing more. */
  baseIntervalMs: number;
  /** The slowest spacing a run of 429s may push a channel to. */
  maxIntervalMs: number;
  /**
   * Ordinary edits allowed per second across all channels. Discord allows a bot 50 requests
   * a second in all; keeping ordinary edits below that leaves room for final edits, new
   * messages and commands, which then never wait behind a queue of edits. Where several
   * processes share the bot token (shards), each takes its part; a part below one a second
   * allows one edit per `1 / globalPerSecond` seconds.
   */
  globalPerSecond?: number;
  /** The same for edits through webhooks (keys starting `webhook:`), which Discord limits apart (default `globalPerSecond`). */
  unauthenticatedPerSecond?: number;
  /**
   * The process's global windows (see `global-window.ts`). With them an ordinary edit goes out
   * only while its window would still have `keepFree` places to spare, counting the requests
   * sent, waiting there and promised: when every reply ends at once, the final edits then meet
   * an empty queue instead of a queue of edits that they replace anyway. A reply's first
   * message leaves half as many places free, so replies appear before others' edits; one that
   * cannot appear before its end is sent once, with its final text.
   */
  windows?: GlobalWindows;
  /** Places of a window ordinary edits leave free (default 9, a fifth of the bot's 45). */
  keepFree?: number;
  /**
   * This process's part of the windows' limit (shards behind the manager's proxy, where the
   * limit is kept for all of them; default 1): its ordinary edits count on that part only, so
   * the shards' edits together never fill the proxy's queue ahead of anyone's final edits.
   */
  windowShare?: number;
  now?: () => number;
}

/** `allowed` edits in any `windowMs` (a second, or longer for less than one a second); `recent`: when the last window's went out, oldest first. */
interface Budget {
  allowed: number;
  windowMs: number;
  recent: number[];
}

function budgetOf(perSecond: number): Budget {
  if (!(perSecond > 0)) throw new RangeError(`an edit budget must be above 0 a second, not ${perSecond}`);
  return perSecond >= 1 ? { allowed: Math.floor(perSecond), windowMs: 1000, recent: [] } : { allowed: 1, windowMs: Math.ceil(1000 / perSecond), recent: [] };
}

interface ChannelState {
  /** When the next ordinary edit may go out. */
  nextAt: number;
  lastSentAt: number;
  intervalMs: number;
}

/**
 * Paces message edits per channel. It starts at about one edit per second and follows what
 * Discord says of each channel's bucket: the `X-RateLimit-Remaining` and `-Reset-After` of
 * the last answer spread the remaining budget over the window, and a 429 doubles the spacing
 * (decaying back as edits go through). Channels are independent: a busy thread never slows
 * another. Across channels, ordinary edits stay within a budget below Discord's global limit.
 */
export class ChannelPacer {
  readonly #channels = new LRUCache<string, ChannelState>({ max: 50_000 });
  readonly #now: () => number;
  /** The bot token's budget and the webhooks' (see `webhookKeyPrefix`). */
  readonly #budgets: { token: Budget; webhooks: Budget };

  constructor(private readonly options: PacerOptions) {
    this.#now = options.now ?? Date.now;
    const perSecond = options.globalPerSecond ?? ordinaryEditShare * discordRequestsPerSecond;
    this.#budgets = { token: budgetOf(perSecond), webhooks: budgetOf(options.unauthenticatedPerSecond ?? perSecond) };
  }

  /** Milliseconds until an ordinary edit may go to `channelId`. */
  waitFor(channelId: string): number {
    const state = this.#channels.get(channelId);
    return state ? Math.max(0, state.nextAt - this.#now()) : 0;
  }

  /**
   * Asks to send an ordinary edit to `channelId` now (`opening`: a reply's first message):
   * returns 0 and books the request when the channel's pace, the bot's overall budget and the
   * global window all allow it, else how long to wait.
   */
  claim(channelId: string, opening = false): number {
    const wait = this.waitFor(channelId);
    return wait > 0 ? wait : this.#claimGlobal(channelId, opening);
  }

  #claimGlobal(channelId: string, opening: boolean): number {
    const now = this.#now();
    const tokenless = channelId.startsWith(webhookKeyPrefix);
    const { allowed, windowMs, recent } = tokenless ? this.#budgets.webhooks : this.#budgets.token;
    while (recent.length > 0 && recent[0]! <= now - windowMs) recent.shift();
    if (recent.length >= allowed) return Math.max(1, recent[0]! + windowMs - now);
    const windows = this.options.windows;
    if (windows) {
      const share = this.options.windowShare ?? 1;
      const keepFree = ((this.options.keepFree ?? defaultKeepFree) * share) / (opening ? 2 : 1);
      const held = windows[tokenless ? 'unauthenticated' : 'token'].book(keepFree, { share });
      // A webhook request may go with the bot token when the address's window is crowded (see `GlobalWindows.spill`).
      const spilled = held > 0 && tokenless && windows.spill !== undefined ? windows.token.book(keepFree + windows.spill.reserve * share, { share }) : held;
      if (held > 0 && spilled > 0) return Math.min(held, spilled);
    }
    recent.push(now);
    return 0;
  }

  /**
   * Asks to send a request nobody waits for (a typing indicator) to `channelId`, which has a
   * bucket of its own: 0 and booked when the bot's budget and the global window have room as
   * for an ordinary edit, else how long to wait.
   */
  claimSpare(channelId: string): number {
    return this.#claimGlobal(channelId, false);
  }

  /** A message was sent or edited in the channel just now. */
  sent(channelId: string): void {
    const state = this.#state(channelId);
    const now = this.#now();
    state.lastSentAt = now;
    state.nextAt = Math.max(state.nextAt, now + state.intervalMs);
  }

  /** Discord's rate-limit headers for the channel's bucket, from the answer to a request. */
  observe(channelId: string, bucket: { remaining: number; resetAfterMs: number }): void {
    const state = this.#state(channelId);
    const now = this.#now();
    if (bucket.remaining <= 0) {
      state.nextAt = Math.max(state.nextAt, now + bucket.resetAfterMs);
      return;
    }
    state.intervalMs = Math.max(this.options.baseIntervalMs, state.intervalMs * 0.8);
    const spread = bucket.resetAfterMs / bucket.remaining;
    state.nextAt = Math.max(state.nextAt, state.lastSentAt + Math.max(state.intervalMs, spread));
  }

  /** Discord answered 429 for the channel: back off. */
  rateLimited(channelId: string, retryAfterMs: number): void {
    const state = this.#state(channelId);
    state.intervalMs = Math.min(this.options.maxIntervalMs, state.intervalMs * 2);
    state.nextAt = Math.max(state.nextAt, this.#now() + Math.max(retryAfterMs, state.intervalMs));
  }

  /** The current spacing of a channel (for logs and tests). */
  intervalOf(channelId: string): number {
    return this.#channels.get(channelId)?.intervalMs ?? this.options.baseIntervalMs;
  }

  #state(channelId: string): ChannelState {
    let state = this.#channels.get(channelId);
    if (!state) {
      state = { nextAt: 0, lastSentAt: 0, intervalMs: this.options.baseIntervalMs };
      this.#channels.set(channelId, state);
    }
    return state;
  }
}
