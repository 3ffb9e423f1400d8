import type { Client } from 'discord.js';

/** The shard that receives a guild's events, as Discord assigns them; DMs (no guild) arrive on shard 0. */
export function shardOf(guildId: string | null, shardCount: number): number {
  if (guildId === null) return 0;
  return Number((BigInt(guildId) >> 22n) % BigInt(shardCount));
}

/**
 * Whether this client holds the shard of `guildId`: where several processes each hold some of
 * the bot's shards, work for a guild is done by the one process that receives its events.
 */
export function holdsShardOf(client: Client, guildId: string | null): boolean {
  const { shards, shardCount } = client.options;
  // 'auto': this one client holds every shard.
  if (!Array.isArray(shards) || shardCount === undefined || shardCount <= 1) return true;
  return shards.includes(shardOf(guildId, shardCount));
}

/**
 * The part of the bot token's shared budgets (such as the global REST limit) this client may
 * use: the shards it holds out of all of them. Discord spreads guilds over shards by id, so
 * with many guilds each shard carries about the same load, and equal parts need no talk
 * between processes.
 */
export function shareOfShards(client: Client): number {
  const { shards, shardCount } = client.options;
  if (!Array.isArray(shards) || shardCount === undefined || shardCount <= 1) return 1;
  return Math.min(1, shards.length / shardCount);
}
