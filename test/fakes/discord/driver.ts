/**
 * Driving the fake as users would: slash commands, autocomplete, button presses, messages in
 * channels, threads and DMs. Each dispatches what Discord would dispatch and returns what the test
 * needs to follow the bot's answer.
 */
import type { APIApplicationCommandOptionChoice, APIMessage } from 'discord-api-types/v10';
import { MessageFlags } from 'discord-api-types/v10';
import type { UploadedFile } from './attachments.js';
import { requireChannel, type FakeContext } from './context.js';
import { commandInteraction, componentInteraction, modalSubmitInteraction, type CommandInvocation, type FakeFile, type ModalFields } from './interaction-payloads.js';
import type { InteractionCallbackRecord, InteractionRecord } from './interactions.js';
import { MESSAGE_LIMITS, readMessageInput } from './message-input.js';
import { openDirectMessage } from './routes/users.js';
import { messageObject } from './serialize.js';
import type { MessageRecord } from './state.js';
import { addThreadMember } from './threads.js';

/** An interaction the test sent. */
export interface SentInteraction {
  interactionId: string;
  token: string;
  /** The bot's callback; null when it did not answer within Discord's 3-second window. */
  response: Promise<InteractionCallbackRecord | null>;
}

/** A button press (component type 2) or select menu choice on a message. */
export interface ButtonPress {
  user: string | { id: string };
  /** The message's id, or the message object. */
  message: string | { id: string };
  customId: string;
  /** 2 button (default), 3 string select, 5 user select, … */
  componentType?: number;
  values?: string[];
  appPermissions?: bigint | string;
}

/** A user submitting a modal the bot showed. */
export interface ModalSubmission {
  user: string | { id: string };
  /** The interaction the bot answered with the modal (callback type 9); its layout and channel are reused. */
  modalFrom: string;
  /** Custom id → typed text, or chosen values for selects. */
  fields: ModalFields;
}

/** A message a user sends. */
export interface UserMessage {
  channelId: string;
  author: string | { id: string };
  content?: string;
  attachments?: FakeFile[];
  /** Makes the message a reply to this message id. */
  replyTo?: string;
  /** The author has Nitro, so the message may carry files up to 500 MiB instead of 10 MiB. */
  nitro?: boolean;
  /**
   * Makes it a voice message as Discord's apps record them: flag IS_VOICE_MESSAGE, no content,
   * one Ogg Opus attachment `voice-message.ogg` carrying `duration_secs` and `waveform`.
   */
  voiceMessage?: { file: Uint8Array; durationSeconds: number; waveform: string };
}

/** A message as tests see it: Discord's REST shape plus `guild_id` for guild messages. */
export type FakeMessage = APIMessage & { guild_id?: string };

const idOf = (value: string | { id: string }): string => (typeof value === 'string' ? value : value.id);

export class DiscordDriver {
  protected readonly context: FakeContext;

  constructor(context: FakeContext) {
    this.context = context;
  }

  /** Sends a chat-input INTERACTION_CREATE. */
  sendSlashCommand(invocation: CommandInvocation): SentInteraction {
    const { payload, record } = commandInteraction(this.context, invocation);
    return this.#send(payload, record);
  }

  /** Sends an autocomplete request with `focused` marked and resolves with the bot's choices. */
  async sendAutocomplete(invocation: CommandInvocation & { focused: string }): Promise<APIApplicationCommandOptionChoice[]> {
    const { payload, record } = commandInteraction(this.context, invocation, invocation.focused);
    const callback = await this.#send(payload, record).response;
    if (callback === null) throw new Error(`fake Discord: the bot did not answer autocomplete for /${invocation.name} within the callback window`);
    const data = callback.data as { choices?: APIApplicationCommandOptionChoice[] } | null;
    return data?.choices ?? [];
  }

  /** Presses a button (or picks from a select menu) on a message. */
  sendButton(press: ButtonPress): SentInteraction {
    const { payload, record } = componentInteraction(this.context, {
      user: press.user,
      messageId: idOf(press.message),
      customId: press.customId,
      ...(press.componentType === undefined ? {} : { componentType: press.componentType }),
      ...(press.values === undefined ? {} : { values: press.values }),
      ...(press.appPermissions === undefined ? {} : { appPermissions: press.appPermissions }),
    });
    return this.#send(payload, record);
  }

