/**
 * Discord-style rate limits: fixed-window buckets per route kind and major parameter (channel,
 * guild, or webhook id + token), a global limit per bot token for authenticated requests and
 * the same limit per IP address for requests without one (webhooks; Discord: "If no
 * authorization header is provided, then the limit is applied to the IP address"), interaction
 * callbacks exempt from both, and 429s a test forces on demand. Answers carry Discord's headers, which @discordjs/rest reads to pace
 * itself. The windows run on the real clock, because the client waits in real time.
 *
 * Discord does not publish its numbers; the defaults below are the commonly observed ones:
 * message create/edit 5 per 5 s per channel, interaction webhooks 5 per 2 s per token, typing
 * 5 per 5 s per channel, 50 requests per second per bot token globally.
 */
import { createHash } from 'node:crypto';

/** `limit` requests per `windowMs`. */
export interface BucketLimit {
  limit: number;
  windowMs: number;
}

/** Route kinds that share a bucket; a route's kind is listed with it in `routes/*.ts`. */
export type BucketName =
  | 'message-create'
  | 'message-edit'
  | 'message-delete'
  | 'message-read'
  | 'typing'
  | 'channel-read'
  | 'channel-edit'
  | 'thread-create'
  | 'thread-members'
  | 'dm-create'
  | 'interaction-webhook'
  | 'webhook-execute'
  | 'webhook-message'
  | 'webhook-manage'
  | 'commands-read'
  | 'commands-write'
  | 'guild-read'
  | 'user-read'
  | 'gateway-read';

export const DEFAULT_BUCKET_LIMITS: Readonly<Record<BucketName, BucketLimit>> = {
  'message-create': { limit: 5, windowMs: 5000 },
  'message-edit': { limit: 5, windowMs: 5000 },
  'message-delete': { limit: 5, windowMs: 1000 },
  'message-read': { limit: 10, windowMs: 1000 },
  typing: { limit: 5, windowMs: 5000 },
  'channel-read': { limit: 10, windowMs: 1000 },
  'channel-edit': { limit: 5, windowMs: 5000 },
  'thread-create': { limit: 10, windowMs: 10_000 },
  'thread-members': { limit: 10, windowMs: 10_000 },
  'dm-create': { limit: 10, windowMs: 10_000 },
  'interaction-webhook': { limit: 5, windowMs: 2000 },
  'webhook-execute': { limit: 5, windowMs: 2000 },
  'webhook-message': { limit: 5, windowMs: 2000 },
  'webhook-manage': { limit: 5, windowMs: 5000 },
  'commands-read': { limit: 10, windowMs: 1000 },
  'commands-write': { limit: 10, windowMs: 20_000 },
  'guild-read': { limit: 10, windowMs: 1000 },
  'user-read': { limit: 10, windowMs: 1000 },
  'gateway-read': { limit: 10, windowMs: 1000 },
};

export interface RateLimitOptions {
  /**
   * Per bot token for authenticated requests, and per IP address for the others (webhook
   * executes and edits, interaction follow-ups); interaction callbacks are exempt.
   */
  global: BucketLimit | null;
  buckets: Partial<Record<BucketName, BucketLimit>>;
  /**
   * Discord rounds the `Retry-After` header up to whole seconds (the body's `retry_after` keeps
   * the fraction); `fractional` sends the exact value so tests with short waits stay fast.
   */
  retryAfterHeader: 'integer' | 'fractional';
}

/** Makes the next `count` matching requests answer 429, whatever the buckets say. */
export interface ForcedRateLimit {
  method?: string;
  /** E.g. `PATCH /channels/{channel.id}/messages/{message.id}`, or the path part alone. */
  routeTemplate?: string;
  count: number;
  retryAfterMs: number;
  global?: boolean;
  scope?: 'user' | 'shared';
}

/** 429s sent so far, for benchmarks. */
export interface RateLimitHits {
  total: number;
  global: number;
  forced: number;
  /** `METHOD template` → 429s. */
  byRoute: Record<string, number>;
}

