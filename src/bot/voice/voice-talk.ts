/**
 * The calls characters hold in voice channels (/voice talk), at most one per guild (Discord
 * gives a bot one voice connection per guild). Who may be heard is the database's answer
 * (`VoiceRules`), asked at each subscription and each turn, so it holds in every process.
 */
import type { Guild, User } from 'discord.js';
import { claimOpusInstance, releaseOpusInstance, reserveOpusMemory } from '../../audio/opus-memory.js';
import { type VoiceActivityDetectors, loadVoiceActivityDetectors } from '../../audio/voice-activity.js';
import type { Actor } from '../../core/actor.js';
import { AppError } from '../../core/errors.js';
import type { Core } from '../../core/core.js';
import type { Logger } from '../../core/ports.js';
import type { AccountRecord, CharacterRecord } from '../../core/records.js';
import { TalkSession, type TalkSessionOptions } from './talk-session.js';
import type { VoiceRules } from './voice-rules.js';

export interface VoiceTalkDependencies {
  core: Core;
  logger: Logger;
  accountOf(user: User): Promise<{ actor: Actor; account: AccountRecord }>;
  rules: VoiceRules;
  /** Told once when a call ends, whatever ended it. */
  callEnded?(session: TalkSession, reason: string): void;
}

export class VoiceTalk {
  readonly #sessions = new Map<string, TalkSession>();
  /** The newest start asked for in each guild: an older one still loading gives way to it. */
  readonly #starting = new Map<string, symbol>();
  #detectors: Promise<VoiceActivityDetectors> | undefined;

  constructor(
    private readonly dependencies: VoiceTalkDependencies,
    private readonly options: TalkSessionOptions,
  ) {}

  /** Starts a call in `voiceChannelId` with the server's thresholds, ending one already held in the guild. */
  async start(guild: Guild, voiceChannelId: string, character: CharacterRecord, conversationId: string): Promise<TalkSession> {
    this.leave(guild.id, 'Another call started.');
    // Claimed before anything is awaited: of two starts at once, the newer holds the call.
    const claim = Symbol(guild.id);
    this.#starting.set(guild.id, claim);
    reserveOpusMemory();
    // Room for at least one person's decoder, else a call would be held that hears nobody.
    if (!claimOpusInstance()) {
      this.#starting.delete(guild.id);
      this.dependencies.logger.warn({ guildId: guild.id }, 'no call started: this process holds as many Opus decoders as it reserved memory for');
      throw new AppError('VOICE_CAPACITY_REACHED', 'Too many people are being listened to in voice calls right now. Try again later.');
    }
    releaseOpusInstance();
    this.#detectors ??= loadVoiceActivityDetectors();
    const [detectors, thresholds] = await Promise.all([this.#detectors, this.dependencies.rules.thresholds(guild.id)]).finally(() => {
      if (this.#starting.get(guild.id) === claim) this.#starting.delete(guild.id);
    });
    if (this.#starting.has(guild.id) || this.#sessions.has(guild.id)) throw new AppError('CONFLICT', 'Another call was started in this server at the same time.');
    const session: TalkSession = new TalkSession(
      guild,
      voiceChannelId,
      character,
      conversationId,
      {
        ...this.dependencies,
        detectors,
        ignores: (userId) => this.dependencies.rules.ignores(userId),
        ended: (reason) => {
          if (this.#sessions.get(guild.id) === session) this.#sessions.delete(guild.id);
          this.dependencies.callEnded?.(session, reason);
        },
      },
      { ...this.options, turns: { ...this.options.turns, ...thresholds } },
    );
    this.#sessions.set(guild.id, session);
    await session.start();
    return session;
  }

  /** The call held in a guild, if any. */
  session(guildId: string): TalkSession | undefined {
    return this.#sessions.get(guildId);
  }

  /** The call held in a voice channel, if any. */
  sessionIn(voiceChannelId: string): TalkSession | undefined {
    return [...this.#sessions.values()].find((session) => session.voiceChannelId === voiceChannelId);
  }

  /** Whether a call holds the guild's voice, or is being set up there: nothing else may play in it then. */
  holds(guildId: string): boolean {
    return this.#sessions.has(guildId) || this.#starting.has(guildId);
  }

  /** Ends the guild's call; returns whether there was one. */
  leave(guildId: string, reason = 'Left with /voice leave.'): boolean {
    const session = this.#sessions.get(guildId);
    if (!session) return false;
    this.#sessions.delete(guildId);
    session.end(reason);
    return true;
  }

  /**
   * After a voice state change: someone who left the call's channel is no longer heard (their
   * decoder is freed), and a call with no person left in it ends. The call's channel is read
   * from the bot's own voice state, so a call the bot was moved with follows it.
   */
  voiceStateChanged(guild: Guild, userId: string, fromChannelId: string | null, toChannelId: string | null): void {
    const session = this.#sessions.get(guild.id);
    if (!session) return;
    const callChannelId = session.voiceChannelId;
    if (fromChannelId === callChannelId && toChannelId !== callChannelId) session.left(userId);
    this.leaveIfAlone(guild);
  }

  /** After a voice state change: a call with no person left in it ends. */
  leaveIfAlone(guild: Guild): void {
    const session = this.#sessions.get(guild.id);
    if (session && session.people().length === 0) this.leave(guild.id, 'Everyone left the voice channel.');
  }

  /**
   * Opts a member out of being heard (or back in); returns whether they are now ignored. Calls
   * in this process stop hearing them at once; those of other shards at their next turn.
   */
  async setIgnored(userId: string, ignored: boolean): Promise<boolean> {
    await this.dependencies.rules.setIgnored(userId, ignored);
    for (const session of this.#sessions.values()) session.ignore(userId, ignored);
    return ignored;
  }

  /** After a manager forbade listening in a guild (or one channel of it): a call held there ends. */
  forbidden(guildId: string, channelId?: string): boolean {
    const session = this.#sessions.get(guildId);
    if (!session || (channelId !== undefined && session.voiceChannelId !== channelId)) return false;
    return this.leave(guildId, 'Listening was forbidden here.');
  }

  leaveAll(): void {
    for (const guildId of [...this.#sessions.keys()]) this.leave(guildId, 'The bot is stopping.');
  }
}
