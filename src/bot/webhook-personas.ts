/**
 * Characters posting as themselves: one channel webhook per parent channel ("Likeness"), found
 * among the channel's webhooks or made once, and executed with the character's `username` and
 * `avatar_url` (`thread_id` for threads, which have no webhooks of their own). The webhook's id
 * and token are cached per process; a cache of something people can delete, so a 10015 Unknown
 * Webhook re-creates it once and retries. Without Manage Webhooks (50013) the caller is told to
 * fall back to posting as the bot, and is handed the explanation once per channel; the failure is
 * remembered for a minute, or until a channel or role changes (`permissionsChanged`).
 */
import {
  type APIActionRowComponent,
  type APIButtonComponent,
  ChannelType,
  DiscordAPIError,
  RESTJSONErrorCodes,
  type Client,
  type Message,
  type Webhook,
  type WebhookMessageEditOptions,
} from 'discord.js';
import { AppError } from '../core/errors.js';
import type { Logger } from '../core/ports.js';
import { webhookBucket } from './job-deliveries.js';

/** Who a message appears to come from. */
export interface Persona {
  name: string;
  /** Fetched by Discord whenever the message is shown: public and not expiring (see the notes). */
  avatarUrl?: string | null;
}

/** Why a channel cannot have personas; the caller posts as the bot instead. */
export type PersonaFallbackReason = 'missing-permission' | 'webhook-limit' | 'unsupported-channel';

export type PersonaSendResult =
  /** `pacingKey`: the pacer's key for the webhook's rate-limit bucket, which every thread of its channel shares. */
  | { kind: 'sent'; messageId: string; webhookId: string; pacingKey: string }
  | { kind: 'fallback'; reason: PersonaFallbackReason };

export interface WebhookPersonasOptions {
  client: Client;
  logger: Logger;
  /** The name of the bot's webhook in each channel. */
  webhookName?: string;
  /**
   * How long a channel where personas failed (no permission, 15 webhooks) is posted to as the
   * bot without asking Discord again (default 60 s); `permissionsChanged()` ends it sooner.
   */
  fallbackMemoryMs?: number;
  now?: () => number;
}

/** Discord's rule for webhook usernames: 1–80 characters, never containing these. */
const FORBIDDEN_IN_NAMES = /discord|clyde/gi;
const NAME_MAX_LENGTH = 80;

/**
 * A character name Discord accepts as a webhook `username`: "discord" and "clyde" removed in any
 * case (repeatedly, as removing one can join another), whitespace collapsed, at most 80 characters.
 */
export function sanitizePersonaName(name: string, fallback = 'Character'): string {
  let cleaned = name;
  for (let previous = ''; previous !== cleaned; ) {
    previous = cleaned;
    cleaned = cleaned.replace(FORBIDDEN_IN_NAMES, '');
  }
  cleaned = cleaned.replace(/\s+/g, ' ').trim();
  const characters = [...cleaned];
  while (characters.join('').length > NAME_MAX_LENGTH) characters.pop();
  cleaned = characters.join('').trim();
  return cleaned === '' ? fallback : cleaned;
}

/** What to tell a channel once when personas are off there. */
export function explainFallback(reason: PersonaFallbackReason): string {
  switch (reason) {
    case 'missing-permission':
      return 'Characters can post here under their own name and picture if I have the **Manage Webhooks** permission in this channel (Server Settings → Roles, or the channel’s Permissions). Until then I answer as myself.';
    case 'webhook-limit':
      return 'This channel already has 15 webhooks, Discord’s limit, so characters answer through me. Delete one in the channel’s Integrations settings to let them post as themselves.';
    case 'unsupported-channel':
      return 'Characters answer as me in this kind of channel.';
  }
}

const isDiscordError = (error: unknown, code: number): boolean => error instanceof DiscordAPIError && error.code === code;

/** Where a persona message goes: the channel holding the webhook, and the thread inside it if any. */
interface Target {
  parentId: string;
  threadId: string | undefined;
}

