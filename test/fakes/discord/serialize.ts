/**
 * Discord's JSON shapes for the fake's records. Typed with discord-api-types so a shape that
 * drifts from what discord.js reads fails the type check, not a test run hours later.
 * Where REST and gateway differ (guild_id, member, channel_type) the difference is Discord's.
 */
import {
  ChannelType,
  WebhookType,
  type APIChannel,
  type APIWebhook,
  type APIGuildMember,
  type APIMessage,
  type APIRole,
  type APIThreadMember,
  type APIUser,
  type GatewayGuildCreateDispatchData,
  type GuildMemberFlags,
  type GuildSystemChannelFlags,
  type RoleFlags,
  type ThreadMemberFlags,
  type GatewayMessageCreateDispatchData,
  type APIGuildMemberNoUser,
} from 'discord-api-types/v10';
import { discordTimestamp } from './snowflake.js';
import type { ChannelRecord, DiscordState, GuildRecord, MessageRecord, WebhookRecord } from './state.js';

/** A user nobody knows about any more still needs a shape; Discord shows "Deleted User". */
function userOrPlaceholder(state: DiscordState, id: string): APIUser {
  return state.user(id) ?? { id, username: 'Deleted User', discriminator: '0', global_name: null, avatar: null };
}

export function roleObject(role: GuildRecord['roles'][number]): APIRole {
  return {
    id: role.id,
    name: role.name,
    color: 0,
    colors: { primary_color: 0, secondary_color: null, tertiary_color: null },
    hoist: false,
    icon: null,
    unicode_emoji: null,
    position: role.position,
    permissions: role.permissions,
    managed: role.managed,
    mentionable: false,
    flags: 0 as RoleFlags,
    ...(role.botId === undefined ? {} : { tags: { bot_id: role.botId } }),
  };
}

/** The member fields without `user`, as MESSAGE_CREATE carries them. */
export function memberFields(guild: GuildRecord, userId: string): APIGuildMemberNoUser | undefined {
  const membership = guild.members.get(userId);
  if (membership === undefined) return undefined;
  return {
    roles: membership.roleIds,
    joined_at: discordTimestamp(membership.joinedAt),
    premium_since: null,
    deaf: false,
    mute: false,
    flags: 0 as GuildMemberFlags,
    pending: false,
    nick: null,
    avatar: null,
    banner: null,
    communication_disabled_until: null,
  };
}

export function memberObject(state: DiscordState, guild: GuildRecord, userId: string): APIGuildMember | undefined {
  const fields = memberFields(guild, userId);
  return fields === undefined ? undefined : { ...fields, user: userOrPlaceholder(state, userId) };
}

export function threadMemberObject(threadId: string, userId: string, joinedAt: number): APIThreadMember {
  return { id: threadId, user_id: userId, join_timestamp: discordTimestamp(joinedAt), flags: 0 as ThreadMemberFlags };
}

