/**
 * Channel routes: read and edit channels, send, read, edit and delete messages, typing.
 * Bot-authenticated; buckets per channel.
 */
import { ChannelType, MessageFlags, PermissionFlagsBits } from 'discord-api-types/v10';
import { requireChannel, requireMessage, requirePermissions, type FakeContext } from '../context.js';
import { DiscordHttpError, editOthersMessage, invalidFormBody, threadArchived, unknownMessage } from '../errors.js';
import { readMessageInput } from '../message-input.js';
import type { RouteAnswer, RouteDefinition, RouteRequest } from '../router.js';
import { channelObject } from '../serialize.js';
import { isTextBased, type ChannelRecord } from '../state.js';
import { addThreadMember, channelUpdated } from '../threads.js';
import { checkVoiceMessage, checkVoiceMessageEdit } from '../voice-messages.js';

const cannotSendHere = (): DiscordHttpError => new DiscordHttpError(400, { message: 'Cannot send messages in a non-text channel', code: 50008 });
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;

function sendMessage(request: RouteRequest, context: FakeContext): RouteAnswer {
  const channel = requireChannel(context, request.param('channel.id'));
  if (!isTextBased(channel.type)) throw cannotSendHere();
  const needed = channel.thread === null ? PermissionFlagsBits.SendMessages : PermissionFlagsBits.SendMessagesInThreads;
  requirePermissions(context, channel, request.files.length > 0 ? needed | PermissionFlagsBits.AttachFiles : needed);
  reopenThread(context, channel);
  const input = readMessageInput(request.body, request.files, 'create');
  checkVoiceMessage(context, channel, input);
  // Talking in a thread makes the bot a member of it, as on Discord.
  if (channel.thread !== null) addThreadMember(context, channel, context.bot.id);
  if (input.referencedMessageId !== undefined) {
    const referenced = context.state.messages.get(input.referencedMessageId);
    if (referenced === undefined || referenced.deleted || referenced.channelId !== channel.id) {
      throw invalidFormBody([{ path: ['message_reference'], code: 'MESSAGE_REFERENCE_UNKNOWN_MESSAGE', message: 'Unknown message' }]);
    }
  }
  const message = context.messages.create(channel, input, { authorId: context.bot.id, voiceMessageChecked: true });
  return { status: 200, body: context.messages.toRest(message) };
}

/** Sending in an archived thread unarchives it, unless it is locked. */
export function reopenThread(context: FakeContext, channel: ChannelRecord): void {
  if (channel.thread === null || !channel.thread.archived) return;
  if (channel.thread.locked) throw threadArchived();
  channel.thread.archived = false;
  channel.thread.archiveTimestamp = context.state.clock();
  channelUpdated(context, channel);
}

function listMessages(request: RouteRequest, context: FakeContext): RouteAnswer {
  const channel = requireChannel(context, request.param('channel.id'));
  requirePermissions(context, channel, PermissionFlagsBits.ReadMessageHistory);
  const limit = Number(request.query.get('limit') ?? 50);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
    throw invalidFormBody([{ path: ['limit'], code: 'NUMBER_TYPE_MAX', message: 'int value should be less than or equal to 100.' }]);
  }
  const visible = context.state.channelMessages(channel.id).filter((message) => (message.flags & MessageFlags.Ephemeral) === 0);
  const before = request.query.get('before');
  const after = request.query.get('after');
  const around = request.query.get('around');
  const newer = (id: string, than: string): boolean => BigInt(id) > BigInt(than);
  let chosen = visible;
  if (before !== null) chosen = visible.filter((message) => newer(before, message.id)).slice(-limit);
  else if (after !== null) chosen = visible.filter((message) => newer(message.id, after)).slice(0, limit);
  else if (around !== null) {
    const index = visible.findIndex((message) => !newer(around, message.id));
    const start = Math.max(0, (index === -1 ? visible.length : index) - Math.floor(limit / 2));
    chosen = visible.slice(start, start + limit);
  } else chosen = visible.slice(-limit);
  // Discord answers newest first.
  return { status: 200, body: chosen.reverse().map((message) => context.messages.toRest(message)) };
}

function readMessage(request: RouteRequest, context: FakeContext): RouteAnswer {
  const channel = requireChannel(context, request.param('channel.id'));
  requirePermissions(context, channel, PermissionFlagsBits.ReadMessageHistory);
  const message = requireMessage(context, channel.id, request.param('message.id'));
  if ((message.flags & MessageFlags.Ephemeral) !== 0) throw unknownMessage();
  return { status: 200, body: context.messages.toRest(message) };
}

