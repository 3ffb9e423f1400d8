/**
 * Interaction routes, which carry no Authorization header: the callback that acknowledges an
 * interaction within 3 seconds, and the interaction webhook (`@original`, follow-ups) that works
 * for 15 minutes. Enforces Discord's rules: one callback per interaction, callback types that fit
 * the interaction, and no webhook edits of messages older than an hour (30046).
 */
import { InteractionResponseType, InteractionType, MessageFlags, MessageType } from 'discord-api-types/v10';
import { requireChannel, type FakeContext } from '../context.js';
import {
  alreadyAcknowledged,
  invalidFormBody,
  invalidWebhookToken,
  oldMessageEditLimit,
  tooLong,
  unknownInteraction,
  unknownMessage,
  unknownWebhook,
  type FieldProblem,
} from '../errors.js';
import type { InteractionRecord } from '../interactions.js';
import { readMessageInput } from '../message-input.js';
import type { MessageOrigin } from '../messages.js';
import type { RouteAnswer, RouteDefinition, RouteRequest } from '../router.js';
import type { MessageRecord } from '../state.js';

type JsonObject = Record<string, unknown>;
const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Which callback types fit which interaction types, per Discord's documentation. */
const allowedCallbacks: Record<number, number[]> = {
  [InteractionType.ApplicationCommand]: [4, 5, 9],
  [InteractionType.MessageComponent]: [4, 5, 6, 7, 9],
  [InteractionType.ApplicationCommandAutocomplete]: [8],
  [InteractionType.ModalSubmit]: [4, 5, 6, 7],
};

function wrongType(): never {
  throw invalidFormBody([{ path: ['type'], code: 'INTERACTION_RESPONSE_TYPE_INVALID', message: 'Interaction response type is not valid for this interaction.' }]);
}

function origin(context: FakeContext, interaction: InteractionRecord, flags: number): MessageOrigin {
  return {
    authorId: context.bot.id,
    type: interaction.type === InteractionType.ApplicationCommand ? MessageType.ChatInputCommand : MessageType.Default,
    webhookId: context.applicationId,
    interaction: { id: interaction.id, type: interaction.type, name: interaction.commandName, userId: interaction.userId },
    flags,
  };
}

function validateChoices(data: JsonObject): void {
  const choices = Array.isArray(data['choices']) ? data['choices'] : [];
  const problems: FieldProblem[] = [];
  if (choices.length > 25) problems.push(tooLong(['choices'], 25));
  choices.forEach((choice: unknown, index) => {
    const name = isObject(choice) ? choice['name'] : undefined;
    if (typeof name !== 'string' || name.length < 1 || name.length > 100) {
      problems.push({ path: ['choices', index, 'name'], code: 'BASE_TYPE_BAD_LENGTH', message: 'Must be between 1 and 100 in length.' });
    }
  });
  if (problems.length > 0) throw invalidFormBody(problems);
}

function callback(request: RouteRequest, context: FakeContext): RouteAnswer {
  const interaction = context.interactions.byId(request.param('interaction.id'));
  if (interaction === undefined || interaction.token !== request.param('interaction.token')) throw unknownInteraction();
  if (interaction.callback !== null) throw alreadyAcknowledged();
  const now = context.state.clock();
  if (now - interaction.createdAt > context.limits.callbackWindowMs) throw unknownInteraction();
  const body = isObject(request.body) ? request.body : {};
  const type = body['type'];
  const data = isObject(body['data']) ? body['data'] : {};
  if (typeof type !== 'number' || !(allowedCallbacks[interaction.type] ?? []).includes(type)) wrongType();
  const flags = typeof data['flags'] === 'number' ? data['flags'] & MessageFlags.Ephemeral : 0;
  let message: MessageRecord | null = null;
  const channel = requireChannel(context, interaction.channelId);
  switch (type) {
    case InteractionResponseType.ChannelMessageWithSource:
      message = context.messages.create(channel, readMessageInput(data, request.files, 'create'), origin(context, interaction, flags));
      interaction.originalMessageId = message.id;
      break;
    case InteractionResponseType.DeferredChannelMessageWithSource:
      message = context.messages.create(channel, { hasStickersOrPoll: false }, origin(context, interaction, flags | MessageFlags.Loading));
      interaction.originalMessageId = message.id;
      break;
    case InteractionResponseType.DeferredMessageUpdate:
      interaction.originalMessageId = interaction.sourceMessageId;
      break;
    case InteractionResponseType.UpdateMessage: {
      const source = interaction.sourceMessageId === null ? undefined : context.state.messages.get(interaction.sourceMessageId);
      if (source === undefined || source.deleted) throw unknownMessage();
      message = context.messages.edit(source, readMessageInput(data, request.files, 'edit'));
      interaction.originalMessageId = source.id;
      break;
    }
    case InteractionResponseType.ApplicationCommandAutocompleteResult:
      validateChoices(data);
      break;
    default:
      break;
  }
  context.interactions.acknowledge(interaction, { type, data: body['data'] ?? null, messageId: message?.id ?? null, timestamp: now });
  context.state.changed();
  if (request.query.get('with_response') !== 'true') return { status: 204 };
  return {
    status: 200,
    body: {
      interaction: {
        id: interaction.id,
        type: interaction.type,
        ...(message === null
          ? {}
          : {
              response_message_id: message.id,
              response_message_loading: (message.flags & MessageFlags.Loading) !== 0,
              response_message_ephemeral: (message.flags & MessageFlags.Ephemeral) !== 0,
            }),
      },
      resource: { type, ...(message === null ? {} : { message: context.messages.toRest(message) }) },
    },
  };
}

