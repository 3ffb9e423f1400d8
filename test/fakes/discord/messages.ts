/**
 * Creating, editing and deleting messages, shared by the channel routes, the interaction
 * webhooks and the test driver: keeps every version for `messageHistory`, updates thread
 * counters, and dispatches MESSAGE_CREATE/UPDATE/DELETE to the sessions whose intents ask.
 */
import { ChannelType, GatewayIntentBits, MessageFlags, MessageType, type APIAttachment, type APIMessage } from 'discord-api-types/v10';
import { storeAttachment } from './attachments.js';
import { emptyMessage } from './errors.js';
import type { Dispatcher } from './gateway.js';
import { isEmpty, type AttachmentInput, type MessageInput } from './message-input.js';
import { gatewayMessageObject, messageObject } from './serialize.js';
import { snowflakeTimestamp } from './snowflake.js';
import { isOgg } from './voice-messages.js';
import type { ChannelRecord, DiscordState, MessageRecord } from './state.js';

/** What a new message is besides its visible parts. */
export interface MessageOrigin {
  authorId: string;
  type?: MessageType;
  webhookId?: string;
  interaction?: MessageRecord['interaction'];
  /** Extra flags (Ephemeral, Loading) set by the interaction that made the message. */
  flags?: number;
  /** The name and avatar a channel webhook's message shows (its overrides or the webhook's own). */
  webhookAuthor?: MessageRecord['webhookAuthor'];
  /** True once `voice-messages.ts` has checked the body: only then may IS_VOICE_MESSAGE stay set. */
  voiceMessageChecked?: boolean;
}

/** Only this flag can be changed by a message edit; Discord ignores the others. */
const EDITABLE_FLAGS = MessageFlags.SuppressEmbeds;
const mentionPattern = /<@!?(\d{17,20})>/g;

export class MessageService {
  readonly #state: DiscordState;
  readonly #gateway: Dispatcher;
  readonly #cdnBase: () => string;
  readonly #botId: string;

  constructor(state: DiscordState, gateway: Dispatcher, cdnBase: () => string, botId: string) {
    this.#state = state;
    this.#gateway = gateway;
    this.#cdnBase = cdnBase;
    this.#botId = botId;
  }

