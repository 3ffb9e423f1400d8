/**
 * Channel webhooks, as personas use them: create and list per channel (MANAGE_WEBHOOKS), read and
 * delete by id (bot auth) or by id and token (no auth), execute with `username`/`avatar_url`
 * overrides, `wait` and `thread_id`, and read, edit and delete the webhook's own messages.
 * Interaction webhooks share the `/webhooks/{id}/{token}` paths; `interactions.ts` takes the
 * application's id and these routes take every other.
 */
import { createHash, randomBytes } from 'node:crypto';
import { ChannelType, GatewayIntentBits, PermissionFlagsBits } from 'discord-api-types/v10';
import { requireChannel, requirePermissions, type FakeContext } from '../context.js';
import {
  DiscordHttpError,
  invalidFormBody,
  invalidWebhookToken,
  unknownChannel,
  unknownMessage,
  unknownWebhook,
  wrongChannelType,
  type FieldProblem,
} from '../errors.js';
import { readMessageInput, type MessageInput } from '../message-input.js';
import type { RouteAnswer, RouteDefinition, RouteRequest } from '../router.js';
import { webhookObject } from '../serialize.js';
import type { ChannelRecord, MessageRecord, WebhookRecord } from '../state.js';
import { checkVoiceMessage, checkVoiceMessageEdit } from '../voice-messages.js';
import { reopenThread } from './channels.js';

/** Discord's per-channel limit on webhooks. */
export const MAX_WEBHOOKS_PER_CHANNEL = 15;
const NAME_MAX_LENGTH = 80;
const forbiddenInNames = /discord|clyde/i;
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const hashOf = (text: string): string => createHash('sha256').update(text).digest('hex').slice(0, 32);

/** Webhook names and username overrides: 1–80 characters, never containing "discord" or "clyde". */
function nameProblems(field: string, value: unknown): FieldProblem[] {
  if (typeof value !== 'string' || value.length < 1 || value.length > NAME_MAX_LENGTH) {
    return [{ path: [field], code: 'BASE_TYPE_BAD_LENGTH', message: `Must be between 1 and ${NAME_MAX_LENGTH} in length.` }];
  }
  const forbidden = forbiddenInNames.exec(value)?.[0].toLowerCase();
  if (forbidden !== undefined) {
    return [{ path: [field], code: 'USERNAME_INVALID_CONTAINS', message: `Username cannot contain "${forbidden}"` }];
  }
  return [];
}

function webhooksUpdated(context: FakeContext, webhook: WebhookRecord): void {
  context.gateway.dispatch('WEBHOOKS_UPDATE', { guild_id: webhook.guildId, channel_id: webhook.channelId }, { intents: GatewayIntentBits.GuildWebhooks });
  context.state.changed();
}

function liveWebhooks(context: FakeContext, channelId: string): WebhookRecord[] {
  return [...context.state.webhooks.values()].filter((webhook) => webhook.channelId === channelId && !webhook.deleted);
}

function createWebhook(request: RouteRequest, context: FakeContext): RouteAnswer {
  const channel = requireChannel(context, request.param('channel.id'));
  // Threads have no webhooks of their own: their parent's are executed with `thread_id`.
  if (channel.guildId === null || (channel.type !== ChannelType.GuildText && channel.type !== ChannelType.GuildAnnouncement && channel.type !== ChannelType.GuildVoice)) {
    throw wrongChannelType();
  }
  requirePermissions(context, channel, PermissionFlagsBits.ManageWebhooks);
  const body = isObject(request.body) ? request.body : {};
  const problems = nameProblems('name', body['name']);
  if (problems.length > 0) throw invalidFormBody(problems);
  if (liveWebhooks(context, channel.id).length >= MAX_WEBHOOKS_PER_CHANNEL) {
    throw new DiscordHttpError(400, { message: `Maximum number of webhooks reached (${MAX_WEBHOOKS_PER_CHANNEL})`, code: 30007 });
  }
  const webhook: WebhookRecord = {
    id: context.state.ids.next(),
    token: randomBytes(51).toString('base64url'),
    channelId: channel.id,
    guildId: channel.guildId,
    name: body['name'] as string,
    avatar: typeof body['avatar'] === 'string' ? hashOf(body['avatar']) : null,
    creatorId: context.bot.id,
    applicationId: context.applicationId,
    deleted: false,
  };
  context.state.webhooks.set(webhook.id, webhook);
  webhooksUpdated(context, webhook);
  return { status: 200, body: webhookObject(context.state, webhook, true) };
}

