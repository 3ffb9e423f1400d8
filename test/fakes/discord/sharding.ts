/**
 * Sharding as Discord does it (shared/notes/discord-wire.md, "Sharding"): a guild belongs to shard
 * `(guild_id >> 22) % num_shards`, DMs arrive on shard 0, `GET /gateway/bot` recommends a shard
 * count and reports the session start limit, and identifies are taken in buckets of
 * `max_concurrency` (bucket = `shard_id % max_concurrency`) every 5 s.
 */
import { DISCORD_EPOCH } from './snowflake.js';

/** How the fake shards; every field has Discord's default. */
export interface ShardingOptions {
  /** `shards` in `GET /gateway/bot`; default 1. */
  recommendedShards?: number;
  /** Guilds one session may hold before identify is refused with 4011 Sharding required; Discord's 2,500. */
  maxGuildsPerShard?: number;
  /** Session starts allowed per `resetAfterMs`; Discord's 1,000 a day. */
  sessionStartTotal?: number;
  /** When `remaining` is refilled to `total`, counted from the first identify; default 24 h. */
  sessionStartResetAfterMs?: number;
  /** Identifies per bucket per `identifyBucketMs`; default 1. */
  maxConcurrency?: number;
  /** The identify bucket's period; Discord's 5 s. Shorter makes tests of refusals faster. */
  identifyBucketMs?: number;
}

/** `shard: [id, count]` as sent in identify. */
export type ShardKey = readonly [id: number, count: number];

/** Why an identify is refused: a close code, or op 9 Invalid Session (not resumable). */
export type IdentifyRefusal = { close: number; reason: string } | { invalidSession: true; reason: string };

/** Counts of what the sharding rules did, for tests. */
export interface ShardingStats {
  /** Identifies refused because their bucket was used within `identifyBucketMs`. */
  concurrencyRefusals: number;
  /** Identifies refused because `remaining` was 0. */
  sessionLimitRefusals: number;
  /** Accepted identifies by shard id. */
  identifiesByShard: Record<number, number>;
  /** Accepted identifies in order, with their real time (epoch ms). */
  identifies: Array<{ shard: ShardKey; at: number }>;
}

/** The shard that receives a guild's events. */
export function shardOf(guildId: string, shardCount: number): number {
  return Number((BigInt(guildId) >> 22n) % BigInt(shardCount));
}

/**
 * A bucket's period starts when its identify arrives, but discord.js starts its own 5 s wait just
 * before sending; without this allowance a client that waited exactly 5 s could be refused by the
 * few milliseconds of the trip. Discord's exact tolerance is unknown.
 */
const IDENTIFY_GRACE_MS = 250;

let guildIdIncrement = 0;

/**
 * A fresh snowflake owned by `shard` of `count`: its timestamp part is now, nudged forward by at
 * most `count - 1` ms so that `(id >> 22) % count === shard`. Pass it as `GuildSpec.id`.
 */
export function guildIdForShard(shard: number, count: number): string {
  if (!Number.isInteger(count) || count < 1 || !Number.isInteger(shard) || shard < 0 || shard >= count) {
    throw new Error(`fake Discord: no shard ${shard} of ${count}`);
  }
  const milliseconds = BigInt(Date.now() - DISCORD_EPOCH);
  const nudge = (BigInt(shard) - (milliseconds % BigInt(count)) + BigInt(count)) % BigInt(count);
  guildIdIncrement = (guildIdIncrement + 1) & 0xfff;
  return (((milliseconds + nudge) << 22n) | (2n << 17n) | BigInt(guildIdIncrement)).toString();
}

/** Reads `shard` from identify: absent means `[0, 1]`; anything but two integers with 0 ≤ id < count is invalid. */
export function parseShard(value: unknown): ShardKey | null {
  if (value === undefined || value === null) return [0, 1];
  if (!Array.isArray(value) || value.length !== 2) return null;
  const [id, count] = value as unknown[];
  if (typeof id !== 'number' || typeof count !== 'number' || !Number.isInteger(id) || !Number.isInteger(count)) return null;
  if (count < 1 || id < 0 || id >= count) return null;
  return [id, count];
}

/** Session start accounting and identify buckets, shared by every connection with the bot's token. */
export class ShardingRules {
  readonly recommendedShards: number;
  readonly maxGuildsPerShard: number;
  readonly maxConcurrency: number;
  readonly identifyBucketMs: number;
  readonly #total: number;
  readonly #resetAfterMs: number;
  readonly #now: () => number;
  #remaining: number;
  #resetAt: number | null = null;
  /** Bucket → when its current period ends, and identifies taken in it. */
  readonly #buckets = new Map<number, { endsAt: number; taken: number }>();
  readonly #stats: ShardingStats = { concurrencyRefusals: 0, sessionLimitRefusals: 0, identifiesByShard: {}, identifies: [] };

  constructor(options: ShardingOptions = {}, now: () => number = Date.now) {
    this.recommendedShards = options.recommendedShards ?? 1;
    this.maxGuildsPerShard = options.maxGuildsPerShard ?? 2500;
    this.maxConcurrency = options.maxConcurrency ?? 1;
    this.identifyBucketMs = options.identifyBucketMs ?? 5000;
    this.#total = options.sessionStartTotal ?? 1000;
    this.#resetAfterMs = options.sessionStartResetAfterMs ?? 24 * 60 * 60_000;
    this.#remaining = this.#total;
    this.#now = now;
  }

  get stats(): ShardingStats {
    return { ...this.#stats, identifiesByShard: { ...this.#stats.identifiesByShard }, identifies: [...this.#stats.identifies] };
  }

  /** `GET /gateway/bot`'s `session_start_limit`. */
  sessionStartLimit(): { total: number; remaining: number; reset_after: number; max_concurrency: number } {
    this.#refill();
    const resetAfter = this.#resetAt === null ? 0 : Math.max(0, this.#resetAt - this.#now());
    return { total: this.#total, remaining: this.#remaining, reset_after: resetAfter, max_concurrency: this.maxConcurrency };
  }

  /**
   * Admits an identify or says why not. Order follows what a client can fix: a bad shard (4010)
   * and too many guilds (4011) close the socket; a spent start limit or a busy bucket answer op 9.
   */
  admit(shard: ShardKey, guildsOnShard: number): IdentifyRefusal | null {
    if (guildsOnShard > this.maxGuildsPerShard) return { close: 4011, reason: 'Sharding required.' };
    this.#refill();
    if (this.#remaining <= 0) {
      this.#stats.sessionLimitRefusals += 1;
      return { invalidSession: true, reason: 'session start limit reached' };
    }
    const now = this.#now();
    const key = shard[0] % this.maxConcurrency;
    let bucket = this.#buckets.get(key);
    if (bucket === undefined || now >= bucket.endsAt) {
      bucket = { endsAt: now + Math.max(0, this.identifyBucketMs - IDENTIFY_GRACE_MS), taken: 0 };
      this.#buckets.set(key, bucket);
    }
    if (bucket.taken >= 1) {
      this.#stats.concurrencyRefusals += 1;
      return { invalidSession: true, reason: `identify bucket ${key} busy` };
    }
    bucket.taken += 1;
    this.#remaining -= 1;
    this.#resetAt ??= now + this.#resetAfterMs;
    this.#stats.identifiesByShard[shard[0]] = (this.#stats.identifiesByShard[shard[0]] ?? 0) + 1;
    this.#stats.identifies.push({ shard, at: now });
    return null;
  }

  #refill(): void {
    if (this.#resetAt !== null && this.#now() >= this.#resetAt) {
      this.#remaining = this.#total;
      this.#resetAt = null;
    }
  }
}