/**
 * Authenticated requests per global window (the fixed 1 s windows of the global limit), summed
 * over every client using the token, for asserting that shards together stayed within the limit.
 */
export interface GlobalUsage {
  /** The configured global limit per window, or null when it is off. */
  limit: number | null;
  /** Each window that saw a request, oldest first: its start (epoch ms) and the requests in it, refused ones included. */
  windows: Array<{ startedAt: number; requests: number; refused: number }>;
  /** The most requests any one window saw. */
  peak: number;
}

/** What the limiter needs to know of a request. */
export interface RateLimitedRequest {
  method: string;
  /** `METHOD /path/{template}`. */
  route: string;
  bucket: BucketName | null;
  majorParameter: string;
  /** The bot token for authenticated requests, else null. */
  token: string | null;
  /** The client's address, which Discord limits globally when there is no token. */
  ip: string;
}

/** Interaction callbacks count against no global limit (Discord's rule). */
const isInteractionCallback = (route: string): boolean => route.endsWith('/callback') && route.includes(' /interactions/');

/** The limiter's verdict: headers to send, and a 429 body when the request is refused. */
export interface RateLimitVerdict {
  headers: Record<string, string>;
  refusal: { message: string; retry_after: number; global: boolean } | null;
}

const seconds = (milliseconds: number): string => (milliseconds / 1000).toFixed(3);

export class RateLimiter {
  readonly #options: RateLimitOptions;
  readonly #now: () => number;
  readonly #windows = new Map<string, { remaining: number; resetAt: number }>();
  readonly #forced: Array<ForcedRateLimit & { left: number }> = [];
  readonly #hits: RateLimitHits = { total: 0, global: 0, forced: 0, byRoute: {} };
  /** Per global scope (`token`, `ip`): each window's requests. */
  readonly #usage = { token: [] as Array<{ startedAt: number; requests: number; refused: number }>, ip: [] as Array<{ startedAt: number; requests: number; refused: number }> };

  constructor(options: RateLimitOptions, now: () => number = Date.now) {
    this.#options = options;
    this.#now = now;
  }

  get hits(): RateLimitHits {
    return { ...this.#hits, byRoute: { ...this.#hits.byRoute } };
  }

  /** The bot token's global windows; `scope: 'ip'` for requests without a token. */
  globalUsage(scope: 'token' | 'ip' = 'token'): GlobalUsage {
    const usage = this.#usage[scope];
    return {
      limit: this.#options.global?.limit ?? null,
      windows: usage.map((window) => ({ ...window })),
      peak: Math.max(0, ...usage.map((window) => window.requests)),
    };
  }

  force(rule: ForcedRateLimit): void {
    this.#forced.push({ ...rule, left: rule.count });
  }

  limitOf(bucket: BucketName): BucketLimit {
    return this.#options.buckets[bucket] ?? DEFAULT_BUCKET_LIMITS[bucket];
  }

  check(request: RateLimitedRequest): RateLimitVerdict {
    const now = this.#now();
    const forced = this.#takeForced(request);
    if (forced !== null) {
      this.#count(request, forced.global === true, true);
      return forced.global === true
        ? this.#globalRefusal(forced.retryAfterMs)
        : this.#bucketRefusal(request, now, forced.retryAfterMs, forced.scope ?? 'user');
    }
    const scope = request.token !== null ? 'token' : isInteractionCallback(request.route) ? null : 'ip';
    if (scope !== null && this.#options.global !== null) {
      const key = scope === 'token' ? `global:${request.token}` : `global-ip:${request.ip}`;
      const window = this.#take(key, this.#options.global, now);
      this.#recordUsage(scope, this.#windows.get(key)!, this.#options.global, window === null);
      if (window === null) {
        this.#count(request, true, false);
        return this.#globalRefusal(this.#windows.get(key)!.resetAt - now);
      }
    }
    if (request.bucket === null) return { headers: {}, refusal: null };
    const limit = this.limitOf(request.bucket);
    const key = `${request.bucket}:${request.majorParameter}`;
    const window = this.#take(key, limit, now);
    if (window === null) {
      this.#count(request, false, false);
      return this.#bucketRefusal(request, now, this.#windows.get(key)!.resetAt - now, 'user');
    }
    return { headers: this.#bucketHeaders(request.bucket, limit.limit, window.remaining, window.resetAt, now), refusal: null };
  }

  /** Takes one request from a window; null when the window is used up. */
  #take(key: string, limit: BucketLimit, now: number): { remaining: number; resetAt: number } | null {
    let window = this.#windows.get(key);
    if (window === undefined || now >= window.resetAt) {
      window = { remaining: limit.limit, resetAt: now + limit.windowMs };
      this.#windows.set(key, window);
    }
    if (window.remaining <= 0) return null;
    window.remaining -= 1;
    return window;
  }

  #recordUsage(scope: 'token' | 'ip', window: { resetAt: number }, limit: BucketLimit, refused: boolean): void {
    const startedAt = window.resetAt - limit.windowMs;
    const usage = this.#usage[scope];
    let last = usage.at(-1);
    if (last?.startedAt !== startedAt) {
      last = { startedAt, requests: 0, refused: 0 };
      usage.push(last);
    }
    last.requests += 1;
    if (refused) last.refused += 1;
  }

