/**
 * The calls characters hold in voice channels (/voice talk), at most one per guild (Discord
 * gives a bot one voice connection per guild). Who may be heard is the database's answer
 * (`VoiceRules`), asked at each subscription and each turn, so it holds in every process.
 */
import type { Guild, User } from 'discord.js';
import { reserveOpusMemory } from '../../audio/opus-memory.js';
import { type VoiceActivityDetectors, loadVoiceActivityDetectors } from '../../audio/voice-activity.js';
import type { Actor } from '../../core/actor.js';
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
  /** Guilds whose call is being set up: their voice is already the call's. */
  readonly #starting = new Set<string>();
  #detectors: Promise<VoiceActivityDetectors> | undefined;

  constructor(
    private readonly dependencies: VoiceTalkDependencies,
    private readonly options: TalkSessionOptions,
  ) {}

  /** Starts a call in `voiceChannelId` with the server's thresholds, ending one already held in the guild. */
  async start(guild: Guild, voiceChannelId: string, character: CharacterRecord, conversationId: string): Promise<TalkSession> {
    this.leave(guild.id, 'Another call started.');
    this.#starting.add(guild.id);
    try {
      return await this.#start(guild, voiceChannelId, character, conversationId);
    } finally {
      this.#starting.delete(guild.id);
    }
  }

  async #start(guild: Guild, voiceChannelId: string, character: CharacterRecord, conversationId: string): Promise<TalkSession> {
    reserveOpusMemory();
    this.#detectors ??= loadVoiceActivityDetectors();
    const [detectors, thresholds] = await Promise.all([this.#detectors, this.dependencies.rules.thresholds(guild.id)]);
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
