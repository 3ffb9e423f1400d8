/**
 * The calls characters hold in voice channels (/voice talk), at most one per guild (Discord
 * gives a bot one voice connection per guild), and who asked not to be heard.
 */
import type { Guild, User } from 'discord.js';
import { type VoiceActivityDetectors, loadVoiceActivityDetectors } from '../../audio/voice-activity.js';
import type { Actor } from '../../core/actor.js';
import type { Core } from '../../core/core.js';
import type { Logger } from '../../core/ports.js';
import type { AccountRecord, CharacterRecord } from '../../core/records.js';
import { TalkSession, type TalkSessionOptions } from './talk-session.js';

export interface VoiceTalkDependencies {
  core: Core;
  logger: Logger;
  accountOf(user: User): Promise<{ actor: Actor; account: AccountRecord }>;
}

export class VoiceTalk {
  readonly #sessions = new Map<string, TalkSession>();
  /**
   * Members who opted out with /voice ignore me. Kept in this process's memory: a restart
   * forgets it (persisting it is issue 23's remaining work).
   */
  readonly #ignored = new Set<string>();
  #detectors: Promise<VoiceActivityDetectors> | undefined;

  constructor(
    private readonly dependencies: VoiceTalkDependencies,
    private readonly options: TalkSessionOptions,
  ) {}

  /** Starts a call in `voiceChannelId`, ending one already held in the guild. */
  async start(guild: Guild, voiceChannelId: string, character: CharacterRecord, conversationId: string): Promise<TalkSession> {
    this.leave(guild.id, 'Another call started.');
    this.#detectors ??= loadVoiceActivityDetectors();
    const detectors = await this.#detectors;
    const session: TalkSession = new TalkSession(
      guild,
      voiceChannelId,
      character,
      conversationId,
      {
        ...this.dependencies,
        detectors,
        ignores: (userId) => this.#ignored.has(userId),
        ended: () => {
          if (this.#sessions.get(guild.id) === session) this.#sessions.delete(guild.id);
        },
      },
      this.options,
    );
    this.#sessions.set(guild.id, session);
    await session.start();
    return session;
  }

  /** The call held in a guild, if any. */
  session(guildId: string): TalkSession | undefined {
    return this.#sessions.get(guildId);
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

  /** Opts a member out of being heard (or back in); returns whether they are now ignored. */
  setIgnored(userId: string, ignored: boolean): boolean {
    if (ignored) {
      this.#ignored.add(userId);
      for (const session of this.#sessions.values()) session.forget(userId);
    } else this.#ignored.delete(userId);
    return ignored;
  }

  ignores(userId: string): boolean {
    return this.#ignored.has(userId);
  }

  leaveAll(): void {
    for (const guildId of [...this.#sessions.keys()]) this.leave(guildId, 'The bot is stopping.');
  }
}