function listWebhooks(request: RouteRequest, context: FakeContext): RouteAnswer {
  const channel = requireChannel(context, request.param('channel.id'));
  requirePermissions(context, channel, PermissionFlagsBits.ManageWebhooks);
  return { status: 200, body: liveWebhooks(context, channel.id).map((webhook) => webhookObject(context.state, webhook, true)) };
}

/** By id with the bot's token: the bot needs MANAGE_WEBHOOKS unless its application owns the webhook. */
function webhookForBot(request: RouteRequest, context: FakeContext): WebhookRecord {
  const webhook = context.state.webhooks.get(request.param('webhook.id'));
  if (webhook === undefined || webhook.deleted) throw unknownWebhook();
  if (webhook.applicationId !== context.applicationId) requirePermissions(context, requireChannel(context, webhook.channelId), PermissionFlagsBits.ManageWebhooks);
  return webhook;
}

/** By id and token, with no Authorization header: 10015 once deleted, 50027 for a wrong token. */
function webhookForToken(request: RouteRequest, context: FakeContext): WebhookRecord {
  const webhook = context.state.webhooks.get(request.param('webhook.id'));
  if (webhook === undefined || webhook.deleted) throw unknownWebhook();
  if (webhook.token !== request.param('webhook.token')) throw invalidWebhookToken();
  return webhook;
}

function deleteWebhook(webhook: WebhookRecord, context: FakeContext): RouteAnswer {
  webhook.deleted = true;
  webhooksUpdated(context, webhook);
  return { status: 204 };
}

/** The webhook's channel, or with `thread_id` a thread of it. */
function targetChannel(request: RouteRequest, context: FakeContext, webhook: WebhookRecord): ChannelRecord {
  const threadId = request.query.get('thread_id');
  if (threadId === null) return requireChannel(context, webhook.channelId);
  const thread = context.state.channels.get(threadId);
  if (thread === undefined || thread.thread === null || thread.parentId !== webhook.channelId) throw unknownChannel();
  return thread;
}

/** Component types people act on: buttons (but link and premium ones), selects, text inputs. */
function isInteractive(component: unknown): boolean {
  if (!isObject(component)) return false;
  const { type, style } = component;
  if (type === 2) return style !== 5 && style !== 6;
  if (type === 3 || type === 4 || type === 5 || type === 6 || type === 7 || type === 8) return true;
  const children = [component['components'], component['accessory']].flat().filter((child) => child !== undefined);
  return children.some(isInteractive);
}

/**
 * Discord's rule on webhook components (execute and edit): an application-owned webhook may always
 * send them; any other webhook's `components` are ignored unless the request says
 * `with_components=true`, and even then only non-interactive ones are taken (the fake answers
 * 50035 for an interactive one; the notes do not say which error Discord gives).
 */
function applyComponentRule(request: RouteRequest, context: FakeContext, webhook: WebhookRecord, input: MessageInput): MessageInput {
  if (input.components === undefined || (webhook.applicationId !== null && webhook.applicationId === context.applicationId)) return input;
  if (request.query.get('with_components') !== 'true') {
    const { components: _ignored, ...rest } = input;
    return rest;
  }
  if (input.components.some(isInteractive)) {
    throw invalidFormBody([{ path: ['components'], code: 'COMPONENT_INTERACTIVE_NOT_ALLOWED', message: 'Only application-owned webhooks can send interactive components.' }]);
  }
  return input;
}