/** The interaction behind a webhook path, checking the application id and the 15-minute lifetime. */
function webhookInteraction(request: RouteRequest, context: FakeContext): InteractionRecord {
  const interaction = context.interactions.byToken(request.param('interaction.token'));
  if (interaction === undefined || interaction.applicationId !== request.param('application.id')) throw unknownWebhook();
  if (context.state.clock() > interaction.tokenExpiresAt) throw invalidWebhookToken();
  return interaction;
}

/** `@original` or one of this interaction's follow-ups; anything else is unknown to this webhook. */
function webhookMessage(context: FakeContext, interaction: InteractionRecord, messageId: string): MessageRecord {
  const id = messageId === '@original' ? interaction.originalMessageId : messageId;
  const isOwn = id !== null && (id === interaction.originalMessageId || interaction.followupIds.has(id));
  const message = isOwn ? context.state.messages.get(id) : undefined;
  if (message === undefined || message.deleted) throw unknownMessage();
  return message;
}

function readWebhookMessage(request: RouteRequest, context: FakeContext): RouteAnswer {
  const interaction = webhookInteraction(request, context);
  return { status: 200, body: context.messages.toRest(webhookMessage(context, interaction, request.param('message.id', '@original'))) };
}

function editWebhookMessage(request: RouteRequest, context: FakeContext): RouteAnswer {
  const interaction = webhookInteraction(request, context);
  const messageId = request.param('message.id', '@original');
  const message = webhookMessage(context, interaction, messageId);
  const now = context.state.clock();
  if (now - message.createdAt > context.limits.webhookEditWindowMs) throw oldMessageEditLimit();
  context.messages.edit(message, readMessageInput(request.body, request.files, 'edit'), { clearLoading: true });
  const kind = messageId === '@original' || message.id === interaction.originalMessageId ? 'original-edit' : 'followup-edit';
  context.interactions.addResponse(interaction, { kind, callbackType: null, body: request.body, messageId: message.id, timestamp: now });
  return { status: 200, body: context.messages.toRest(message) };
}

function deleteWebhookMessage(request: RouteRequest, context: FakeContext): RouteAnswer {
  const interaction = webhookInteraction(request, context);
  const messageId = request.param('message.id', '@original');
  const message = webhookMessage(context, interaction, messageId);
  context.messages.delete(message);
  const kind = message.id === interaction.originalMessageId ? 'original-delete' : 'followup-delete';
  context.interactions.addResponse(interaction, { kind, callbackType: null, body: null, messageId: message.id, timestamp: context.state.clock() });
  return { status: 204 };
}

function followUp(request: RouteRequest, context: FakeContext): RouteAnswer {
  const interaction = webhookInteraction(request, context);
  if (interaction.callback === null || interaction.type === InteractionType.ApplicationCommandAutocomplete) throw unknownWebhook();
  const input = readMessageInput(request.body, request.files, 'create');
  const now = context.state.clock();
  const original = interaction.originalMessageId === null ? undefined : context.state.messages.get(interaction.originalMessageId);
  let message: MessageRecord;
  if (interaction.callback.type === 5 && original !== undefined && !original.deleted && (original.flags & MessageFlags.Loading) !== 0) {
    // Discord: a follow-up right after a deferred reply edits the loading message instead,
    // keeping the defer's ephemeral flag.
    message = context.messages.edit(original, input, { clearLoading: true });
  } else {
    const channel = requireChannel(context, interaction.channelId);
    const flags = (input.flags ?? 0) & MessageFlags.Ephemeral;
    message = context.messages.create(channel, input, origin(context, interaction, flags));
    interaction.followupIds.add(message.id);
  }
  context.interactions.addResponse(interaction, { kind: 'followup', callbackType: null, body: request.body, messageId: message.id, timestamp: now });
  return request.query.get('wait') === 'true' ? { status: 200, body: context.messages.toRest(message) } : { status: 204 };
}

const webhookMessagePath = '/webhooks/{application.id}/{interaction.token}/messages';
/** Interaction webhooks answer only for the application's id; other ids are channel webhooks (`webhooks.ts`). */
const isInteractionWebhook = (params: Map<string, string>, context: FakeContext): boolean => params.get('application.id') === context.applicationId;

export const interactionRoutes: RouteDefinition[] = [
  { method: 'POST', path: '/interactions/{interaction.id}/{interaction.token}/callback', auth: false, bucket: null, handle: callback },
  { method: 'POST', path: '/webhooks/{application.id}/{interaction.token}', auth: false, bucket: 'interaction-webhook', accepts: isInteractionWebhook, handle: followUp },
  ...(['@original', '{message.id}'] as const).flatMap((last): RouteDefinition[] => [
    { method: 'GET', path: `${webhookMessagePath}/${last}`, auth: false, bucket: 'interaction-webhook', accepts: isInteractionWebhook, handle: readWebhookMessage },
    { method: 'PATCH', path: `${webhookMessagePath}/${last}`, auth: false, bucket: 'interaction-webhook', accepts: isInteractionWebhook, handle: editWebhookMessage },
    { method: 'DELETE', path: `${webhookMessagePath}/${last}`, auth: false, bucket: 'interaction-webhook', accepts: isInteractionWebhook, handle: deleteWebhookMessage },
  ]),
];
