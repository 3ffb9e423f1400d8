/**
 * User and guild routes: the bot's own user, other users, opening DMs, and the guild reads a bot
 * does (the guild, its channels, a member, active threads).
 */
import { ChannelType } from 'discord-api-types/v10';
import type { FakeContext } from '../context.js';
import { invalidFormBody, unknownGuild, unknownMember, unknownUser } from '../errors.js';
import type { RouteAnswer, RouteDefinition, RouteRequest } from '../router.js';
import { channelObject, guildCreateObject, memberObject, threadMemberObject } from '../serialize.js';
import type { GuildRecord } from '../state.js';

/** The DM channel with a user, made on first use; Discord answers the same channel every time. */
export function openDirectMessage(context: FakeContext, userId: string): string {
  const existing = context.state.directMessageChannels.get(userId);
  if (existing !== undefined) return existing;
  const channel = context.state.addChannel({ id: context.state.ids.next(), type: ChannelType.DM, recipientIds: [userId] });
  context.state.directMessageChannels.set(userId, channel.id);
  return channel.id;
}

function createDirectMessage(request: RouteRequest, context: FakeContext): RouteAnswer {
  const body = typeof request.body === 'object' && request.body !== null ? (request.body as Record<string, unknown>) : {};
  const recipientId = body['recipient_id'];
  if (typeof recipientId !== 'string') {
    throw invalidFormBody([{ path: ['recipient_id'], code: 'BASE_TYPE_REQUIRED', message: 'This field is required' }]);
  }
  if (context.state.user(recipientId) === undefined) throw unknownUser();
  const channelId = openDirectMessage(context, recipientId);
  context.state.changed();
  return { status: 200, body: channelObject(context.state, context.state.channels.get(channelId)!) };
}

function botGuild(request: RouteRequest, context: FakeContext): GuildRecord {
  const guild = context.state.guilds.get(request.param('guild.id'));
  if (guild === undefined || !guild.members.has(context.bot.id)) throw unknownGuild();
  return guild;
}

function readGuild(request: RouteRequest, context: FakeContext): RouteAnswer {
  const full = guildCreateObject(context.state, botGuild(request, context), context.bot.id) as unknown as Record<string, unknown>;
  // The REST guild has none of GUILD_CREATE's gateway-only fields.
  for (const field of ['joined_at', 'large', 'unavailable', 'member_count', 'voice_states', 'members', 'channels', 'threads', 'presences', 'stage_instances', 'guild_scheduled_events', 'soundboard_sounds']) {
    delete full[field];
  }
  return { status: 200, body: full };
}

function readMember(request: RouteRequest, context: FakeContext): RouteAnswer {
  const member = memberObject(context.state, botGuild(request, context), request.param('user.id'));
  if (member === undefined) throw unknownMember();
  return { status: 200, body: member };
}

function activeThreads(request: RouteRequest, context: FakeContext): RouteAnswer {
  const guild = botGuild(request, context);
  const threads = context.state.activeThreads(guild.id);
  const members = threads.flatMap((thread) => {
    const joinedAt = thread.thread?.memberIds.get(context.bot.id);
    return joinedAt === undefined ? [] : [threadMemberObject(thread.id, context.bot.id, joinedAt)];
  });
  return { status: 200, body: { threads: threads.map((thread) => channelObject(context.state, thread)), members } };
}

export const userRoutes: RouteDefinition[] = [
  { method: 'GET', path: '/users/@me', auth: true, bucket: 'user-read', handle: (_request, context) => ({ status: 200, body: { ...context.bot, verified: true, mfa_enabled: false, flags: 0, locale: 'en-US' } }) },
  {
    method: 'GET',
    path: '/users/{user.id}',
    auth: true,
    bucket: 'user-read',
    handle: (request, context) => {
      const user = context.state.user(request.param('user.id'));
      if (user === undefined) throw unknownUser();
      return { status: 200, body: user };
    },
  },
  { method: 'POST', path: '/users/@me/channels', auth: true, bucket: 'dm-create', handle: createDirectMessage },
  { method: 'GET', path: '/guilds/{guild.id}', auth: true, bucket: 'guild-read', handle: readGuild },
  {
    method: 'GET',
    path: '/guilds/{guild.id}/channels',
    auth: true,
    bucket: 'guild-read',
    handle: (request, context) => ({
      status: 200,
      body: botGuild(request, context).channelIds.flatMap((id) => {
        const channel = context.state.channels.get(id);
        return channel === undefined ? [] : [channelObject(context.state, channel)];
      }),
    }),
  },
  { method: 'GET', path: '/guilds/{guild.id}/members/{user.id}', auth: true, bucket: 'guild-read', handle: readMember },
  { method: 'GET', path: '/guilds/{guild.id}/threads/active', auth: true, bucket: 'guild-read', handle: activeThreads },
];
