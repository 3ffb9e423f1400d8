/**
 * The main-gateway half of voice: who is in which voice channel, op 4 from the bot, and the two
 * dispatches Discord answers it with. VOICE_STATE_UPDATE goes first and VOICE_SERVER_UPDATE second
 * (the other order leaves @discordjs/voice stuck in Signalling); each join gets a fresh voice token.
 */
import { randomBytes } from 'node:crypto';
import { ChannelType, GatewayIntentBits, type APIBaseVoiceState, type GatewayVoiceState } from 'discord-api-types/v10';
import type { FakeContext } from '../discord/context.js';
import type { VoiceExtension } from '../discord/fake-discord.js';
import { memberObject } from '../discord/serialize.js';

/** Someone in a voice channel. */
export interface VoiceStateRecord {
  guildId: string;
  userId: string;
  channelId: string;
  /** The gateway session id for the bot; a made-up one for test users. */
  sessionId: string;
  selfDeaf: boolean;
  selfMute: boolean;
}

/** An op 4 the bot sent, as received. */
export interface VoiceStateRequest {
  at: number;
  guildId: string;
  channelId: string | null;
  selfDeaf: boolean;
  selfMute: boolean;
  gatewaySessionId: string;
}

/** What a voice server accepts in identify: the last VOICE_SERVER_UPDATE of a guild and its state. */
export interface VoiceGrant {
  guildId: string;
  userId: string;
  channelId: string;
  sessionId: string;
  token: string;
}

/** What the voice server is told about channel membership, to send ops 11 and 13 or end sessions. */
export interface VoiceMembershipListener {
  /** `userId` moved from `from` to `to` (either may be null) in a guild. */
  moved(guildId: string, userId: string, from: string | null, to: string | null): void;
}

/** Voice states of every guild; plugged into the fake Discord as its `VoiceExtension`. */
export class VoiceStates implements VoiceExtension {
  readonly requests: VoiceStateRequest[] = [];
  readonly context: FakeContext;
  readonly #states = new Map<string, Map<string, VoiceStateRecord>>();
  readonly #grants = new Map<string, VoiceGrant>();
  readonly #endpoint: () => string;
  readonly #listener: VoiceMembershipListener;

  constructor(context: FakeContext, endpoint: () => string, listener: VoiceMembershipListener) {
    this.context = context;
    this.#endpoint = endpoint;
    this.#listener = listener;
  }

