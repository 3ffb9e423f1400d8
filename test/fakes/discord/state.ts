/**
 * What the fake Discord knows: users, guilds, channels (including threads and DMs), messages,
 * uploaded files, commands and interactions. Plain records kept in maps, so lookups stay O(1)
 * with a hundred busy threads; `serialize.ts` turns them into Discord's JSON shapes.
 */
import { ChannelType, type APIApplicationCommand, type APIAttachment, type APIEmbed, type APIUser } from 'discord-api-types/v10';
import { SnowflakeFactory, type Clock } from './snowflake.js';

/** A user, with the bytes of their avatar when the test gave some. */
export interface UserRecord {
  user: APIUser;
  avatarBytes: { bytes: Buffer; contentType: string } | null;
}

/** A guild: its roles and who is a member since when. */
export interface GuildRecord {
  id: string;
  name: string;
  ownerId: string;
  /** Role id → permission bit string; `@everyone` has the guild's id. */
  roles: Array<{ id: string; name: string; permissions: string; position: number; managed: boolean; botId?: string }>;
  /** User id → joined-at epoch ms, in join order. */
  members: Map<string, { joinedAt: number; roleIds: string[] }>;
  /** Guild channel ids in creation order (threads excluded). */
  channelIds: string[];
}

/** Thread-only fields of a channel. */
export interface ThreadRecord {
  ownerId: string;
  archived: boolean;
  locked: boolean;
  invitable: boolean;
  autoArchiveDuration: 60 | 1440 | 4320 | 10080;
  archiveTimestamp: number;
  createTimestamp: number;
  messageCount: number;
  totalMessageSent: number;
  memberIds: Map<string, number>;
}

/** A channel of any kind; `thread` is set for threads, `recipientIds` for DMs. */
export interface ChannelRecord {
  id: string;
  type: ChannelType;
  name: string | null;
  guildId: string | null;
  parentId: string | null;
  position: number;
  topic: string | null;
  rateLimitPerUser: number;
  lastMessageId: string | null;
  recipientIds: string[];
  thread: ThreadRecord | null;
  /** Permission bits the bot has here, as Discord computes `app_permissions`; tests may lower them. */
  botPermissions: bigint;
}

/** One version of a message's visible parts: its creation or an edit. */
export interface MessageVersion {
  kind: 'create' | 'edit';
  content: string;
  embeds: APIEmbed[];
  attachmentIds: string[];
  flags: number;
  /** The fake clock at the time, epoch ms. */
  timestamp: number;
}

/** A message as stored; see `serialize.ts` for the wire shape. */
export interface MessageRecord {
  id: string;
  channelId: string;
  guildId: string | null;
  authorId: string;
  type: number;
  content: string;
  embeds: APIEmbed[];
  attachments: APIAttachment[];
  components: unknown[];
  flags: number;
  tts: boolean;
  nonce: string | number | null;
  createdAt: number;
  editedAt: number | null;
  pinned: boolean;
  mentionIds: string[];
  mentionEveryone: boolean;
  referencedMessageId: string | null;
  /** Set on messages sent through an application's interaction webhook or a channel webhook. */
  webhookId: string | null;
  /** A channel webhook's message: the author it shows (`authorId` is then the webhook id). */
  webhookAuthor: { username: string; avatar: string | null; avatarUrl: string | null } | null;
  interaction: { id: string; type: number; name: string; userId: string } | null;
  /** Thread started from this message, if any. */
  threadId: string | null;
  deleted: boolean;
  versions: MessageVersion[];
}

/** A channel webhook (type 1, "Incoming"), made with `POST /channels/{id}/webhooks`. */
export interface WebhookRecord {
  id: string;
  token: string;
  channelId: string;
  guildId: string;
  name: string;
  /** Avatar hash, or null for the default avatar. */
  avatar: string | null;
  creatorId: string;
  /** The application that made it (the bot's), so its messages carry `application_id`. */
  applicationId: string | null;
  deleted: boolean;
}

/** An uploaded file the fake serves back from its CDN path. */
export interface StoredFile {
  bytes: Buffer;
  contentType: string;
  filename: string;
}

