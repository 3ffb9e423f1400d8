/**
 * Voice for the fake Discord: the bot's real @discordjs/voice joins a voice channel, plays, and the
 * test asserts what a listener would have heard.
 *
 * ```ts
 * const discord = await startFakeDiscord();
 * const voice = await startFakeVoice(discord);        // trusts its certificate in this process
 * // client with GatewayIntentBits.GuildVoiceStates; joinVoiceChannel({ adapterCreator: guild.voiceAdapterCreator, … })
 * const heard = await voice.waitForAudio(guildId, (audio) => audio.durationMs >= 1000);
 * // and the other way: a test user talks to a bot that joined with selfDeaf: false
 * voice.joinVoice(user, channelId);
 * await voice.speak(user, [{ text: 'Hello there' }, { pauseMs: 800 }, { text: 'Still there?' }]);
 * ```
 */
import type { FakeDiscord } from '../discord/fake-discord.js';
import { waitForState } from '../discord/wait-for.js';
import { loopbackCertificate, trustCertificate } from './certificate.js';
import type { DaveGroupView } from './dave/dave-group.js';
import type { DaveOptions } from './dave/dave-service.js';
import type { SimulatedDaveMember } from './dave/simulated-member.js';
import { hear, type HeardAudio, type VoiceConnectionRecord } from './recording.js';
import type { SpeakOptions, SpokenSpeech } from './speaker.js';
import { SpeechPreparer, type Speech } from './speech.js';
import type { PcmAudio } from '../../../src/core/ports.js';
import { FakeVoiceServer } from './voice-server.js';
import { VoiceStates, type VoiceStateRecord, type VoiceStateRequest } from './voice-states.js';

export interface StartFakeVoiceOptions {
  /** Voice heartbeat interval sent in Hello; default 13,750 ms, what Discord sends. */
  heartbeatIntervalMs?: number;
  /** Trust the certificate in this process (default true); false when the bot runs in a child process. */
  trust?: boolean;
  /**
   * Negotiate DAVE end-to-end encryption (protocol version 1), as Discord does, and require it
   * (close code 4017 for a client offering none). Off by default: the session description then
   * says `dave_protocol_version: 0` and audio is plain Opus both ways.
   */
  dave?: boolean | DaveOptions;
}

/** How to drop a voice WebSocket. */
export interface VoiceDrop {
  /** Close code; default 4015 (voice server crashed), after which @discordjs/voice resumes. */
  code?: number;
  /** Cut the TCP connection without a close frame (the client sees 1006 and resumes). */
  abrupt?: boolean;
}

/** The running fake voice server and the voice states of the fake Discord it is plugged into. */
export interface FakeVoice {
  /** `127.0.0.1:PORT`, sent as VOICE_SERVER_UPDATE's `endpoint`. */
  readonly endpoint: string;
  /** The server's certificate, PEM; write it to a file for `NODE_EXTRA_CA_CERTS` of a child process. */
  readonly certificatePem: string;
  /** Every voice session so far, oldest first; a resume continues its session, a new identify starts one. */
  readonly connections: readonly VoiceConnectionRecord[];
  /** Every op 4 the bot sent, oldest first. */
  readonly voiceStateRequests: readonly VoiceStateRequest[];

  /** Puts a user in a voice channel (VOICE_STATE_UPDATE), or moves them there. */
  joinVoice(user: string | { id: string }, channelId: string, flags?: { selfDeaf?: boolean; selfMute?: boolean }): void;
  /** Takes a user out of voice in a guild (VOICE_STATE_UPDATE with `channel_id: null`). */
  leaveVoice(user: string | { id: string }, guildId: string): void;
  /** What a moderator's "Disconnect" does to the bot: its voice state goes null and the voice socket closes with 4014. */
  kickBot(guildId: string): void;
  voiceState(guildId: string, user: string | { id: string }): VoiceStateRecord | undefined;
  /** User ids in a voice channel. */
  occupants(guildId: string, channelId: string): string[];