/** A channel as REST answers it (guild channels carry `guild_id`). */
export function channelObject(state: DiscordState, channel: ChannelRecord): APIChannel {
  const base = {
    id: channel.id,
    type: channel.type,
    flags: 0,
    last_message_id: channel.lastMessageId,
    rate_limit_per_user: channel.rateLimitPerUser,
  };
  if (channel.type === ChannelType.DM) {
    return {
      ...base,
      type: ChannelType.DM,
      name: null,
      recipients: channel.recipientIds.map((id) => userOrPlaceholder(state, id)),
      last_pin_timestamp: null,
    };
  }
  const guildBase = {
    ...base,
    name: channel.name ?? '',
    guild_id: channel.guildId ?? undefined,
    parent_id: channel.parentId,
    nsfw: false,
    permission_overwrites: [],
  };
  const thread = channel.thread;
  if (thread !== null) {
    return {
      ...guildBase,
      type: channel.type as ChannelType.PublicThread | ChannelType.PrivateThread,
      parent_id: channel.parentId ?? '',
      owner_id: thread.ownerId,
      message_count: thread.messageCount,
      total_message_sent: thread.totalMessageSent,
      member_count: Math.min(thread.memberIds.size, 50),
      last_pin_timestamp: null,
      thread_metadata: {
        archived: thread.archived,
        auto_archive_duration: thread.autoArchiveDuration,
        archive_timestamp: discordTimestamp(thread.archiveTimestamp),
        locked: thread.locked,
        create_timestamp: discordTimestamp(thread.createTimestamp),
        ...(channel.type === ChannelType.PrivateThread ? { invitable: thread.invitable } : {}),
      },
    } as APIChannel;
  }
  if (channel.type === ChannelType.GuildVoice) {
    return { ...guildBase, type: ChannelType.GuildVoice, position: channel.position, bitrate: 64_000, user_limit: 0, rtc_region: null };
  }
  return {
    ...guildBase,
    type: channel.type as ChannelType.GuildText,
    position: channel.position,
    topic: channel.topic,
    default_auto_archive_duration: 4320,
    last_pin_timestamp: null,
  } as APIChannel;
}

/** A thread object with the bot's own thread membership, as thread-create answers carry it. */
export function threadWithMember(state: DiscordState, thread: ChannelRecord, memberId: string): APIChannel {
  const joinedAt = thread.thread?.memberIds.get(memberId);
  const object = channelObject(state, thread);
  return joinedAt === undefined ? object : ({ ...object, member: threadMemberObject(thread.id, memberId, joinedAt) } as APIChannel);
}

export function guildCreateObject(state: DiscordState, guild: GuildRecord, botId: string): GatewayGuildCreateDispatchData {
  const members: APIGuildMember[] = [];
  for (const userId of guild.members.keys()) {
    const member = memberObject(state, guild, userId);
    if (member !== undefined) members.push(member);
  }
  const channels: APIChannel[] = [];
  for (const channelId of guild.channelIds) {
    const channel = state.channels.get(channelId);
    if (channel !== undefined) channels.push(channelObject(state, channel));
  }
  const createdAt = guild.members.get(guild.ownerId)?.joinedAt ?? state.clock();
  return {
    id: guild.id,
    name: guild.name,
    icon: null,
    splash: null,
    discovery_splash: null,
    owner_id: guild.ownerId,
    afk_channel_id: null,
    afk_timeout: 300,
    verification_level: 0,
    default_message_notifications: 1,
    explicit_content_filter: 0,
    roles: guild.roles.map(roleObject),
    emojis: [],
    stickers: [],
    features: [],
    mfa_level: 0,
    application_id: null,
    system_channel_id: guild.channelIds[0] ?? null,
    system_channel_flags: 0 as GuildSystemChannelFlags,
    rules_channel_id: null,
    vanity_url_code: null,
    description: null,
    banner: null,
    premium_tier: 0,
    premium_subscription_count: 0,
    preferred_locale: 'en-US' as GatewayGuildCreateDispatchData['preferred_locale'],
    public_updates_channel_id: null,
    nsfw_level: 0,
    premium_progress_bar_enabled: false,
    hub_type: null,
    safety_alerts_channel_id: null,
    incidents_data: null,
    max_members: 500_000,
    max_video_channel_users: 25,
    joined_at: discordTimestamp(guild.members.get(botId)?.joinedAt ?? createdAt),
    large: false,
    unavailable: false,
    member_count: guild.members.size,
    voice_states: [],
    members,
    channels: channels as GatewayGuildCreateDispatchData['channels'],
    threads: state.activeThreads(guild.id).map((thread) => channelObject(state, thread)) as GatewayGuildCreateDispatchData['threads'],
    presences: [],
    stage_instances: [],
    guild_scheduled_events: [],
    soundboard_sounds: [],
    region: 'us-west',
  } satisfies GatewayGuildCreateDispatchData;
}