export class WebhookPersonas {
  readonly #client: Client;
  readonly #logger: Logger;
  readonly #webhookName: string;
  /** Parent channel id → the bot's webhook there; a promise so concurrent first posts make one. */
  readonly #webhooks = new Map<string, Promise<Webhook>>();
  /** The same webhooks once known, so a deleted one can be forgotten at once. */
  readonly #ready = new Map<string, Webhook>();
  /** Ids of webhooks this process has used: messages from them are our own personas. */
  readonly #ownWebhookIds = new Set<string>();
  readonly #explained = new Set<string>();
  /**
   * Parent channel id → why personas failed there and until when that is taken as still true:
   * without it every reply in such a channel would first spend a refused request (and wait on
   * the channel's 5-per-5-s webhook bucket).
   */
  readonly #unavailable = new Map<string, { reason: PersonaFallbackReason; until: number }>();
  readonly #fallbackMemoryMs: number;
  readonly #now: () => number;

  constructor(options: WebhookPersonasOptions) {
    this.#client = options.client;
    this.#logger = options.logger;
    this.#webhookName = options.webhookName ?? 'Likeness';
    this.#fallbackMemoryMs = options.fallbackMemoryMs ?? 60_000;
    this.#now = options.now ?? Date.now;
  }

  /** A channel or role changed (Manage Webhooks may be granted now): failures remembered so far are tried again at the next post. */
  permissionsChanged(): void {
    this.#unavailable.clear();
  }

  /** Posts `content` as `persona` in a channel or thread; `fallback` when personas cannot work there. */
  async send(channelId: string, persona: Persona, content: string): Promise<PersonaSendResult> {
    const target = await this.#target(channelId);
    if (target === null) return { kind: 'fallback', reason: 'unsupported-channel' };
    const body = {
      content,
      username: sanitizePersonaName(persona.name),
      ...(persona.avatarUrl ? { avatarURL: persona.avatarUrl } : {}),
      allowedMentions: { parse: [] },
      ...(target.threadId === undefined ? {} : { threadId: target.threadId }),
    };
    const known = this.#unavailable.get(target.parentId);
    if (known !== undefined && known.until > this.#now()) return { kind: 'fallback', reason: known.reason };
    for (let attempt = 0; ; attempt += 1) {
      let webhook: Webhook;
      try {
        webhook = await this.#webhook(target.parentId);
      } catch (error) {
        const reason = isDiscordError(error, RESTJSONErrorCodes.MissingPermissions)
          ? 'missing-permission'
          : isDiscordError(error, RESTJSONErrorCodes.MaximumNumberOfWebhooksReached)
            ? 'webhook-limit'
            : null;
        if (reason === null) throw error;
        this.#unavailable.set(target.parentId, { reason, until: this.#now() + this.#fallbackMemoryMs });
        // Told (and logged at info) once per channel by `explanationOnce`.
        this.#logger.debug({ channelId: target.parentId, reason }, 'personas unavailable; posting as the bot');
        return { kind: 'fallback', reason };
      }
      try {
        const message = await webhook.send(body);
        return { kind: 'sent', messageId: message.id, webhookId: webhook.id, pacingKey: webhookBucket(webhook.id, webhook.token ?? '') };
      } catch (error) {
        // Someone deleted the webhook: forget it, make a new one, try once more.
        if (attempt > 0 || !isDiscordError(error, RESTJSONErrorCodes.UnknownWebhook)) throw error;
        this.#logger.info({ channelId: target.parentId, webhookId: webhook.id }, 'webhook was deleted; creating it again');
        this.#forget(target.parentId, webhook);
      }
    }
  }

  /**
   * Replaces the text of a persona message (streaming). A message belongs to the webhook that sent
   * it: once that webhook is deleted the message can never be edited again (NOT_FOUND), and the
   * caller sends the rest as a new message.
   */
  async edit(channelId: string, messageId: string, content: string): Promise<void> {
    await this.#editMessage(channelId, messageId, { content, allowedMentions: { parse: [] } });
  }

  /**
   * Puts button rows under a persona message, keeping its text. Discord takes interactive
   * components from application-owned webhooks only, which the bot's are (it made them).
   */
  async setButtons(channelId: string, messageId: string, rows: APIActionRowComponent<APIButtonComponent>[]): Promise<void> {
    await this.#editMessage(channelId, messageId, { components: rows });
  }

  async #editMessage(channelId: string, messageId: string, change: Pick<WebhookMessageEditOptions, 'content' | 'components' | 'allowedMentions'>): Promise<void> {
    const target = await this.#target(channelId);
    if (target === null) throw new AppError('NOT_FOUND', 'That character message can no longer be edited.');
    // After a restart the cache is empty; the channel's webhook is found again like for a send.
    const webhook = this.#ready.get(target.parentId) ?? (await this.#webhook(target.parentId));
    try {
      await webhook.editMessage(messageId, { ...change, ...(target.threadId === undefined ? {} : { threadId: target.threadId }) });
    } catch (error) {
      if (isDiscordError(error, RESTJSONErrorCodes.UnknownWebhook)) this.#forget(target.parentId, webhook);
      // 10008 also covers a message sent by an earlier, since deleted, webhook of this channel.
      if (isDiscordError(error, RESTJSONErrorCodes.UnknownWebhook) || isDiscordError(error, RESTJSONErrorCodes.UnknownMessage)) {
        throw new AppError('NOT_FOUND', 'That character message can no longer be edited.', { cause: error });
      }
      throw error;
    }
  }