  create(channel: ChannelRecord, input: MessageInput, origin: MessageOrigin): MessageRecord {
    // As on Discord, the message's timestamp is its snowflake's: storing attachments in between
    // must not set the two apart.
    const id = this.#state.ids.next();
    const now = snowflakeTimestamp(id);
    const content = input.content ?? '';
    const attachments = this.#attachments(channel.id, input.attachments ?? [], []);
    const voice = origin.voiceMessageChecked === true ? MessageFlags.IsVoiceMessage : 0;
    const flags = (input.flags ?? 0) & (EDITABLE_FLAGS | MessageFlags.SuppressNotifications | MessageFlags.IsComponentsV2 | voice);
    const message: MessageRecord = {
      id,
      channelId: channel.id,
      guildId: channel.guildId,
      authorId: origin.authorId,
      type: origin.type ?? (input.referencedMessageId === undefined ? MessageType.Default : MessageType.Reply),
      content,
      embeds: input.embeds ?? [],
      attachments,
      components: input.components ?? [],
      flags: flags | (origin.flags ?? 0),
      tts: input.tts ?? false,
      nonce: input.nonce ?? null,
      createdAt: now,
      editedAt: null,
      pinned: false,
      mentionIds: this.#mentions(content),
      mentionEveryone: /@(everyone|here)\b/.test(content),
      referencedMessageId: input.referencedMessageId ?? null,
      webhookId: origin.webhookId ?? null,
      webhookAuthor: origin.webhookAuthor ?? null,
      interaction: origin.interaction ?? null,
      threadId: null,
      deleted: false,
      versions: [],
    };
    message.versions.push(this.#version(message, 'create', now));
    this.#state.addMessage(message);
    channel.lastMessageId = message.id;
    if (channel.thread !== null) {
      channel.thread.messageCount += 1;
      channel.thread.totalMessageSent += 1;
    }
    this.#dispatch('MESSAGE_CREATE', message);
    this.#state.changed();
    return message;
  }

  /** Applies an edit; rejects one that would leave the message empty, as Discord does. */
  edit(message: MessageRecord, input: MessageInput, options: { clearLoading?: boolean } = {}): MessageRecord {
    const attachments = input.attachments === undefined ? message.attachments : this.#attachments(message.channelId, input.attachments, message.attachments);
    const content = input.content ?? message.content;
    const embeds = input.embeds ?? message.embeds;
    const components = input.components ?? message.components;
    if (isEmpty({ content, embeds, attachments, components })) throw emptyMessage();
    const now = this.#state.clock();
    message.content = content;
    message.embeds = embeds;
    message.components = components;
    message.attachments = attachments;
    message.mentionIds = this.#mentions(content);
    if (input.flags !== undefined) message.flags = (message.flags & ~EDITABLE_FLAGS) | (input.flags & EDITABLE_FLAGS);
    if (options.clearLoading === true) message.flags &= ~MessageFlags.Loading;
    message.editedAt = now;
    message.versions.push(this.#version(message, 'edit', now));
    this.#dispatch('MESSAGE_UPDATE', message);
    this.#state.changed();
    return message;
  }

  delete(message: MessageRecord): void {
    message.deleted = true;
    if ((message.flags & MessageFlags.Ephemeral) === 0) {
      const data = { id: message.id, channel_id: message.channelId, ...(message.guildId === null ? {} : { guild_id: message.guildId }) };
      this.#gateway.dispatch('MESSAGE_DELETE', data, { intents: this.#intentFor(message) });
    }
    this.#state.changed();
  }

  /** The REST answer for a message. */
  toRest(message: MessageRecord): APIMessage {
    return messageObject(this.#state, message);
  }

  #attachments(channelId: string, inputs: AttachmentInput[], existing: APIAttachment[]): APIAttachment[] {
    const result: APIAttachment[] = [];
    for (const input of inputs) {
      if (input.kind === 'keep') {
        const kept = existing.find((attachment) => attachment.id === input.id);
        if (kept !== undefined) result.push(kept);
        continue;
      }
      const file = { bytes: input.file.bytes, filename: input.filename, contentType: input.file.contentType };
      const stored = storeAttachment(this.#state, this.#cdnBase(), channelId, file, input.description);
      if (input.voice !== undefined && isOgg(stored.content_type)) stored.content_type = 'audio/ogg';
      if (input.voice?.durationSecs !== undefined) stored.duration_secs = input.voice.durationSecs;
      if (input.voice?.waveform !== undefined) stored.waveform = input.voice.waveform;
      result.push(stored);
    }
    return result;
  }

  #mentions(content: string): string[] {
    const ids = new Set<string>();
    for (const match of content.matchAll(mentionPattern)) {
      if (match[1] !== undefined && this.#state.users.has(match[1])) ids.add(match[1]);
    }
    return [...ids];
  }

  #version(message: MessageRecord, kind: 'create' | 'edit', timestamp: number): MessageRecord['versions'][number] {
    return {
      kind,
      content: message.content,
      embeds: message.embeds,
      attachmentIds: message.attachments.map((attachment) => attachment.id),
      flags: message.flags,
      timestamp,
    };
  }

  #intentFor(message: MessageRecord): number {
    return message.guildId === null ? GatewayIntentBits.DirectMessages : GatewayIntentBits.GuildMessages;
  }

  #dispatch(event: 'MESSAGE_CREATE' | 'MESSAGE_UPDATE', message: MessageRecord): void {
    // Ephemeral messages only exist for the user who ran the interaction; no gateway event.
    if ((message.flags & MessageFlags.Ephemeral) !== 0) return;
    const data = gatewayMessageObject(this.#state, message);
    const channel = this.#state.channels.get(message.channelId);
    const visibleWithoutIntent =
      channel?.type === ChannelType.DM || message.authorId === this.#botId || message.mentionIds.includes(this.#botId);
    const withoutContent = visibleWithoutIntent ? undefined : { ...data, content: '', embeds: [], attachments: [], components: [] };
    this.#gateway.dispatch(event, data, { intents: this.#intentFor(message), ...(withoutContent === undefined ? {} : { withoutContent }) });
  }
}
