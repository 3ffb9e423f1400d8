/**
 * INTERACTION_CREATE payloads with every field discord.js reads (see the wire notes): chat-input
 * commands, autocomplete and message components, in guilds (`member`) or DMs (`user`), with
 * `resolved` data for user, channel, role and attachment options. Option types come from the
 * registered command when there is one, else from the JavaScript type of the value.
 */
import { randomBytes } from 'node:crypto';
import {
  ApplicationCommandOptionType,
  InteractionType,
  type APIApplicationCommand,
  type APIApplicationCommandOption,
  type APIAttachment,
} from 'discord-api-types/v10';
import { storeAttachment } from './attachments.js';
import { findComponent } from './components.js';
import { botPermissions, requireChannel, type FakeContext } from './context.js';
import type { InteractionRecord } from './interactions.js';
import { ALL_PERMISSIONS, DEFAULT_MEMBER_PERMISSIONS } from './permissions.js';
import { channelObject, memberFields, messageObject, roleObject } from './serialize.js';
import type { ChannelRecord } from './state.js';

/** A file given as an attachment option or message attachment. */
export interface FakeFile {
  filename: string;
  contentType?: string;
  bytes: Uint8Array;
}

/** An option value: user/channel/role options take the id as a string; attachments take a file. */
export type SlashOptionValue = string | number | boolean | FakeFile;

/** Who runs a chat-input command or autocomplete, where, and with what. */
export interface CommandInvocation {
  /** The user's id, or the user object from `createUser`. */
  user: string | { id: string };
  channelId: string;
  /** Defaults to the channel's guild; omit for DMs. */
  guildId?: string;
  name: string;
  subcommandGroup?: string;
  subcommand?: string;
  options?: Record<string, SlashOptionValue>;
  locale?: string;
  /** The bot's permissions as the interaction reports them; defaults to the channel's. */
  appPermissions?: bigint | string;
}

type JsonObject = Record<string, unknown>;
type Resolved = { users?: JsonObject; members?: JsonObject; channels?: JsonObject; roles?: JsonObject; attachments?: Record<string, APIAttachment> };

const userIdOf = (user: string | { id: string }): string => (typeof user === 'string' ? user : user.id);
const isFile = (value: SlashOptionValue): value is FakeFile => typeof value === 'object';

/** The registered command this invocation names: guild commands first, then global ones. */
export function findCommand(context: FakeContext, guildId: string | null, name: string): APIApplicationCommand | undefined {
  const guildCommands = guildId === null ? [] : (context.state.guildCommands.get(guildId) ?? []);
  return guildCommands.find((command) => command.name === name) ?? context.state.globalCommands.find((command) => command.name === name);
}

function inferType(value: SlashOptionValue): ApplicationCommandOptionType {
  if (isFile(value)) return ApplicationCommandOptionType.Attachment;
  if (typeof value === 'boolean') return ApplicationCommandOptionType.Boolean;
  if (typeof value === 'number') return Number.isInteger(value) ? ApplicationCommandOptionType.Integer : ApplicationCommandOptionType.Number;
  return ApplicationCommandOptionType.String;
}

/** The owner has every permission; anyone else the defaults and what their roles grant. */
function memberPermissions(context: FakeContext, guildId: string, userId: string): bigint {
  const guild = context.state.guilds.get(guildId);
  if (guild?.ownerId === userId) return ALL_PERMISSIONS;
  const roleIds = new Set(guild?.members.get(userId)?.roleIds ?? []);
  return (guild?.roles ?? []).filter((role) => roleIds.has(role.id)).reduce((granted, role) => granted | BigInt(role.permissions), DEFAULT_MEMBER_PERMISSIONS);
}

/** The interaction-shaped member: member fields, `user`, and the member's `permissions`. */
function interactionMember(context: FakeContext, guildId: string, userId: string): JsonObject | undefined {
  const guild = context.state.guilds.get(guildId);
  const fields = guild === undefined ? undefined : memberFields(guild, userId);
  if (fields === undefined) return undefined;
  return { ...fields, user: context.state.user(userId), permissions: memberPermissions(context, guildId, userId).toString() };
}

