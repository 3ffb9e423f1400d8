/**
 * Threads: created from a message (the thread takes the message's id, as on Discord) or on their
 * own (public 11 or private 12), with Discord's validation, THREAD_CREATE for sessions with the
 * Guilds intent, and thread membership with THREAD_MEMBERS_UPDATE.
 */
import { ChannelType, GatewayIntentBits } from 'discord-api-types/v10';
import type { FakeContext } from './context.js';
import { invalidFormBody, threadAlreadyCreated, wrongChannelType, type FieldProblem } from './errors.js';
import { channelObject, threadMemberObject, threadWithMember } from './serialize.js';
import type { ChannelRecord, MessageRecord, ThreadRecord } from './state.js';

const ARCHIVE_DURATIONS = [60, 1440, 4320, 10080] as const;

export interface ThreadSpec {
  name: unknown;
  /** 11 public, 12 private (Discord's default when a body names none), 10 in announcement channels. */
  type?: unknown;
  autoArchiveDuration?: unknown;
  invitable?: unknown;
  rateLimitPerUser?: unknown;
  ownerId: string;
  startMessage?: MessageRecord;
}

function validate(spec: ThreadSpec): { name: string; autoArchiveDuration: ThreadRecord['autoArchiveDuration'] } {
  const problems: FieldProblem[] = [];
  const name = typeof spec.name === 'string' ? spec.name.trim() : '';
  if (name.length < 1 || name.length > 100) {
    problems.push({ path: ['name'], code: 'BASE_TYPE_BAD_LENGTH', message: 'Must be between 1 and 100 in length.' });
  }
  const duration = spec.autoArchiveDuration ?? 4320;
  if (!ARCHIVE_DURATIONS.includes(duration as (typeof ARCHIVE_DURATIONS)[number])) {
    problems.push({ path: ['auto_archive_duration'], code: 'BASE_TYPE_CHOICES', message: 'Value must be one of {60, 1440, 4320, 10080}.' });
  }
  if (problems.length > 0) throw invalidFormBody(problems);
  return { name, autoArchiveDuration: duration as ThreadRecord['autoArchiveDuration'] };
}

/** The thread type a request asks for in this parent. */
export function threadTypeFor(parent: ChannelRecord, spec: ThreadSpec): ChannelType {
  if (parent.type === ChannelType.GuildAnnouncement) return ChannelType.AnnouncementThread;
  if (spec.startMessage !== undefined) return ChannelType.PublicThread;
  return spec.type === ChannelType.PublicThread ? ChannelType.PublicThread : ChannelType.PrivateThread;
}

/** Creates a thread in `parent` and dispatches THREAD_CREATE. */
export function createThread(context: FakeContext, parent: ChannelRecord, spec: ThreadSpec): ChannelRecord {
  if (parent.type !== ChannelType.GuildText && parent.type !== ChannelType.GuildAnnouncement) throw wrongChannelType();
  if (spec.startMessage !== undefined && spec.startMessage.threadId !== null) throw threadAlreadyCreated();
  const { name, autoArchiveDuration } = validate(spec);
  const now = context.state.clock();
  const thread = context.state.addChannel({
    id: spec.startMessage?.id ?? context.state.ids.next(),
    type: threadTypeFor(parent, spec),
    name,
    guildId: parent.guildId,
    parentId: parent.id,
    rateLimitPerUser: typeof spec.rateLimitPerUser === 'number' ? spec.rateLimitPerUser : 0,
    botPermissions: parent.botPermissions,
    thread: {
      ownerId: spec.ownerId,
      archived: false,
      locked: false,
      invitable: spec.invitable !== false,
      autoArchiveDuration,
      archiveTimestamp: now,
      createTimestamp: now,
      messageCount: 0,
      totalMessageSent: 0,
      memberIds: new Map([[spec.ownerId, now]]),
    },
  });
  if (spec.startMessage !== undefined) spec.startMessage.threadId = thread.id;
  const data = { ...threadWithMember(context.state, thread, spec.ownerId), newly_created: true };
  context.gateway.dispatch('THREAD_CREATE', data, { intents: GatewayIntentBits.Guilds });
  context.state.changed();
  return thread;
}

/** Adds a user to a thread; a no-op for members, like Discord's idempotent PUT. */
export function addThreadMember(context: FakeContext, thread: ChannelRecord, userId: string): void {
  if (thread.thread === null) throw wrongChannelType();
  if (thread.thread.memberIds.has(userId)) return;
  const now = context.state.clock();
  thread.thread.memberIds.set(userId, now);
  context.gateway.dispatch(
    'THREAD_MEMBERS_UPDATE',
    {
      id: thread.id,
      guild_id: thread.guildId,
      member_count: Math.min(thread.thread.memberIds.size, 50),
      added_members: [threadMemberObject(thread.id, userId, now)],
    },
    // Others joining is only sent with the privileged GuildMembers intent.
    { intents: userId === context.bot.id ? GatewayIntentBits.Guilds : GatewayIntentBits.Guilds | GatewayIntentBits.GuildMembers },
  );
  context.state.changed();
}

export function removeThreadMember(context: FakeContext, thread: ChannelRecord, userId: string): void {
  if (thread.thread === null) throw wrongChannelType();
  if (!thread.thread.memberIds.delete(userId)) return;
  context.gateway.dispatch(
    'THREAD_MEMBERS_UPDATE',
    { id: thread.id, guild_id: thread.guildId, member_count: Math.min(thread.thread.memberIds.size, 50), removed_member_ids: [userId] },
    { intents: userId === context.bot.id ? GatewayIntentBits.Guilds : GatewayIntentBits.Guilds | GatewayIntentBits.GuildMembers },
  );
  context.state.changed();
}

/** Dispatches the update event for a changed channel or thread. */
export function channelUpdated(context: FakeContext, channel: ChannelRecord): void {
  const event = channel.thread === null ? 'CHANNEL_UPDATE' : 'THREAD_UPDATE';
  context.gateway.dispatch(event, channelObject(context.state, channel), { intents: GatewayIntentBits.Guilds });
  context.state.changed();
}
