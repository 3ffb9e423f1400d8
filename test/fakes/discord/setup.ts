/**
 * Making the fake's world: the bot user, guilds with their roles and channels, users (members of
 * every guild unless told otherwise) and text channels added while a client is connected, with
 * the gateway events Discord would send for them.
 */
import { createHash, randomBytes } from 'node:crypto';
import { ChannelType, GatewayIntentBits, type APIChannel, type APIUser, type UserFlags } from 'discord-api-types/v10';
import type { FakeContext } from './context.js';
import { DEFAULT_BOT_PERMISSIONS, DEFAULT_MEMBER_PERMISSIONS } from './permissions.js';
import { channelObject, memberObject } from './serialize.js';
import type { DiscordState, GuildRecord } from './state.js';

/** A guild to create; defaults: one text channel `general`, one voice channel `General`. */
export interface GuildSpec {
  name?: string;
  /** The guild's snowflake, e.g. from `guildIdForShard(shard, count)` to place it on a shard; default a new one. */
  id?: string;
  textChannels?: string[];
  voiceChannels?: string[];
}

/** A guild as tests see it. */
export interface FakeGuild {
  id: string;
  name: string;
  ownerId: string;
  /** The first text channel (`general` by default). */
  textChannelId: string;
  /** The first voice channel, or null when the spec has none. */
  voiceChannelId: string | null;
  /** Channel name → id for the channels made with the guild. */
  channelIds: Record<string, string>;
}

/** What `createUser` takes. */
export interface UserSpec {
  username: string;
  globalName?: string;
  /** Avatar bytes (served from the fake CDN) or a ready-made avatar hash. */
  avatar?: { bytes: Uint8Array; contentType?: string } | string;
  bot?: boolean;
  /** Guilds the user joins; default every guild. */
  guildIds?: string[];
}

/** A bot token shaped like Discord's: base64 of the user id, a timestamp part, an HMAC part. */
export function makeToken(botId: string): string {
  return `${Buffer.from(botId).toString('base64url')}.${randomBytes(4).toString('base64url')}.${randomBytes(27).toString('base64url')}`;
}

export function makeUser(state: DiscordState, spec: UserSpec): APIUser {
  const id = state.ids.next();
  let avatar: string | null = null;
  let avatarBytes = null;
  if (typeof spec.avatar === 'string') {
    avatar = spec.avatar;
  } else if (spec.avatar !== undefined) {
    const bytes = Buffer.from(spec.avatar.bytes);
    const contentType = spec.avatar.contentType ?? 'image/png';
    // Discord prefixes animated avatar hashes with `a_`; discord.js then asks for `.gif`.
    avatar = `${contentType === 'image/gif' ? 'a_' : ''}${createHash('md5').update(bytes).digest('hex')}`;
    avatarBytes = { bytes, contentType };
  }
  const user: APIUser = {
    id,
    username: spec.username,
    discriminator: '0',
    global_name: spec.globalName ?? null,
    avatar,
    ...(spec.bot === true ? { bot: true } : {}),
    public_flags: 0 as UserFlags,
    flags: 0 as UserFlags,
    banner: null,
    accent_color: null,
    avatar_decoration_data: null,
  };
  state.addUser(user, avatarBytes);
  return user;
}

export function makeGuild(state: DiscordState, spec: GuildSpec, index: number, botId: string, ownerId: string): FakeGuild {
  const id = spec.id ?? state.ids.next();
  const now = state.clock();
  const botRoleId = state.ids.next();
  const guild: GuildRecord = {
    id,
    name: spec.name ?? `Fake Guild ${index + 1}`,
    ownerId,
    roles: [
      { id, name: '@everyone', permissions: DEFAULT_MEMBER_PERMISSIONS.toString(), position: 0, managed: false },
      { id: botRoleId, name: 'FakeBot', permissions: DEFAULT_BOT_PERMISSIONS.toString(), position: 1, managed: true, botId },
    ],
    members: new Map([
      [ownerId, { joinedAt: now, roleIds: [] }],
      [botId, { joinedAt: now, roleIds: [botRoleId] }],
    ]),
    channelIds: [],
  };
  state.guilds.set(id, guild);
  const channelIds: Record<string, string> = {};
  const textChannels = spec.textChannels ?? ['general'];
  const voiceChannels = spec.voiceChannels ?? ['General'];
  textChannels.forEach((name, position) => {
    channelIds[name] = state.addChannel({ id: state.ids.next(), type: ChannelType.GuildText, name, guildId: id, position, botPermissions: DEFAULT_BOT_PERMISSIONS }).id;
  });
  voiceChannels.forEach((name, position) => {
    channelIds[name] = state.addChannel({ id: state.ids.next(), type: ChannelType.GuildVoice, name, guildId: id, position, botPermissions: DEFAULT_BOT_PERMISSIONS }).id;
  });
  const textChannelId = textChannels[0] === undefined ? undefined : channelIds[textChannels[0]];
  if (textChannelId === undefined) throw new Error('fake Discord: a guild needs at least one text channel');
  const voiceChannelId = voiceChannels[0] === undefined ? null : (channelIds[voiceChannels[0]] ?? null);
  return { id, name: guild.name, ownerId, textChannelId, voiceChannelId, channelIds };
}

/** Makes a user a member of a guild and tells sessions with the GuildMembers intent. */
export function joinGuild(context: FakeContext, guild: GuildRecord, userId: string): void {
  if (guild.members.has(userId)) return;
  guild.members.set(userId, { joinedAt: context.state.clock(), roleIds: [] });
  const member = memberObject(context.state, guild, userId);
  context.gateway.dispatch('GUILD_MEMBER_ADD', { ...member, guild_id: guild.id }, { intents: GatewayIntentBits.GuildMembers });
}

/** Adds a text channel to a guild and dispatches CHANNEL_CREATE. */
export function addTextChannel(context: FakeContext, guildId: string, name: string): APIChannel {
  const guild = context.state.guilds.get(guildId);
  if (guild === undefined) throw new Error(`fake Discord: unknown guild ${guildId}`);
  const channel = context.state.addChannel({
    id: context.state.ids.next(),
    type: ChannelType.GuildText,
    name,
    guildId,
    position: guild.channelIds.length,
    botPermissions: DEFAULT_BOT_PERMISSIONS,
  });
  const object = channelObject(context.state, channel);
  context.gateway.dispatch('CHANNEL_CREATE', object, { intents: GatewayIntentBits.Guilds });
  context.state.changed();
  return object;
}