function resolveValue(context: FakeContext, channel: ChannelRecord, type: ApplicationCommandOptionType, value: SlashOptionValue, resolved: Resolved): unknown {
  if (isFile(value)) {
    const attachment = storeAttachment(context.state, context.urls.cdn(), channel.id, {
      bytes: Buffer.from(value.bytes),
      filename: value.filename,
      contentType: value.contentType ?? 'application/octet-stream',
    });
    attachment.ephemeral = true;
    (resolved.attachments ??= {})[attachment.id] = attachment;
    return attachment.id;
  }
  const id = String(value);
  if (type === ApplicationCommandOptionType.User || type === ApplicationCommandOptionType.Mentionable) {
    const user = context.state.user(id);
    if (user !== undefined) {
      (resolved.users ??= {})[id] = user;
      const guild = channel.guildId === null ? undefined : context.state.guilds.get(channel.guildId);
      const member = guild === undefined ? undefined : memberFields(guild, id);
      if (guild !== undefined && member !== undefined) {
        (resolved.members ??= {})[id] = { ...member, permissions: memberPermissions(context, guild.id, id).toString() };
      }
    }
  }
  if (type === ApplicationCommandOptionType.Role || type === ApplicationCommandOptionType.Mentionable) {
    const role = channel.guildId === null ? undefined : context.state.guilds.get(channel.guildId)?.roles.find((candidate) => candidate.id === id);
    if (role !== undefined) (resolved.roles ??= {})[id] = roleObject(role);
  }
  if (type === ApplicationCommandOptionType.Channel) {
    const target = context.state.channels.get(id);
    if (target !== undefined) (resolved.channels ??= {})[id] = { ...channelObject(context.state, target), permissions: botPermissions(context, target).toString() };
  }
  return value;
}

function buildOptions(
  context: FakeContext,
  channel: ChannelRecord,
  invocation: CommandInvocation,
  definitions: APIApplicationCommandOption[] | undefined,
  focused: string | null,
  resolved: Resolved,
): JsonObject[] {
  let leafDefinitions = definitions;
  const wrap: Array<{ name: string; type: ApplicationCommandOptionType }> = [];
  if (invocation.subcommandGroup !== undefined) {
    const group = leafDefinitions?.find((option) => option.name === invocation.subcommandGroup);
    leafDefinitions = group !== undefined && 'options' in group ? (group.options as APIApplicationCommandOption[] | undefined) : undefined;
    wrap.push({ name: invocation.subcommandGroup, type: ApplicationCommandOptionType.SubcommandGroup });
  }
  if (invocation.subcommand !== undefined) {
    const subcommand = leafDefinitions?.find((option) => option.name === invocation.subcommand);
    leafDefinitions = subcommand !== undefined && 'options' in subcommand ? (subcommand.options as APIApplicationCommandOption[] | undefined) : undefined;
    wrap.push({ name: invocation.subcommand, type: ApplicationCommandOptionType.Subcommand });
  }
  let options: JsonObject[] = Object.entries(invocation.options ?? {}).map(([name, value]) => {
    const type = leafDefinitions?.find((option) => option.name === name)?.type ?? inferType(value);
    // Autocomplete sends what the user has typed so far, which is always text.
    const isFocused = name === focused;
    const sent = isFocused ? String(value) : resolveValue(context, channel, type, value, resolved);
    return { name, type, value: sent, ...(isFocused ? { focused: true } : {}) };
  });
  for (const level of wrap.reverse()) options = [{ name: level.name, type: level.type, options }];
  return options;
}

/** The parts every interaction shares: ids, token, who, where, permissions. */
function baseInteraction(context: FakeContext, channel: ChannelRecord, userId: string, type: InteractionType, appPermissions?: bigint | string): { payload: JsonObject; record: InteractionRecord } {
  const user = context.state.user(userId);
  if (user === undefined) throw new Error(`fake Discord: unknown user ${userId}; make one with createUser`);
  const id = context.state.ids.next();
  const token = `aW50ZXJhY3Rpb246${id}:${randomBytes(48).toString('base64url')}`;
  const guildId = channel.guildId;
  const payload: JsonObject = {
    id,
    application_id: context.applicationId,
    type,
    token,
    version: 1,
    channel: { ...channelObject(context.state, channel), permissions: (guildId === null ? ALL_PERMISSIONS : memberPermissions(context, guildId, userId)).toString() },
    channel_id: channel.id,
    app_permissions: (appPermissions ?? botPermissions(context, channel)).toString(),
    locale: 'en-US',
    entitlements: [],
    authorizing_integration_owners: { '0': guildId ?? '0' },
    context: guildId === null ? 1 : 0,
    attachment_size_limit: 10 * 1024 * 1024,
  };
  if (guildId !== null) {
    const member = interactionMember(context, guildId, userId);
    if (member === undefined) throw new Error(`fake Discord: user ${userId} is not a member of guild ${guildId}`);
    payload['guild_id'] = guildId;
    payload['guild'] = { id: guildId, locale: 'en-US', features: [] };
    payload['guild_locale'] = 'en-US';
    payload['member'] = member;
  } else {
    payload['user'] = user;
  }
  const record: InteractionRecord = {
    id,
    token,
    type,
    applicationId: context.applicationId,
    guildId,
    channelId: channel.id,
    userId,
    commandName: '',
    createdAt: context.state.clock(),
    tokenExpiresAt: context.state.clock() + context.limits.tokenLifetimeMs,
    callback: null,
    originalMessageId: null,
    sourceMessageId: null,
    followupIds: new Set(),
    responses: [],
  };
  return { payload, record };
}