  /** Op 4 from the bot's gateway session. Payloads for unknown guilds or non-voice channels are ignored, as Discord does. */
  voiceStateUpdate(data: Record<string, unknown>, gatewaySessionId: string): void {
    const guildId = String(data['guild_id']);
    const channelId = typeof data['channel_id'] === 'string' ? data['channel_id'] : null;
    const request = { at: performance.now(), guildId, channelId, selfDeaf: data['self_deaf'] === true, selfMute: data['self_mute'] === true, gatewaySessionId };
    this.requests.push(request);
    const botId = this.context.bot.id;
    if (!this.context.state.guilds.has(guildId)) return this.context.state.changed();
    if (channelId === null) {
      this.#grants.delete(guildId);
      this.#set(guildId, botId, null, gatewaySessionId, request);
      return;
    }
    if (!this.#isVoiceChannel(guildId, channelId)) return this.context.state.changed();
    this.#set(guildId, botId, channelId, gatewaySessionId, request);
    const grant: VoiceGrant = { guildId, userId: botId, channelId, sessionId: gatewaySessionId, token: randomBytes(8).toString('hex') };
    this.#grants.set(guildId, grant);
    this.context.gateway.dispatch('VOICE_SERVER_UPDATE', { token: grant.token, guild_id: guildId, endpoint: this.#endpoint() }, { intents: 0 });
    this.context.state.changed();
  }

  /** Puts a test user in a voice channel (or moves them), dispatching VOICE_STATE_UPDATE. */
  join(userId: string, channelId: string, flags: { selfDeaf?: boolean; selfMute?: boolean } = {}): void {
    const guildId = this.context.state.channels.get(channelId)?.guildId ?? null;
    if (guildId === null || !this.#isVoiceChannel(guildId, channelId)) throw new Error(`fake voice: ${channelId} is not a guild voice channel`);
    if (!this.context.state.guilds.get(guildId)?.members.has(userId)) throw new Error(`fake voice: ${userId} is not a member of ${guildId}`);
    const sessionId = this.state(guildId, userId)?.sessionId ?? randomBytes(16).toString('hex');
    this.#set(guildId, userId, channelId, sessionId, { selfDeaf: flags.selfDeaf ?? false, selfMute: flags.selfMute ?? false });
    this.context.state.changed();
  }

  /** Takes a user out of voice in a guild (VOICE_STATE_UPDATE with `channel_id: null`). */
  leave(guildId: string, userId: string): void {
    const current = this.state(guildId, userId);
    if (current === undefined) return;
    if (userId === this.context.bot.id) this.#grants.delete(guildId);
    this.#set(guildId, userId, null, current.sessionId, current);
    this.context.state.changed();
  }

  state(guildId: string, userId: string): VoiceStateRecord | undefined {
    return this.#states.get(guildId)?.get(userId);
  }

  /** User ids in a voice channel. */
  occupants(guildId: string, channelId: string): string[] {
    return [...(this.#states.get(guildId)?.values() ?? [])].filter((state) => state.channelId === channelId).map((state) => state.userId);
  }

  grant(guildId: string): VoiceGrant | undefined {
    return this.#grants.get(guildId);
  }

  /** GUILD_CREATE's `voice_states`: Discord leaves out `guild_id` there. */
  guildVoiceStates(guildId: string): APIBaseVoiceState[] {
    return [...(this.#states.get(guildId)?.values() ?? [])].map((state) => {
      const { guild_id: _guildId, ...rest } = this.#wireState(state.guildId, state.userId, state.channelId, state);
      return rest;
    });
  }

  #isVoiceChannel(guildId: string, channelId: string): boolean {
    const channel = this.context.state.channels.get(channelId);
    return channel?.guildId === guildId && (channel.type === ChannelType.GuildVoice || channel.type === ChannelType.GuildStageVoice);
  }

  #set(guildId: string, userId: string, channelId: string | null, sessionId: string, flags: { selfDeaf: boolean; selfMute: boolean }): void {
    let guild = this.#states.get(guildId);
    if (guild === undefined) this.#states.set(guildId, (guild = new Map()));
    const before = guild.get(userId)?.channelId ?? null;
    if (channelId === null) guild.delete(userId);
    else guild.set(userId, { guildId, userId, channelId, sessionId, selfDeaf: flags.selfDeaf, selfMute: flags.selfMute });
    const wire = this.#wireState(guildId, userId, channelId, { sessionId, ...flags });
    // Discord sends voice states only to sessions with the GuildVoiceStates intent, the bot's own included.
    this.context.gateway.dispatch('VOICE_STATE_UPDATE', wire, { intents: GatewayIntentBits.GuildVoiceStates });
    if (before !== channelId) this.#listener.moved(guildId, userId, before, channelId);
  }

  #wireState(guildId: string, userId: string, channelId: string | null, fields: { sessionId: string; selfDeaf: boolean; selfMute: boolean }): GatewayVoiceState {
    const guild = this.context.state.guilds.get(guildId);
    const member = guild === undefined ? undefined : memberObject(this.context.state, guild, userId);
    return {
      guild_id: guildId,
      channel_id: channelId,
      user_id: userId,
      ...(member === undefined ? {} : { member }),
      session_id: fields.sessionId,
      deaf: false,
      mute: false,
      self_deaf: fields.selfDeaf,
      self_mute: fields.selfMute,
      self_video: false,
      suppress: false,
      request_to_speak_timestamp: null,
    };
  }
}