function editMessage(request: RouteRequest, context: FakeContext): RouteAnswer {
  const channel = requireChannel(context, request.param('channel.id'));
  const message = requireMessage(context, channel.id, request.param('message.id'));
  if ((message.flags & MessageFlags.Ephemeral) !== 0) throw unknownMessage();
  if (message.authorId !== context.bot.id) throw editOthersMessage();
  checkVoiceMessageEdit(message);
  const input = readMessageInput(request.body, request.files, 'edit');
  return { status: 200, body: context.messages.toRest(context.messages.edit(message, input)) };
}

function deleteMessage(request: RouteRequest, context: FakeContext): RouteAnswer {
  const channel = requireChannel(context, request.param('channel.id'));
  const message = requireMessage(context, channel.id, request.param('message.id'));
  if ((message.flags & MessageFlags.Ephemeral) !== 0) throw unknownMessage();
  if (message.authorId !== context.bot.id && channel.type !== ChannelType.DM) requirePermissions(context, channel, PermissionFlagsBits.ManageMessages);
  context.messages.delete(message);
  return { status: 204 };
}

function typing(request: RouteRequest, context: FakeContext): RouteAnswer {
  const channel = requireChannel(context, request.param('channel.id'));
  if (!isTextBased(channel.type)) throw cannotSendHere();
  requirePermissions(context, channel, channel.thread === null ? PermissionFlagsBits.SendMessages : PermissionFlagsBits.SendMessagesInThreads);
  let events = context.state.typing.get(channel.id);
  if (events === undefined) {
    events = [];
    context.state.typing.set(channel.id, events);
  }
  events.push(context.state.clock());
  context.state.changed();
  return { status: 204 };
}

function editChannel(request: RouteRequest, context: FakeContext): RouteAnswer {
  const channel = requireChannel(context, request.param('channel.id'));
  const body = isObject(request.body) ? request.body : {};
  const thread = channel.thread;
  // Threads may be renamed and archived by their owner or with Manage Threads; channels need Manage Channels.
  if (thread === null) requirePermissions(context, channel, PermissionFlagsBits.ManageChannels);
  else if (thread.ownerId !== context.bot.id) requirePermissions(context, channel, PermissionFlagsBits.ManageThreads);
  if (body['name'] !== undefined) {
    if (typeof body['name'] !== 'string' || body['name'].length < 1 || body['name'].length > 100) {
      throw invalidFormBody([{ path: ['name'], code: 'BASE_TYPE_BAD_LENGTH', message: 'Must be between 1 and 100 in length.' }]);
    }
    channel.name = body['name'];
  }
  if (typeof body['topic'] === 'string' && thread === null) channel.topic = body['topic'];
  if (thread !== null) {
    if (typeof body['archived'] === 'boolean' && body['archived'] !== thread.archived) {
      thread.archived = body['archived'];
      thread.archiveTimestamp = context.state.clock();
    }
    if (typeof body['locked'] === 'boolean') thread.locked = body['locked'];
    if (body['auto_archive_duration'] === 60 || body['auto_archive_duration'] === 1440 || body['auto_archive_duration'] === 4320 || body['auto_archive_duration'] === 10080) {
      thread.autoArchiveDuration = body['auto_archive_duration'];
    }
  }
  channelUpdated(context, channel);
  return { status: 200, body: channelObject(context.state, channel) };
}

export const channelRoutes: RouteDefinition[] = [
  { method: 'GET', path: '/channels/{channel.id}', auth: true, bucket: 'channel-read', handle: (request, context) => ({ status: 200, body: channelObject(context.state, requireChannel(context, request.param('channel.id'))) }) },
  { method: 'PATCH', path: '/channels/{channel.id}', auth: true, bucket: 'channel-edit', handle: editChannel },
  { method: 'POST', path: '/channels/{channel.id}/messages', auth: true, bucket: 'message-create', handle: sendMessage },
  { method: 'GET', path: '/channels/{channel.id}/messages', auth: true, bucket: 'message-read', handle: listMessages },
  { method: 'GET', path: '/channels/{channel.id}/messages/{message.id}', auth: true, bucket: 'message-read', handle: readMessage },
  { method: 'PATCH', path: '/channels/{channel.id}/messages/{message.id}', auth: true, bucket: 'message-edit', handle: editMessage },
  { method: 'DELETE', path: '/channels/{channel.id}/messages/{message.id}', auth: true, bucket: 'message-delete', handle: deleteMessage },
  { method: 'POST', path: '/channels/{channel.id}/typing', auth: true, bucket: 'typing', handle: typing },
];
