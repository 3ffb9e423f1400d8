import type { Channel, Message } from 'discord.js';
import type { AvatarUrls } from '../../avatar-urls.js';
import { adminActor } from '../../core/actor.js';
import type { Core } from '../../core/core.js';
import { AppError } from '../../core/errors.js';
import type { Logger } from '../../core/ports.js';
import type { CharacterRecord } from '../../core/records.js';
import { webhookKeyPrefix } from '../pacing/channel-pacer.js';
import { labelOf } from '../replies/in-place-reply.js';
import { replyChannelOf } from '../replies/reply-channel.js';
import { discordMessageLimit } from '../replies/split-message.js';
import { MessageUneditableError, type ReplyChannel } from '../replies/streaming-reply.js';
import type { Persona, WebhookLease, WebhookPersonas } from './webhook-personas.js';

export interface PersonaRepliesOptions {
  core: Core;
  personas: WebhookPersonas;
  /** Builds avatar URLs; without it, or with a base Discord cannot reach, personas have no picture. */
  avatars: AvatarUrls | undefined;
  logger: Logger;
}

/**
 * Where a character's replies go: in server channels and threads under its own name and picture
 * through the channel's webhook, in DMs (which have no webhooks) as the bot. Front ends ask
 * `channelFor` for the writer's channel and never choose themselves.
 */
export class PersonaReplies {
  readonly #core: Core;
  readonly #personas: WebhookPersonas;
  readonly #avatars: AvatarUrls | undefined;
  readonly #logger: Logger;

  constructor(options: PersonaRepliesOptions) {
    this.#core = options.core;
    this.#personas = options.personas;
    this.#logger = options.logger;
    // Discord fetches `avatar_url` itself: a loopback or private base would only show a broken picture.
    this.#avatars = options.avatars?.isPublic() ? options.avatars : undefined;
    if (options.avatars && !this.#avatars) {
      this.#logger.info({}, 'PUBLIC_BASE_URL is not reachable from the internet: personas post without a picture');
    }
  }