  /** True for messages our personas posted, which the bot must not answer. */
  isOwnPersonaMessage(message: Pick<Message, 'webhookId' | 'applicationId'>): boolean {
    if (message.webhookId === null) return false;
    return this.#ownWebhookIds.has(message.webhookId) || (message.applicationId !== null && message.applicationId === this.#client.application?.id);
  }

  /** The explanation for a fallback, the first time only for each channel (threads count as their parent). */
  async explanationOnce(channelId: string, reason: PersonaFallbackReason): Promise<string | null> {
    const target = await this.#target(channelId);
    const key = `${target?.parentId ?? channelId}:${reason}`;
    if (this.#explained.has(key)) return null;
    this.#explained.add(key);
    this.#logger.info({ channelId: target?.parentId ?? channelId, reason }, 'personas unavailable here; the bot posts instead and says how to enable them');
    return explainFallback(reason);
  }

  async #target(channelId: string): Promise<Target | null> {
    const channel = await this.#client.channels.fetch(channelId);
    if (channel === null) return null;
    if (channel.isThread()) return channel.parentId === null ? null : { parentId: channel.parentId, threadId: channel.id };
    const canHaveWebhooks = channel.type === ChannelType.GuildText || channel.type === ChannelType.GuildAnnouncement || channel.type === ChannelType.GuildVoice;
    return canHaveWebhooks ? { parentId: channel.id, threadId: undefined } : null;
  }

  #webhook(parentId: string): Promise<Webhook> {
    let pending = this.#webhooks.get(parentId);
    if (pending === undefined) {
      pending = this.#findOrCreate(parentId);
      this.#webhooks.set(parentId, pending);
      // A failed promise is not kept: the permission may be granted later (see #unavailable for the short memory).
      pending.catch(() => {
        if (this.#webhooks.get(parentId) === pending) this.#webhooks.delete(parentId);
      });
    }
    return pending;
  }

  async #findOrCreate(parentId: string): Promise<Webhook> {
    const channel = await this.#client.channels.fetch(parentId);
    if (channel === null || !('fetchWebhooks' in channel)) throw new AppError('INTERNAL', 'This channel cannot hold webhooks.');
    const botId = this.#client.user?.id;
    const existing = (await channel.fetchWebhooks()).find(
      (webhook) => webhook.token !== null && webhook.name === this.#webhookName && (webhook.owner?.id === botId || webhook.applicationId === this.#client.application?.id),
    );
    const webhook = existing ?? (await channel.createWebhook({ name: this.#webhookName, reason: 'Characters post under their own names' }));
    this.#ownWebhookIds.add(webhook.id);
    this.#ready.set(parentId, webhook);
    this.#logger.debug({ channelId: parentId, webhookId: webhook.id, reused: existing !== undefined }, 'persona webhook ready');
    return webhook;
  }

  /** Drops a deleted webhook, unless a concurrent sender has already replaced it. */
  #forget(parentId: string, webhook: Webhook): void {
    if (this.#ready.get(parentId)?.id !== webhook.id) return;
    this.#ready.delete(parentId);
    this.#webhooks.delete(parentId);
  }
}