  /** What a listener heard from the bot in a guild; `since` (`performance.now()` ms) skips older packets. */
  heard(guildId: string, options?: { since?: number }): HeardAudio;
  /** Resolves with `heard(guildId)` once the predicate holds, re-checked on every packet; rejects after `timeoutMs` (default 10 s). */
  waitForAudio(guildId: string, predicate: (heard: HeardAudio) => boolean, options?: { since?: number; timeoutMs?: number }): Promise<HeardAudio>;
  /** Resolves with the predicate's first truthy value, re-checked after every change; rejects after `timeoutMs` (default 10 s). */
  waitFor<T>(predicate: (voice: FakeVoice) => T | undefined | null | false, timeoutMs?: number): Promise<T>;

  /**
   * The user talks in the voice channel they are in (in `options.guildId`, or the one guild where
   * they are in voice): op 5 then RTP to the bot's sessions there, as Discord relays a client.
   * Resolves when the last packet is sent, with what was sent.
   */
  speak(user: string | { id: string }, speech: Speech | readonly Speech[], options?: SpeakOptions & { guildId?: string }): Promise<SpokenSpeech>;
  /** Encodes recordings to Opus now, so `speak` of them later sends at once (see SpeechPreparer.encodeAhead). */
  encodeAhead(recordings: readonly PcmAudio[]): void;
  /** espeak's mono PCM for `text`, the audio `speak({ text, voiceId })` sends. */
  synthesize(text: string, voiceId?: string): Promise<PcmAudio>;
  /** The SSRC a user's audio has (or will have) in a guild; it changes when they leave voice. */
  speakerSsrc(guildId: string, user: string | { id: string }): number;

  /** A voice channel's DAVE group as the gateway sees it (epoch, members, transitions, messages); undefined with DAVE off or before anyone joined it. */
  daveGroup(guildId: string, channelId: string): DaveGroupView | undefined;
  /** A test user's DAVE client (davey), while they are in a voice channel with DAVE on: its session, its behaviour, its problems. */
  daveMember(guildId: string, user: string | { id: string }): SimulatedDaveMember | undefined;

  /** Closes the guild's open voice WebSockets; returns how many. */
  dropVoiceConnection(guildId: string, drop?: VoiceDrop): number;
  close(): Promise<void>;
}

export type { HeardAudio, HeardPacket, HeardSegment, SpeakingEvent, VoiceConnectionRecord } from './recording.js';
export type { VoiceStateRecord, VoiceStateRequest } from './voice-states.js';
export type { SpeakOptions, SpokenSpeech, SpokenStretch } from './speaker.js';
export { TRAILING_SILENCE_FRAMES } from './speaker.js';
export type { Speech } from './speech.js';
export type { DaveGroupView, DaveTransition } from './dave/dave-group.js';
export type { DaveOptions } from './dave/dave-service.js';
export type { DaveEvent } from './dave/messages.js';
export type { DaveMemberBehaviour, SimulatedDaveMember } from './dave/simulated-member.js';
export { DEFAULT_SPEECH_VOICE } from './speech.js';
export { dominantFrequency, rootMeanSquare } from './audio-analysis.js';

const idOf = (user: string | { id: string }): string => (typeof user === 'string' ? user : user.id);

/**
 * Starts a voice server on 127.0.0.1 and plugs it into `discord`, whose gateway then answers op 4.
 * Voice states reach only clients with the GuildVoiceStates intent, as on Discord.
 */
export async function startFakeVoice(discord: FakeDiscord, options: StartFakeVoiceOptions = {}): Promise<FakeVoice> {
  const certificate = await loopbackCertificate();
  if (options.trust !== false) trustCertificate(certificate.cert);
  // The server and the voice states need each other: the states tell the server who moved, the
  // server asks the states for grants and occupants. Nothing reaches either before both exist.
  let server: FakeVoiceServer | undefined;
  const states = discord.installVoice(
    (context) => new VoiceStates(context, () => server?.endpoint ?? '', { moved: (guildId, userId, from, to) => server?.moved(guildId, userId, from, to) }),
  );
  server = await FakeVoiceServer.start({
    certificate,
    heartbeatIntervalMs: options.heartbeatIntervalMs ?? 13_750,
    dave: options.dave === true ? {} : options.dave === undefined || options.dave === false ? null : options.dave,
    botUserId: states.context.bot.id,
    grant: (guildId) => states.grant(guildId),
    occupants: (guildId, channelId) => states.occupants(guildId, channelId),
    channelOf: (guildId, userId) => states.state(guildId, userId)?.channelId ?? null,
    deafened: (guildId, userId) => states.state(guildId, userId)?.selfDeaf === true,
    changed: () => states.context.state.changed(),
  });
  return new RunningFakeVoice(server, states, certificate.cert);
}