  /**
   * The streaming writer's channel for `character`'s reply in `channel`. With `several` (a
   * scene, a channel of several characters) a reply the bot has to post itself starts with the
   * character's name, so people still see who speaks.
   */
  channelFor(channel: Channel, character: CharacterRecord, options: { several?: boolean } = {}): ReplyChannel {
    if (channel.isDMBased()) return replyChannelOf(channel);
    const persona = { name: character.name, avatarUrl: this.#avatars?.urlOf(character) ?? null };
    return personaReplyChannel(this.#personas, channel, persona, this.#logger, { labelAsBot: options.several === true });
  }

  /** The same for a character of a conversation: `characterId` if present, else the one the conversation is with. */
  async channelForConversation(channel: Channel, conversationId: string, characterId?: string): Promise<ReplyChannel> {
    if (channel.isDMBased()) return replyChannelOf(channel);
    const conversation = await this.#core.conversations.get(adminActor, conversationId);
    // A writer who has left the scene since: the conversation's own character, as the core does.
    const present = characterId !== undefined && conversation.characterIds.includes(characterId) ? characterId : undefined;
    return this.channelFor(channel, await this.#core.conversations.answerer(conversation, present), { several: conversation.characterIds.length > 1 });
  }

  /**
   * Replaces the text of a message a character's reply posted earlier (a part of a reply now
   * swiped), as it was posted: through the persona's webhook, or as the bot keeping the name it
   * starts with. `MessageUneditableError` when the message is gone or can no longer be edited.
   */
  async editPosted(channel: Channel, messageId: string, content: string): Promise<void> {
    if (!channel.isTextBased()) throw new MessageUneditableError('This channel has no messages to edit.');
    const message = await channel.messages.fetch(messageId).catch((error: unknown) => {
      throw new MessageUneditableError('That character message is gone.', { cause: error });
    });
    if (message.webhookId) return this.#personas.editPosted(channel.id, message.webhookId, messageId, content);
    await channel.messages.edit(messageId, { content: labelOf(message) + content, allowedMentions: { parse: [] } }).catch((error: unknown) => {
      throw new MessageUneditableError('That character message can no longer be edited.', { cause: error });
    });
  }

  /** True for messages the bot's own personas posted, which the bot must never answer. */
  isOwnPersonaMessage(message: Pick<Message, 'webhookId' | 'applicationId'>): boolean {
    return this.#personas.isOwnPersonaMessage(message);
  }
}

/**
 * A persona as the streaming writer's channel. Where personas cannot work (no Manage Webhooks,
 * 15 webhooks already), the reply goes out as the bot, after the explanation the channel gets
 * once. A permission granted later takes effect with the next reply after Discord tells of
 * the change (or within a minute; see `WebhookPersonas`). Each message is edited the way it was sent.
 *
 * Personas are an enhancement: when Discord fails the webhook itself (a 5xx after discord.js's
 * own retries, a timeout) the rest of the reply goes out as the bot, a persona message that
 * can no longer be edited keeping the words it shows. Nothing is remembered of such a failure:
 * the next reply tries the persona again.
 */
export function personaReplyChannel(personas: WebhookPersonas, channel: Channel, persona: Persona, logger: Logger, options: { labelAsBot?: boolean } = {}): ReplyChannel {
  const bot = replyChannelOf(channel);
  // Where several characters speak, a reply the bot posts for one starts with its name.
  const label = options.labelAsBot ? `**${persona.name.replace(/[*_`~|\\]/g, '')}:** ` : '';
  const asBot: ReplyChannel = label === '' ? bot : { ...bot, send: (content, rows) => bot.send(label + content, rows), edit: (messageId, content, rows) => bot.edit(messageId, label + content, rows) };
  // The webhook this reply posts through (leased at its first message), and the messages it sent.
  let lease: WebhookLease | undefined;
  const personaMessages = new Set<string>();
  let fellBack = false;
  return {
    id: channel.id,
    ...(label === '' ? {} : { maxLength: discordMessageLimit - label.length }),
    sendTyping: () => asBot.sendTyping(),
    // Persona edits count against the webhook's bucket, not the channel's; the bot's against the channel's.
    // Before the first message, its webhook is not chosen yet, but its post goes without the token all the same.
    pacingKey: () => (fellBack ? undefined : (lease?.pacingKey ?? `${webhookKeyPrefix}opening:${channel.id}`)),
    async send(content, rows) {
      if (!fellBack) {
        const result = await personas.send(channel.id, persona, content, lease, rows).catch((error: unknown) => {
          logger.warn({ err: error, channelId: channel.id }, 'Discord failed a persona post; the bot posts the rest of this reply');
          return null;
        });
        if (result?.kind === 'sent') {
          personaMessages.add(result.messageId);
          lease = result.lease;
          return result.messageId;
        }
        fellBack = true;
        // Only a lasting reason is explained; a failure of Discord's is nothing people can act on.
        const explanation = result === null ? null : await personas.explanationOnce(channel.id, result.reason);
        if (explanation !== null) {
          await bot.send(explanation).catch((error: unknown) => logger.warn({ err: error, channelId: channel.id }, 'could not say how to enable personas'));
        }
      }
      return asBot.send(content, rows);
    },
    async edit(messageId, content, rows) {
      if (!lease || !personaMessages.has(messageId)) return asBot.edit(messageId, content, rows);
      try {
        await personas.edit(channel.id, lease, messageId, content, rows);
      } catch (error) {
        // A deleted webhook (the reply goes on through another) or a deleted message: as they are.
        if (error instanceof MessageUneditableError || error instanceof AppError) throw error;
        fellBack = true;
        logger.warn({ err: error, channelId: channel.id, messageId }, 'Discord failed a persona edit; the bot posts the rest of this reply');
        throw new MessageUneditableError('Discord failed to edit the character message.', { cause: error });
      }
    },
    release: () => {
      if (lease) personas.release(lease);
    },
  };
}