  #takeForced(request: RateLimitedRequest): (ForcedRateLimit & { left: number }) | null {
    const index = this.#forced.findIndex((rule) => {
      if (rule.method !== undefined && rule.method.toUpperCase() !== request.method) return false;
      if (rule.routeTemplate === undefined) return true;
      return request.route === rule.routeTemplate || request.route.endsWith(` ${rule.routeTemplate}`);
    });
    if (index === -1) return null;
    const rule = this.#forced[index]!;
    rule.left -= 1;
    if (rule.left <= 0) this.#forced.splice(index, 1);
    return rule;
  }

  #count(request: RateLimitedRequest, global: boolean, forced: boolean): void {
    this.#hits.total += 1;
    if (global) this.#hits.global += 1;
    if (forced) this.#hits.forced += 1;
    this.#hits.byRoute[request.route] = (this.#hits.byRoute[request.route] ?? 0) + 1;
  }

  #retryAfterHeader(milliseconds: number): string {
    return this.#options.retryAfterHeader === 'integer' ? String(Math.max(1, Math.ceil(milliseconds / 1000))) : seconds(milliseconds);
  }

  #bucketHeaders(bucket: BucketName, limit: number, remaining: number, resetAt: number, now: number): Record<string, string> {
    return {
      'x-ratelimit-limit': String(limit),
      'x-ratelimit-remaining': String(remaining),
      'x-ratelimit-reset': seconds(resetAt),
      'x-ratelimit-reset-after': seconds(resetAt - now),
      'x-ratelimit-bucket': bucketHash(bucket),
    };
  }

  #bucketRefusal(request: RateLimitedRequest, now: number, retryAfterMs: number, scope: 'user' | 'shared'): RateLimitVerdict {
    const limit = request.bucket === null ? 1 : this.limitOf(request.bucket).limit;
    const headers = request.bucket === null ? {} : this.#bucketHeaders(request.bucket, limit, 0, now + retryAfterMs, now);
    return {
      headers: { ...headers, 'retry-after': this.#retryAfterHeader(retryAfterMs), 'x-ratelimit-scope': scope },
      refusal: { message: 'You are being rate limited.', retry_after: Number(seconds(retryAfterMs)), global: false },
    };
  }

  #globalRefusal(retryAfterMs: number): RateLimitVerdict {
    return {
      headers: { 'retry-after': this.#retryAfterHeader(retryAfterMs), 'x-ratelimit-global': 'true', 'x-ratelimit-scope': 'global' },
      refusal: { message: 'You are being rate limited.', retry_after: Number(seconds(retryAfterMs)), global: true },
    };
  }
}

/** A stable opaque id per bucket, like Discord's `X-RateLimit-Bucket`. */
export function bucketHash(bucket: BucketName): string {
  return createHash('sha256').update(`fake-discord:${bucket}`).digest('hex').slice(0, 32);
}