function execute(request: RouteRequest, context: FakeContext): RouteAnswer {
  const webhook = webhookForToken(request, context);
  const channel = targetChannel(request, context, webhook);
  const body = isObject(request.body) ? request.body : {};
  const problems: FieldProblem[] = [];
  if (body['username'] !== undefined && body['username'] !== null) problems.push(...nameProblems('username', body['username']));
  if (body['avatar_url'] !== undefined && body['avatar_url'] !== null && typeof body['avatar_url'] !== 'string') {
    problems.push({ path: ['avatar_url'], code: 'BASE_TYPE_STRING', message: 'Must be a string.' });
  }
  if (problems.length > 0) throw invalidFormBody(problems);
  const input = applyComponentRule(request, context, webhook, readMessageInput(request.body, request.files, 'create'));
  checkVoiceMessage(context, channel, input);
  reopenThread(context, channel);
  const username = typeof body['username'] === 'string' ? body['username'] : webhook.name;
  const avatarUrl = typeof body['avatar_url'] === 'string' ? body['avatar_url'] : null;
  const message = context.messages.create(channel, input, {
    authorId: webhook.id,
    webhookId: webhook.id,
    webhookAuthor: { username, avatar: avatarUrl === null ? webhook.avatar : hashOf(avatarUrl), avatarUrl },
    voiceMessageChecked: true,
  });
  return request.query.get('wait') === 'true' ? { status: 200, body: context.messages.toRest(message) } : { status: 204 };
}

/** A message this webhook sent, in its channel or the `thread_id` thread; anything else is unknown. */
function ownMessage(request: RouteRequest, context: FakeContext): MessageRecord {
  const webhook = webhookForToken(request, context);
  const channel = targetChannel(request, context, webhook);
  const message = context.state.messages.get(request.param('message.id'));
  if (message === undefined || message.deleted || message.webhookId !== webhook.id || message.channelId !== channel.id) throw unknownMessage();
  return message;
}

function editMessage(request: RouteRequest, context: FakeContext): RouteAnswer {
  const message = ownMessage(request, context);
  checkVoiceMessageEdit(message);
  const input = applyComponentRule(request, context, webhookForToken(request, context), readMessageInput(request.body, request.files, 'edit'));
  return { status: 200, body: context.messages.toRest(context.messages.edit(message, input)) };
}

const withToken = '/webhooks/{webhook.id}/{webhook.token}';

export const webhookRoutes: RouteDefinition[] = [
  { method: 'POST', path: '/channels/{channel.id}/webhooks', auth: true, bucket: 'webhook-manage', handle: createWebhook },
  { method: 'GET', path: '/channels/{channel.id}/webhooks', auth: true, bucket: 'webhook-manage', handle: listWebhooks },
  { method: 'GET', path: '/webhooks/{webhook.id}', auth: true, bucket: 'webhook-manage', handle: (request, context) => ({ status: 200, body: webhookObject(context.state, webhookForBot(request, context), true) }) },
  { method: 'DELETE', path: '/webhooks/{webhook.id}', auth: true, bucket: 'webhook-manage', handle: (request, context) => deleteWebhook(webhookForBot(request, context), context) },
  { method: 'GET', path: withToken, auth: false, bucket: 'webhook-manage', handle: (request, context) => ({ status: 200, body: webhookObject(context.state, webhookForToken(request, context), false) }) },
  { method: 'DELETE', path: withToken, auth: false, bucket: 'webhook-manage', handle: (request, context) => deleteWebhook(webhookForToken(request, context), context) },
  { method: 'POST', path: withToken, auth: false, bucket: 'webhook-execute', handle: execute },
  { method: 'GET', path: `${withToken}/messages/{message.id}`, auth: false, bucket: 'webhook-message', handle: (request, context) => ({ status: 200, body: context.messages.toRest(ownMessage(request, context)) }) },
  { method: 'PATCH', path: `${withToken}/messages/{message.id}`, auth: false, bucket: 'webhook-message', handle: editMessage },
  {
    method: 'DELETE',
    path: `${withToken}/messages/{message.id}`,
    auth: false,
    bucket: 'webhook-message',
    handle: (request, context) => {
      context.messages.delete(ownMessage(request, context));
      return { status: 204 };
    },
  },
];
