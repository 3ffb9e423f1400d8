/**
 * Thread routes: start a thread from a message or on its own, join and leave threads.
 */
import { ChannelType, PermissionFlagsBits } from 'discord-api-types/v10';
import { requireChannel, requireMessage, requirePermissions, type FakeContext } from '../context.js';
import { unknownMember, wrongChannelType } from '../errors.js';
import type { RouteAnswer, RouteDefinition, RouteRequest } from '../router.js';
import { threadWithMember } from '../serialize.js';
import { addThreadMember, createThread, removeThreadMember, threadTypeFor, type ThreadSpec } from '../threads.js';

const bodyOf = (request: RouteRequest): Record<string, unknown> =>
  typeof request.body === 'object' && request.body !== null ? (request.body as Record<string, unknown>) : {};

function specFrom(request: RouteRequest, context: FakeContext): ThreadSpec {
  const body = bodyOf(request);
  return {
    name: body['name'],
    type: body['type'],
    autoArchiveDuration: body['auto_archive_duration'],
    invitable: body['invitable'],
    rateLimitPerUser: body['rate_limit_per_user'],
    ownerId: context.bot.id,
  };
}

function startFromMessage(request: RouteRequest, context: FakeContext): RouteAnswer {
  const parent = requireChannel(context, request.param('channel.id'));
  const spec = { ...specFrom(request, context), startMessage: requireMessage(context, parent.id, request.param('message.id')) };
  requirePermissions(context, parent, PermissionFlagsBits.CreatePublicThreads);
  const thread = createThread(context, parent, spec);
  return { status: 201, body: threadWithMember(context.state, thread, context.bot.id) };
}

function startWithoutMessage(request: RouteRequest, context: FakeContext): RouteAnswer {
  const parent = requireChannel(context, request.param('channel.id'));
  const spec = specFrom(request, context);
  const type = threadTypeFor(parent, spec);
  requirePermissions(context, parent, type === ChannelType.PrivateThread ? PermissionFlagsBits.CreatePrivateThreads : PermissionFlagsBits.CreatePublicThreads);
  const thread = createThread(context, parent, spec);
  return { status: 201, body: threadWithMember(context.state, thread, context.bot.id) };
}

function join(context: FakeContext, threadId: string, userId: string): RouteAnswer {
  const thread = requireChannel(context, threadId);
  if (thread.thread === null) throw wrongChannelType();
  if (thread.guildId === null || context.state.guilds.get(thread.guildId)?.members.has(userId) !== true) throw unknownMember();
  if (userId !== context.bot.id) requirePermissions(context, thread, PermissionFlagsBits.SendMessagesInThreads);
  addThreadMember(context, thread, userId);
  return { status: 204 };
}

function leave(context: FakeContext, threadId: string, userId: string): RouteAnswer {
  const thread = requireChannel(context, threadId);
  if (thread.thread === null) throw wrongChannelType();
  if (userId !== context.bot.id) requirePermissions(context, thread, PermissionFlagsBits.ManageThreads);
  removeThreadMember(context, thread, userId);
  return { status: 204 };
}

export const threadRoutes: RouteDefinition[] = [
  { method: 'POST', path: '/channels/{channel.id}/messages/{message.id}/threads', auth: true, bucket: 'thread-create', handle: startFromMessage },
  { method: 'POST', path: '/channels/{channel.id}/threads', auth: true, bucket: 'thread-create', handle: startWithoutMessage },
  { method: 'PUT', path: '/channels/{channel.id}/thread-members/@me', auth: true, bucket: 'thread-members', handle: (request, context) => join(context, request.param('channel.id'), context.bot.id) },
  { method: 'PUT', path: '/channels/{channel.id}/thread-members/{user.id}', auth: true, bucket: 'thread-members', handle: (request, context) => join(context, request.param('channel.id'), request.param('user.id')) },
  { method: 'DELETE', path: '/channels/{channel.id}/thread-members/@me', auth: true, bucket: 'thread-members', handle: (request, context) => leave(context, request.param('channel.id'), context.bot.id) },
  { method: 'DELETE', path: '/channels/{channel.id}/thread-members/{user.id}', auth: true, bucket: 'thread-members', handle: (request, context) => leave(context, request.param('channel.id'), request.param('user.id')) },
];