/** A chat-input command (type 2) or, with `focused`, an autocomplete request (type 4). */
export function commandInteraction(context: FakeContext, invocation: CommandInvocation, focused: string | null = null): { payload: JsonObject; record: InteractionRecord } {
  const channel = requireChannel(context, invocation.channelId);
  if (invocation.guildId !== undefined && invocation.guildId !== channel.guildId) {
    throw new Error(`fake Discord: channel ${channel.id} is not in guild ${invocation.guildId}`);
  }
  const type = focused === null ? InteractionType.ApplicationCommand : InteractionType.ApplicationCommandAutocomplete;
  const { payload, record } = baseInteraction(context, channel, userIdOf(invocation.user), type, invocation.appPermissions);
  const command = findCommand(context, channel.guildId, invocation.name);
  const resolved: Resolved = {};
  const options = buildOptions(context, channel, invocation, command?.options, focused, resolved);
  payload['data'] = {
    id: command?.id ?? context.state.ids.next(),
    name: invocation.name,
    type: 1,
    options,
    ...(Object.keys(resolved).length > 0 ? { resolved } : {}),
    ...(command?.guild_id === undefined ? {} : { guild_id: command.guild_id }),
  };
  if (invocation.locale !== undefined) payload['locale'] = invocation.locale;
  record.commandName = invocation.name;
  return { payload, record };
}

/** A message component interaction (type 3): a button (component type 2) or a select menu. */
export function componentInteraction(
  context: FakeContext,
  spec: { user: string | { id: string }; messageId: string; customId: string; componentType?: number; values?: string[]; appPermissions?: bigint | string },
): { payload: JsonObject; record: InteractionRecord } {
  const message = context.state.messages.get(spec.messageId);
  if (message === undefined || message.deleted) throw new Error(`fake Discord: unknown message ${spec.messageId}`);
  // A user can only press what the message shows, and not a disabled button.
  const component = findComponent(message.components, spec.customId);
  if (component === undefined) throw new Error(`fake Discord: message ${spec.messageId} has no component with custom id "${spec.customId}"`);
  if (component['disabled'] === true) throw new Error(`fake Discord: the component "${spec.customId}" on message ${spec.messageId} is disabled`);
  const channel = requireChannel(context, message.channelId);
  const { payload, record } = baseInteraction(context, channel, userIdOf(spec.user), InteractionType.MessageComponent, spec.appPermissions);
  const componentType = spec.componentType ?? 2;
  payload['message'] = messageObject(context.state, message);
  payload['data'] = { custom_id: spec.customId, component_type: componentType, ...(componentType === 2 ? {} : { values: spec.values ?? [] }) };
  record.sourceMessageId = message.id;
  record.commandName = message.interaction?.name ?? '';
  return { payload, record };
}


/** What a user typed or picked in a modal: custom id → text, or the values of a select. */
export type ModalFields = Record<string, string | string[]>;

/** Mirrors the modal's layout (action rows or labels) with the user's answers filled in. */
function modalAnswers(components: unknown, fields: ModalFields): JsonObject[] {
  if (!Array.isArray(components)) return [];
  return components.flatMap((component: unknown): JsonObject[] => {
    if (typeof component !== 'object' || component === null) return [];
    const raw = component as JsonObject;
    const base = { type: raw['type'], ...(raw['id'] === undefined ? {} : { id: raw['id'] }) };
    if (Array.isArray(raw['components'])) return [{ ...base, components: modalAnswers(raw['components'], fields) }];
    if (raw['component'] !== undefined) return [{ ...base, component: modalAnswers([raw['component']], fields)[0] }];
    const customId = raw['custom_id'];
    if (typeof customId !== 'string') return [base];
    const answer = fields[customId];
    return [Array.isArray(answer) ? { ...base, custom_id: customId, values: answer } : { ...base, custom_id: customId, value: answer ?? '' }];
  });
}

/**
 * A modal submission (type 5). With `modal` (the bot's type 9 callback data) the answer has the
 * modal's layout; without it, each field comes back in its own action row with a text input.
 */
export function modalSubmitInteraction(
  context: FakeContext,
  spec: { user: string | { id: string }; channelId: string; customId: string; fields: ModalFields; modal?: unknown; sourceMessageId?: string },
): { payload: JsonObject; record: InteractionRecord } {
  const channel = requireChannel(context, spec.channelId);
  const { payload, record } = baseInteraction(context, channel, userIdOf(spec.user), InteractionType.ModalSubmit);
  const layout =
    typeof spec.modal === 'object' && spec.modal !== null && Array.isArray((spec.modal as JsonObject)['components'])
      ? (spec.modal as JsonObject)['components']
      : Object.keys(spec.fields).map((customId) => ({ type: 1, components: [{ type: 4, custom_id: customId }] }));
  payload['data'] = { custom_id: spec.customId, components: modalAnswers(layout, spec.fields) };
  const source = spec.sourceMessageId === undefined ? undefined : context.state.messages.get(spec.sourceMessageId);
  if (source !== undefined) {
    payload['message'] = messageObject(context.state, source);
    record.sourceMessageId = source.id;
  }
  return { payload, record };
}