  /** Submits the modal the bot opened in answer to `modalFrom`. */
  submitModal(submission: ModalSubmission): SentInteraction {
    const opener = this.context.interactions.byId(submission.modalFrom);
    if (opener?.callback?.type !== 9) throw new Error(`fake Discord: interaction ${submission.modalFrom} was not answered with a modal`);
    const modal = opener.callback.data as { custom_id?: string } | null;
    const { payload, record } = modalSubmitInteraction(this.context, {
      user: submission.user,
      channelId: opener.channelId,
      customId: modal?.custom_id ?? '',
      fields: submission.fields,
      modal,
      ...(opener.sourceMessageId === null ? {} : { sourceMessageId: opener.sourceMessageId }),
    });
    return this.#send(payload, record);
  }

  /** A user's message: dispatches MESSAGE_CREATE (with `member` in guilds) and returns it. */
  sendMessage(spec: UserMessage): FakeMessage {
    const { state } = this.context;
    const channel = requireChannel(this.context, spec.channelId);
    const authorId = idOf(spec.author);
    if (state.user(authorId) === undefined) throw new Error(`fake Discord: unknown user ${authorId}`);
    if (channel.guildId !== null && state.guilds.get(channel.guildId)?.members.has(authorId) !== true) {
      throw new Error(`fake Discord: user ${authorId} is not in the guild of channel ${channel.id}`);
    }
    if (channel.guildId === null && !channel.recipientIds.includes(authorId)) {
      throw new Error(`fake Discord: user ${authorId} is not the recipient of DM ${channel.id}`);
    }
    const voice = spec.voiceMessage;
    const attachments = voice ? [{ filename: 'voice-message.ogg', contentType: 'audio/ogg', bytes: voice.file }] : (spec.attachments ?? []);
    const files: UploadedFile[] = attachments.map((file, index) => ({
      field: `files[${index}]`,
      filename: file.filename,
      contentType: file.contentType ?? 'application/octet-stream',
      bytes: Buffer.from(file.bytes),
    }));
    const body = {
      content: voice ? '' : (spec.content ?? ''),
      ...(voice
        ? { flags: MessageFlags.IsVoiceMessage, attachments: [{ id: '0', filename: 'voice-message.ogg', duration_secs: voice.durationSeconds, waveform: voice.waveform }] }
        : {}),
      ...(spec.replyTo === undefined ? {} : { message_reference: { message_id: spec.replyTo } }),
    };
    const input = readMessageInput(body, files, 'create', spec.nitro ? MESSAGE_LIMITS.nitroFileBytes : MESSAGE_LIMITS.fileBytes);
    // Talking in a thread makes you a member of it, as on Discord.
    if (channel.thread !== null) addThreadMember(this.context, channel, authorId);
    // Discord's apps make voice messages by its rules, so the flag stays.
    const message = this.context.messages.create(channel, input, { authorId, ...(voice ? { voiceMessageChecked: true } : {}) });
    return this.messageWithGuild(message);
  }

  /** The DM channel between the bot and a user (made on first use), as the user opening it would. */
  openDm(user: string | { id: string }): string {
    const userId = idOf(user);
    if (this.context.state.user(userId) === undefined) throw new Error(`fake Discord: unknown user ${userId}`);
    const channelId = openDirectMessage(this.context, userId);
    this.context.state.changed();
    return channelId;
  }

  /** The REST message shape plus `guild_id`, which tests usually want. */
  protected messageWithGuild(message: MessageRecord): FakeMessage {
    const object = messageObject(this.context.state, message);
    return message.guildId === null ? object : { ...object, guild_id: message.guildId };
  }

  #send(payload: Record<string, unknown>, record: InteractionRecord): SentInteraction {
    const response = this.context.interactions.register(record);
    this.context.gateway.dispatch('INTERACTION_CREATE', payload, { intents: 0 });
    this.context.state.changed();
    return { interactionId: record.id, token: record.token, response };
  }
}
