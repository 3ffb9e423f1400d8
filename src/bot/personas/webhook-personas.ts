/**
 * Characters posting as themselves through the parent channel's webhooks ("Likeness"), executed
 * with the character's `username` and `avatar_url` (`thread_id` for threads, which have no
 * webhooks of their own).
 *
 * Discord limits each webhook on its own (5 requests per 2 s), and every thread of a channel
 * posts through the channel's webhooks, so one webhook would make five replies streaming in one
 * channel share one bucket. Each channel therefore has a small pool: the webhooks found there at
 * first use (after a restart, all of the bot's), and more made as replies overlap, up to
 * `webhooksPerChannel` (Discord allows 15 per channel, people's own included). A reply leases the
 * least busy webhook for its whole life (its messages can be edited only through the webhook that
 * sent them); when every one is busy, the pool grows in the background, so no reply waits for a
 * new webhook. The pool is cached per process: a cache of something people can delete, so a
 * 10015 Unknown Webhook drops that webhook and the send is tried once more on another.
 *
 * Without Manage Webhooks (50013) the caller is told to fall back to posting as the bot, and is
 * handed the explanation once per channel; the failure is remembered for a minute, or until a
 * channel or role changes (`permissionsChanged`).
 */
import {
  ChannelType,
  DiscordAPIError,
  RESTJSONErrorCodes,
  type Client,
  type Message,
  type Webhook,
  type WebhookMessageEditOptions,
} from 'discord.js';
import { AppError } from '../../core/errors.js';
import type { Logger } from '../../core/ports.js';
import { webhookBucket } from '../deliveries/job-deliveries.js';
import { type ButtonRows, MessageUneditableError } from '../replies/streaming-reply.js';

/** Who a message appears to come from. */
export interface Persona {
  name: string;
  /** Fetched by Discord whenever the message is shown: public and not expiring (see the notes). */
  avatarUrl?: string | null;
}

/** Why a channel cannot have personas; the caller posts as the bot instead. */
export type PersonaFallbackReason = 'missing-permission' | 'webhook-limit' | 'unsupported-channel';

/**
 * A reply's hold on one webhook of its channel: its messages are sent and edited through it.
 * `pacingKey` is the pacer's key for that webhook's rate-limit bucket.
 */
export interface WebhookLease {
  readonly webhookId: string;
  readonly pacingKey: string;
}

export type PersonaSendResult = { kind: 'sent'; messageId: string; lease: WebhookLease } | { kind: 'fallback'; reason: PersonaFallbackReason };

export interface WebhookPersonasOptions {
  client: Client;
  logger: Logger;
  /** The name of the bot's webhooks in each channel. */
  webhookName?: string;
  /** The most webhooks the bot keeps in one channel (default 5; Discord allows 15 in all). */
  webhooksPerChannel?: number;
  /** A lease not used for this long is taken as ended (a reply that never said so; default 60 s). */
  leaseIdleMs?: number;
  /**
   * How long a channel where personas failed (no permission, 15 webhooks) is posted to as the
   * bot without asking Discord again (default 60 s); `permissionsChanged()` ends it sooner.
   */
  fallbackMemoryMs?: number;
  now?: () => number;
}

/** Discord's rule for webhook usernames: 1–80 characters, never containing these. */
const FORBIDDEN_IN_NAMES = /(d)(iscord)|(c)(lyde)/gi;
const NAME_MAX_LENGTH = 80;
/** A hair space: too thin to see, enough for Discord not to read "clyde" or "discord" (as PluralKit does). */
const HAIR_SPACE = '\u200a';

/**
 * A character name Discord accepts as a webhook `username`, looking as the character is called
 * (people address it by that name): a hair space after the first letter of "discord" and "clyde"
 * in any case, whitespace collapsed, at most 80 characters.
 */
