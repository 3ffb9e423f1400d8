/**
 * What every route handler and the test driver share, and the lookups that answer Discord's
 * "Unknown Channel" / "Unknown Message" / "Missing Permissions" errors the same way everywhere.
 */
import { ChannelType, PermissionFlagsBits, type APIUser } from 'discord-api-types/v10';
import { DiscordHttpError, unknownChannel, unknownMessage } from './errors.js';
import type { Dispatcher } from './gateway.js';
import type { InteractionRegistry } from './interactions.js';
import type { MessageService } from './messages.js';
import type { ShardingRules } from './sharding.js';
import { DIRECT_MESSAGE_PERMISSIONS } from './permissions.js';
import type { ChannelRecord, DiscordState, MessageRecord } from './state.js';

/** Time limits Discord enforces on interactions and webhook edits. */
export interface InteractionTimeLimits {
  /** Discord's 3 s to acknowledge an interaction; later callbacks get 10062 Unknown interaction. */
  callbackWindowMs: number;
  /** Interaction tokens work for 15 minutes; later, 50027 Invalid Webhook Token. */
  tokenLifetimeMs: number;
  /** Messages older than this cannot be edited through an interaction webhook (30046). */
  webhookEditWindowMs: number;
}

export interface FakeContext {
  state: DiscordState;
  gateway: Dispatcher;
  messages: MessageService;
  interactions: InteractionRegistry;
  bot: APIUser;
  applicationId: string;
  token: string;
  limits: InteractionTimeLimits;
  /** Recommended shard count, session start limit and identify buckets (`GET /gateway/bot`). */
  sharding: ShardingRules;
  /** `http://127.0.0.1:PORT` and friends; known once the server listens. */
  urls: { origin(): string; cdn(): string; gateway(): string };
}

export function requireChannel(context: FakeContext, channelId: string): ChannelRecord {
  const channel = context.state.channels.get(channelId);
  if (channel === undefined) throw unknownChannel();
  return channel;
}

export function requireMessage(context: FakeContext, channelId: string, messageId: string): MessageRecord {
  const message = context.state.messages.get(messageId);
  if (message === undefined || message.deleted || message.channelId !== channelId) throw unknownMessage();
  return message;
}

/** The bot's permissions in a channel; threads use their parent's. */
export function botPermissions(context: FakeContext, channel: ChannelRecord): bigint {
  if (channel.type === ChannelType.DM) return DIRECT_MESSAGE_PERMISSIONS;
  const parent = channel.thread !== null && channel.parentId !== null ? context.state.channels.get(channel.parentId) : undefined;
  return (parent ?? channel).botPermissions;
}

/** Throws 50001 Missing Access without View Channel, 50013 Missing Permissions without `needed`. */
export function requirePermissions(context: FakeContext, channel: ChannelRecord, needed: bigint): void {
  const have = botPermissions(context, channel);
  if ((have & PermissionFlagsBits.Administrator) !== 0n) return;
  if ((have & PermissionFlagsBits.ViewChannel) === 0n) throw new DiscordHttpError(403, { message: 'Missing Access', code: 50001 });
  if ((have & needed) !== needed) throw new DiscordHttpError(403, { message: 'Missing Permissions', code: 50013 });
}