/** A GET of the fake's CDN. */
export interface CdnRequest {
  /** The decoded path, e.g. `/cdn/attachments/{channel}/{attachment}/{name}`. */
  path: string;
  /** The attachment asked for, when the path names one. */
  attachmentId: string | null;
  status: number;
}

/** All the fake's data. Mutated by the REST routes, the gateway and the test driver. */
export class DiscordState {
  readonly ids: SnowflakeFactory;
  readonly clock: Clock;
  readonly users = new Map<string, UserRecord>();
  readonly guilds = new Map<string, GuildRecord>();
  readonly channels = new Map<string, ChannelRecord>();
  readonly messages = new Map<string, MessageRecord>();
  /** Channel id → message ids oldest first (ids increase, so this is also id order). */
  readonly channelMessageIds = new Map<string, string[]>();
  /** Recipient user id → DM channel id. */
  readonly directMessageChannels = new Map<string, string>();
  readonly files = new Map<string, StoredFile>();
  /** Every GET the CDN answered (attachments, avatars), oldest first: what the bot downloaded. */
  readonly cdnRequests: CdnRequest[] = [];
  readonly webhooks = new Map<string, WebhookRecord>();
  readonly typing = new Map<string, number[]>();
  readonly globalCommands: APIApplicationCommand[] = [];
  readonly guildCommands = new Map<string, APIApplicationCommand[]>();
  readonly #listeners = new Set<() => void>();

  constructor(clock: Clock) {
    this.clock = clock;
    this.ids = new SnowflakeFactory(clock);
  }

  /** Calls `listener` after every change; returns the unsubscribe function. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Tells `waitFor` callers that something changed. */
  changed(): void {
    for (const listener of this.#listeners) listener();
  }

  addUser(user: APIUser, avatarBytes: UserRecord['avatarBytes'] = null): UserRecord {
    const record = { user, avatarBytes };
    this.users.set(user.id, record);
    return record;
  }

  /** The user or undefined. */
  user(id: string): APIUser | undefined {
    return this.users.get(id)?.user;
  }

  addChannel(fields: Partial<ChannelRecord> & Pick<ChannelRecord, 'id' | 'type'>): ChannelRecord {
    const record: ChannelRecord = {
      name: null,
      guildId: null,
      parentId: null,
      position: 0,
      topic: null,
      rateLimitPerUser: 0,
      lastMessageId: null,
      recipientIds: [],
      thread: null,
      botPermissions: 0n,
      ...fields,
    };
    this.channels.set(record.id, record);
    if (record.guildId !== null && record.thread === null) this.guilds.get(record.guildId)?.channelIds.push(record.id);
    return record;
  }

  /** Messages of a channel, oldest first, deleted ones left out. */
  channelMessages(channelId: string): MessageRecord[] {
    const ids = this.channelMessageIds.get(channelId) ?? [];
    const found: MessageRecord[] = [];
    for (const id of ids) {
      const message = this.messages.get(id);
      if (message !== undefined && !message.deleted) found.push(message);
    }
    return found;
  }

  addMessage(message: MessageRecord): void {
    this.messages.set(message.id, message);
    let ids = this.channelMessageIds.get(message.channelId);
    if (ids === undefined) {
      ids = [];
      this.channelMessageIds.set(message.channelId, ids);
    }
    ids.push(message.id);
  }

  /** Active (not archived) threads of a guild. */
  activeThreads(guildId: string): ChannelRecord[] {
    const threads: ChannelRecord[] = [];
    for (const channel of this.channels.values()) {
      if (channel.guildId === guildId && channel.thread !== null && !channel.thread.archived) threads.push(channel);
    }
    return threads;
  }
}

/** Whether messages can be sent in a channel of this type. */
export function isTextBased(type: ChannelType): boolean {
  return (
    type === ChannelType.GuildText ||
    type === ChannelType.DM ||
    type === ChannelType.GuildVoice ||
    type === ChannelType.GuildAnnouncement ||
    type === ChannelType.PublicThread ||
    type === ChannelType.PrivateThread ||
    type === ChannelType.AnnouncementThread ||
    type === ChannelType.GuildStageVoice
  );
}
