/**
 * Who characters may hear in voice calls: servers and channels where managers forbade
 * listening, members who opted out, and each server's turn thresholds. Every answer is read
 * from the database when it is needed, never kept in this process, so a rule set through one
 * shard holds in all of them and after a restart.
 */
import { AppError } from '../../core/errors.js';
import type { DiscordVoiceGuildRules, DiscordVoiceRuleRepository, DiscordVoiceTuning } from '../../core/repositories.js';
import type { TurnOptions } from '../../audio/turn-detector.js';

export type TurnThresholds = Pick<TurnOptions, 'silenceMs' | 'minimumSpeechMs'>;

/**
 * What a manager may set a server's thresholds to: shorter pauses cut people off mid-sentence,
 * longer ones make the character seem deaf; past two seconds of speech, real turns are dropped.
 */
export const TUNING_LIMITS: Readonly<Record<keyof TurnThresholds, { min: number; max: number }>> = {
  silenceMs: { min: 200, max: 3_000 },
  minimumSpeechMs: { min: 0, max: 2_000 },
};

export class VoiceRules {
  constructor(
    private readonly repository: DiscordVoiceRuleRepository,
    /** The configured thresholds (VOICE_TALK_SILENCE_MS, VOICE_TALK_MINIMUM_SPEECH_MS), for servers that set none. */
    readonly defaults: TurnThresholds,
  ) {}

  /** Throws `LISTENING_FORBIDDEN`, naming who can lift it, when a call may not listen in `channelId`. */
  async requireListening(guildId: string, channelId: string): Promise<void> {
    const forbidden = await this.repository.forbidden(guildId, channelId);
    if (forbidden === 'server') {
      throw new AppError('LISTENING_FORBIDDEN', 'Characters may not listen in voice calls in this server. Someone with the Manage Server permission can allow it with `/voice listening on`.');
    }
    if (forbidden === 'channel') {
      throw new AppError('LISTENING_FORBIDDEN', `Characters may not listen in <#${channelId}>. Someone with the Manage Server permission can allow it with \`/voice listening on channel:\` naming it.`);
    }
  }

  rules(guildId: string): Promise<DiscordVoiceGuildRules> {
    return this.repository.guild(guildId);
  }

  setListening(place: { guildId: string; channelId?: string | undefined }, allowed: boolean): Promise<void> {
    return this.repository.setListening(place, allowed);
  }

  /** The thresholds a call starting now in the server uses. */
  async thresholds(guildId: string): Promise<TurnThresholds> {
    const rules = await this.repository.guild(guildId);
    return { silenceMs: rules.silenceMs ?? this.defaults.silenceMs, minimumSpeechMs: rules.minimumSpeechMs ?? this.defaults.minimumSpeechMs };
  }

  /** Sets a server's thresholds within `TUNING_LIMITS` (null: back to the default); answers those now in force. */
  async tune(guildId: string, tuning: DiscordVoiceTuning): Promise<TurnThresholds> {
    for (const name of ['silenceMs', 'minimumSpeechMs'] as const) {
      const value = tuning[name];
      const { min, max } = TUNING_LIMITS[name];
      if (typeof value === 'number' && !(Number.isInteger(value) && value >= min && value <= max)) {
        throw new AppError('VALIDATION_FAILED', `${name === 'silenceMs' ? 'The silence' : 'The minimum speech'} must be a whole number of milliseconds from ${min} to ${max}.`, { details: { field: name } });
      }
    }
    await this.repository.tune(guildId, tuning);
    return this.thresholds(guildId);
  }

  /** Whether a member opted out with /voice ignore me (in any server, through any process). */
  ignores(discordUserId: string): Promise<boolean> {
    return this.repository.ignores(discordUserId);
  }

  setIgnored(discordUserId: string, ignored: boolean): Promise<void> {
    return this.repository.setIgnored(discordUserId, ignored);
  }
}