class RunningFakeVoice implements FakeVoice {
  readonly certificatePem: string;
  readonly #server: FakeVoiceServer;
  readonly #states: VoiceStates;
  readonly #speech = new SpeechPreparer();

  constructor(server: FakeVoiceServer, states: VoiceStates, certificatePem: string) {
    this.#server = server;
    this.#states = states;
    this.certificatePem = certificatePem;
  }

  get endpoint(): string {
    return this.#server.endpoint;
  }

  get connections(): readonly VoiceConnectionRecord[] {
    return this.#server.connections;
  }

  get voiceStateRequests(): readonly VoiceStateRequest[] {
    return [...this.#states.requests];
  }

  joinVoice(user: string | { id: string }, channelId: string, flags?: { selfDeaf?: boolean; selfMute?: boolean }): void {
    this.#states.join(idOf(user), channelId, flags);
  }

  leaveVoice(user: string | { id: string }, guildId: string): void {
    this.#states.leave(guildId, idOf(user));
  }

  kickBot(guildId: string): void {
    this.#states.leave(guildId, this.#states.context.bot.id);
  }

  voiceState(guildId: string, user: string | { id: string }): VoiceStateRecord | undefined {
    const state = this.#states.state(guildId, idOf(user));
    return state === undefined ? undefined : { ...state };
  }

  occupants(guildId: string, channelId: string): string[] {
    return this.#states.occupants(guildId, channelId);
  }

  heard(guildId: string, options: { since?: number } = {}): HeardAudio {
    return hear(this.connections.filter((record) => record.guildId === guildId), options.since);
  }

  waitForAudio(guildId: string, predicate: (heard: HeardAudio) => boolean, options: { since?: number; timeoutMs?: number } = {}): Promise<HeardAudio> {
    return this.waitFor(() => {
      const heard = this.heard(guildId, options);
      return predicate(heard) ? heard : undefined;
    }, options.timeoutMs);
  }

  waitFor<T>(predicate: (voice: FakeVoice) => T | undefined | null | false, timeoutMs = 10_000): Promise<T> {
    return waitForState(this.#states.context.state, () => predicate(this), timeoutMs);
  }

  async speak(user: string | { id: string }, speech: Speech | readonly Speech[], options: SpeakOptions & { guildId?: string } = {}): Promise<SpokenSpeech> {
    const userId = idOf(user);
    const guildIds = options.guildId === undefined ? [...this.#states.context.state.guilds.keys()] : [options.guildId];
    const inVoice = guildIds.filter((guildId) => this.#states.state(guildId, userId) !== undefined);
    const guildId = inVoice[0];
    if (guildId === undefined || inVoice.length > 1) throw new Error(`fake voice: ${userId} must be in exactly one voice channel to speak (in ${inVoice.length}); pass guildId`);
    const prepared = await this.#speech.prepare(Array.isArray(speech) ? speech : [speech as Speech]);
    // Read again after synthesis: the user may have left meanwhile.
    const channelId = this.#states.state(guildId, userId)?.channelId;
    if (channelId === undefined) throw new Error(`fake voice: ${userId} left voice before speaking`);
    return this.#server.speaker(guildId, userId).say(channelId, prepared, options);
  }

  encodeAhead(recordings: readonly PcmAudio[]): void {
    this.#speech.encodeAhead(recordings);
  }

  synthesize(text: string, voiceId?: string): Promise<PcmAudio> {
    return this.#speech.synthesize(text, voiceId);
  }

  speakerSsrc(guildId: string, user: string | { id: string }): number {
    return this.#server.speaker(guildId, idOf(user)).ssrc;
  }

  daveGroup(guildId: string, channelId: string): DaveGroupView | undefined {
    return this.#server.dave?.existingGroup(guildId, channelId);
  }

  daveMember(guildId: string, user: string | { id: string }): SimulatedDaveMember | undefined {
    return this.#server.dave?.member(guildId, idOf(user));
  }

  dropVoiceConnection(guildId: string, drop: VoiceDrop = {}): number {
    return this.#server.drop(guildId, drop.code ?? 4015, drop.abrupt === true);
  }

  async close(): Promise<void> {
    await this.#speech.close();
    await this.#server.close();
  }
}