export function sanitizePersonaName(name: string, fallback = 'Character'): string {
  let cleaned = name.replace(/\s+/g, ' ').trim();
  cleaned = cleaned.replace(FORBIDDEN_IN_NAMES, (_match, d: string | undefined, iscord: string | undefined, c: string | undefined, lyde: string | undefined) =>
    d !== undefined ? `${d}${HAIR_SPACE}${iscord}` : `${c}${HAIR_SPACE}${lyde}`,
  );
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

/** One webhook of a channel's pool and the replies using it (lease → last use). */
interface Pooled {
  webhook: Webhook;
  leases: Map<Lease, number>;
}

/** A lease as handed out; the class makes each one a distinct key. */
class Lease implements WebhookLease {
  constructor(
    readonly pooled: Pooled,
    readonly parentId: string,
  ) {}

  get webhookId(): string {
    return this.pooled.webhook.id;
  }

  get pacingKey(): string {
    return webhookBucket(this.pooled.webhook.id, this.pooled.webhook.token ?? '');
  }
}

/** A channel's webhooks, and whether one is being made. */
interface Pool {
  members: Pooled[];
  growing: boolean;
  /** Until when making another is not tried (Discord refused: the 15-webhook limit, a permission taken away). */
  noGrowthUntil: number;
}

export class WebhookPersonas {
  readonly #client: Client;
  readonly #logger: Logger;
  readonly #webhookName: string;
  readonly #webhooksPerChannel: number;
  readonly #leaseIdleMs: number;
  /** Parent channel id → its pool; a promise so concurrent first posts list (and make) once. */
  readonly #pools = new Map<string, Promise<Pool>>();
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
    this.#webhooksPerChannel = Math.min(15, Math.max(1, options.webhooksPerChannel ?? 5));
    this.#leaseIdleMs = options.leaseIdleMs ?? 60_000;
    this.#fallbackMemoryMs = options.fallbackMemoryMs ?? 60_000;
    this.#now = options.now ?? Date.now;
  }

  /** A channel or role changed (Manage Webhooks may be granted now): failures remembered so far are tried again at the next post. */
  permissionsChanged(): void {
    this.#unavailable.clear();
    for (const pool of this.#pools.values()) void pool.then((known) => (known.noGrowthUntil = 0)).catch(() => undefined);
  }

  /**
   * Posts `content` as `persona` in a channel or thread; `fallback` when personas cannot work
   * there. The first message of a reply leases a webhook; pass that `lease` for the reply's
   * later messages, so all of them go (and are edited) through the same webhook. Discord's
   * other failures (a 5xx, a timeout) are thrown and not remembered: they say nothing lasting
   * about the channel.
   */
  async send(channelId: string, persona: Persona, content: string, lease?: WebhookLease, rows?: ButtonRows): Promise<PersonaSendResult> {
    const target = await this.#target(channelId);
    if (target === null) return { kind: 'fallback', reason: 'unsupported-channel' };
    const body = {
      content,
      // Discord takes interactive components from application-owned webhooks only, which the bot's are (it made them).
      ...(rows ? { components: rows } : {}),
      username: sanitizePersonaName(persona.name),
      ...(persona.avatarUrl ? { avatarURL: persona.avatarUrl } : {}),
      allowedMentions: { parse: [] },
      ...(target.threadId === undefined ? {} : { threadId: target.threadId }),
    };
    let held = lease instanceof Lease && lease.parentId === target.parentId ? lease : undefined;
    if (held === undefined) {
      const known = this.#unavailable.get(target.parentId);
      if (known !== undefined && known.until > this.#now()) return { kind: 'fallback', reason: known.reason };
    }
    for (let attempt = 0; ; attempt += 1) {
      if (held === undefined) {
        try {
          held = await this.#lease(target.parentId);
        } catch (error) {
          const reason = fallbackReason(error);
          if (reason === null) throw error;
          this.#unavailable.set(target.parentId, { reason, until: this.#now() + this.#fallbackMemoryMs });
          // Told (and logged at info) once per channel by `explanationOnce`.
          this.#logger.debug({ channelId: target.parentId, reason }, 'personas unavailable; posting as the bot');
          return { kind: 'fallback', reason };
        }
      }
      this.#touch(held);
      try {
        const message = await held.pooled.webhook.send(body);
        return { kind: 'sent', messageId: message.id, lease: held };
      } catch (error) {
        // Someone deleted the webhook: forget it, take (or make) another, try once more.
        if (attempt > 0 || !isDiscordError(error, RESTJSONErrorCodes.UnknownWebhook)) {
          // A lease taken for this post goes back to the pool: no reply holds it, and kept it would look busy for a minute.
          if (held !== lease) this.release(held);
          throw error;
        }
        this.#logger.info({ channelId: target.parentId, webhookId: held.webhookId }, 'webhook was deleted; posting through another');
        await this.#forget(target.parentId, held.pooled);
        held = undefined;
      }
    }
  }

  /**
   * Replaces the text of a persona message (streaming), through the webhook that sent it: once
   * that webhook is deleted the message can never be edited again (`MessageUneditableError`), and
   * the streaming writer sends the rest as a new message; a deleted message is NOT_FOUND.
   */
  async edit(channelId: string, lease: WebhookLease, messageId: string, content: string, rows?: ButtonRows): Promise<void> {
    await this.#editMessage(channelId, lease, messageId, { content, allowedMentions: { parse: [] }, ...(rows ? { components: rows } : {}) });
  }

  /**
   * Replaces the text of a message one of the channel's webhooks of ours posted earlier (a part
   * of a reply now swiped), without a lease: `MessageUneditableError` once no webhook of ours
   * with that id is left (deleted, or never ours) or the message is gone.
   */
  async editPosted(channelId: string, webhookId: string, messageId: string, content: string): Promise<void> {
    const target = await this.#target(channelId);
    const pooled = target && (await this.#pool(target.parentId).catch(() => undefined))?.members.find((member) => member.webhook.id === webhookId);
    if (!target || !pooled) throw new MessageUneditableError('That character message can no longer be edited: its webhook is not ours any more.');
    try {
      await pooled.webhook.editMessage(messageId, { content, allowedMentions: { parse: [] }, ...(target.threadId === undefined ? {} : { threadId: target.threadId }) });
    } catch (error) {
      if (isDiscordError(error, RESTJSONErrorCodes.UnknownWebhook)) await this.#forget(target.parentId, pooled);
      if (isDiscordError(error, RESTJSONErrorCodes.UnknownWebhook) || isDiscordError(error, RESTJSONErrorCodes.UnknownMessage)) {
        throw new MessageUneditableError('That character message can no longer be edited.', { cause: error });
      }
      throw error;
    }
  }

  /** The reply holding `lease` is over: its webhook is free for the next one. */
  release(lease: WebhookLease): void {
    if (lease instanceof Lease) lease.pooled.leases.delete(lease);
  }

  async #editMessage(channelId: string, lease: WebhookLease, messageId: string, change: Pick<WebhookMessageEditOptions, 'content' | 'components' | 'allowedMentions'>): Promise<void> {
    const target = await this.#target(channelId);
    if (target === null || !(lease instanceof Lease)) throw new AppError('NOT_FOUND', 'That character message can no longer be edited.');
    this.#touch(lease);
    try {
      await lease.pooled.webhook.editMessage(messageId, { ...change, ...(target.threadId === undefined ? {} : { threadId: target.threadId }) });
    } catch (error) {
      if (isDiscordError(error, RESTJSONErrorCodes.UnknownWebhook)) {
        // The message still shows, but only its webhook could edit it: a writer goes on in a new one.
        await this.#forget(lease.parentId, lease.pooled);
        throw new MessageUneditableError('That character message can no longer be edited: its webhook was deleted.', { cause: error });
      }
      if (isDiscordError(error, RESTJSONErrorCodes.UnknownMessage)) {
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

  /** How many webhooks the bot holds in a channel now (for tests and logs). */
  async poolSize(parentId: string): Promise<number> {
    const pool = this.#pools.get(parentId);
    return pool ? (await pool.catch(() => ({ members: [] }))).members.length : 0;
  }

  async #target(channelId: string): Promise<Target | null> {
    const channel = await this.#client.channels.fetch(channelId);
    if (channel === null) return null;
    if (channel.isThread()) return channel.parentId === null ? null : { parentId: channel.parentId, threadId: channel.id };
    const canHaveWebhooks = channel.type === ChannelType.GuildText || channel.type === ChannelType.GuildAnnouncement || channel.type === ChannelType.GuildVoice;
    return canHaveWebhooks ? { parentId: channel.id, threadId: undefined } : null;
  }

  /** The least busy webhook of the channel, leased; starts growing the pool when all are busy. */
  async #lease(parentId: string): Promise<Lease> {
    const pool = await this.#pool(parentId);
    if (pool.members.length === 0) {
      // Every webhook of the pool was deleted: list (and make) again.
      this.#pools.delete(parentId);
      return this.#lease(parentId);
    }
    const now = this.#now();
    const busy = (pooled: Pooled) => {
      for (const [lease, usedAt] of pooled.leases) if (usedAt <= now - this.#leaseIdleMs) pooled.leases.delete(lease);
      return pooled.leases.size;
    };
    const chosen = pool.members.reduce((best, pooled) => (busy(pooled) < busy(best) ? pooled : best));
    const lease = new Lease(chosen, parentId);
    chosen.leases.set(lease, now);
    if (busy(chosen) > 1) this.#grow(parentId, pool);
    return lease;
  }

  #touch(lease: Lease): void {
    if (lease.pooled.leases.has(lease)) lease.pooled.leases.set(lease, this.#now());
  }

  #pool(parentId: string): Promise<Pool> {
    let pending = this.#pools.get(parentId);
    if (pending === undefined) {
      pending = this.#load(parentId);
      this.#pools.set(parentId, pending);
      // A failed promise is not kept: the permission may be granted later (see #unavailable for the short memory).
      pending.catch(() => {
        if (this.#pools.get(parentId) === pending) this.#pools.delete(parentId);
      });
    }
    return pending;
  }

  /** The bot's webhooks in the channel, or a first one made now. */
  async #load(parentId: string): Promise<Pool> {
    const channel = await this.#client.channels.fetch(parentId);
    if (channel === null || !('fetchWebhooks' in channel)) throw new AppError('INTERNAL', 'This channel cannot hold webhooks.');
    const botId = this.#client.user?.id;
    const existing = [...(await channel.fetchWebhooks()).values()].filter(
      (webhook) => webhook.token !== null && webhook.name === this.#webhookName && (webhook.owner?.id === botId || webhook.applicationId === this.#client.application?.id),
    );
    const webhooks = existing.length > 0 ? existing.slice(0, this.#webhooksPerChannel) : [await this.#create(parentId)];
    for (const webhook of webhooks) this.#ownWebhookIds.add(webhook.id);
    this.#logger.debug({ channelId: parentId, webhooks: webhooks.length, reused: existing.length > 0 }, 'persona webhooks ready');
    return { members: webhooks.map((webhook) => ({ webhook, leases: new Map() })), growing: false, noGrowthUntil: 0 };
  }

  async #create(parentId: string): Promise<Webhook> {
    const channel = await this.#client.channels.fetch(parentId);
    if (channel === null || !('createWebhook' in channel)) throw new AppError('INTERNAL', 'This channel cannot hold webhooks.');
    const webhook = await channel.createWebhook({ name: this.#webhookName, reason: 'Characters post under their own names' });
    this.#ownWebhookIds.add(webhook.id);
    return webhook;
  }

  /**
   * Makes webhooks one after another, in the background, until the pool has one per reply
   * holding one (replies that began meanwhile included) or reaches its size. A refusal
   * (Discord's 15, a permission taken away) stops it for a while; replies meanwhile share the
   * webhooks there are.
   */
  #grow(parentId: string, pool: Pool): void {
    if (pool.growing || pool.noGrowthUntil > this.#now()) return;
    const wanted = () => Math.min(this.#webhooksPerChannel, pool.members.reduce((sum, pooled) => sum + pooled.leases.size, 0));
    pool.growing = true;
    void (async () => {
      try {
        while (pool.members.length < wanted() && this.#pools.has(parentId)) {
          const webhook = await this.#create(parentId);
          pool.members.push({ webhook, leases: new Map() });
          this.#logger.debug({ channelId: parentId, webhookId: webhook.id, webhooks: pool.members.length }, 'persona webhook added: replies overlap here');
        }
      } catch (error) {
        pool.noGrowthUntil = this.#now() + this.#fallbackMemoryMs;
        const level = fallbackReason(error) === null ? 'warn' : 'debug';
        this.#logger[level]({ err: error, channelId: parentId, webhooks: pool.members.length }, 'could not add a persona webhook; replies share the ones there are');
      } finally {
        pool.growing = false;
      }
    })();
  }

  /** Drops a deleted webhook from its channel's pool. */
  async #forget(parentId: string, pooled: Pooled): Promise<void> {
    const pool = await this.#pools.get(parentId)?.catch(() => undefined);
    if (pool === undefined) return;
    const index = pool.members.indexOf(pooled);
    if (index !== -1) pool.members.splice(index, 1);
  }
}

/** Why personas cannot work in a channel, from Discord's refusal; null for any other error. */
function fallbackReason(error: unknown): PersonaFallbackReason | null {
  if (isDiscordError(error, RESTJSONErrorCodes.MissingPermissions)) return 'missing-permission';
  if (isDiscordError(error, RESTJSONErrorCodes.MaximumNumberOfWebhooksReached)) return 'webhook-limit';
  return null;
}