/** A channel webhook message's author: not a user, but the webhook under the name and avatar it used. */
function webhookAuthorObject(webhookId: string, author: NonNullable<MessageRecord['webhookAuthor']>): APIUser {
  return { id: webhookId, username: author.username, discriminator: '0000', global_name: null, avatar: author.avatar, bot: true };
}

/** A webhook as REST answers it; `user` (the creator) only to bot-authenticated requests, as Discord does. */
export function webhookObject(state: DiscordState, webhook: WebhookRecord, withUser: boolean): APIWebhook {
  return {
    id: webhook.id,
    type: WebhookType.Incoming,
    guild_id: webhook.guildId,
    channel_id: webhook.channelId,
    name: webhook.name,
    avatar: webhook.avatar,
    token: webhook.token,
    application_id: webhook.applicationId,
    ...(withUser ? { user: userOrPlaceholder(state, webhook.creatorId) } : {}),
  };
}

/** A message as REST answers it. Discord leaves `guild_id` out of REST message objects. */
export function messageObject(state: DiscordState, message: MessageRecord): APIMessage {
  const object: APIMessage = {
    id: message.id,
    channel_id: message.channelId,
    author: message.webhookAuthor === null ? userOrPlaceholder(state, message.authorId) : webhookAuthorObject(message.authorId, message.webhookAuthor),
    content: message.content,
    timestamp: discordTimestamp(message.createdAt),
    edited_timestamp: message.editedAt === null ? null : discordTimestamp(message.editedAt),
    tts: message.tts,
    mention_everyone: message.mentionEveryone,
    mentions: message.mentionIds.map((id) => userOrPlaceholder(state, id)),
    mention_roles: [],
    attachments: message.attachments,
    embeds: message.embeds,
    pinned: message.pinned,
    type: message.type,
    flags: message.flags,
    components: message.components as APIMessage['components'],
  };
  if (message.nonce !== null) object.nonce = message.nonce;
  if (message.webhookId !== null) {
    object.webhook_id = message.webhookId;
    // Interaction webhooks are the application; a channel webhook names the application that made it, if any.
    const webhook = state.webhooks.get(message.webhookId);
    const applicationId = webhook === undefined ? message.webhookId : webhook.applicationId;
    if (applicationId !== null) object.application_id = applicationId;
  }
  if (message.interaction !== null) {
    const user = userOrPlaceholder(state, message.interaction.userId);
    object.interaction_metadata = {
      id: message.interaction.id,
      type: message.interaction.type,
      user,
      authorizing_integration_owners: {},
    } as APIMessage['interaction_metadata'];
    object.interaction = { id: message.interaction.id, type: message.interaction.type, name: message.interaction.name, user };
  }
  if (message.referencedMessageId !== null) {
    const referenced = state.messages.get(message.referencedMessageId);
    object.message_reference = {
      type: 0,
      message_id: message.referencedMessageId,
      channel_id: message.channelId,
      ...(message.guildId === null ? {} : { guild_id: message.guildId }),
    };
    object.referenced_message = referenced === undefined || referenced.deleted ? null : messageObject(state, referenced);
  }
  if (message.threadId !== null) {
    const thread = state.channels.get(message.threadId);
    if (thread !== undefined) object.thread = channelObject(state, thread);
  }
  return object;
}

/** A message as MESSAGE_CREATE/UPDATE carries it: plus `guild_id`, `member` and `channel_type`. */
export function gatewayMessageObject(state: DiscordState, message: MessageRecord): GatewayMessageCreateDispatchData {
  const object: GatewayMessageCreateDispatchData = messageObject(state, message);
  const channel = state.channels.get(message.channelId);
  if (channel !== undefined) object.channel_type = channel.type as GatewayMessageCreateDispatchData['channel_type'];
  if (message.guildId !== null) {
    object.guild_id = message.guildId;
    const guild = state.guilds.get(message.guildId);
    const member = guild === undefined || message.webhookId !== null ? undefined : memberFields(guild, message.authorId);
    if (member !== undefined) object.member = member;
  }
  return object;
}
