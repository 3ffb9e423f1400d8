import { reserveOpusMemory } from '../../audio/opus-memory.js';
import { Readable } from 'node:stream';
import {
  type AudioPlayer,
  AudioPlayerStatus,
  type AudioResource,
  NoSubscriberBehavior,
  StreamType,
  type VoiceConnection,
  VoiceConnectionStatus,
  createAudioPlayer,
  createAudioResource,
  entersState,
  getVoiceConnection,
  joinVoiceChannel,
} from '@discordjs/voice';
import type { Guild } from 'discord.js';
import { AppError } from '../../core/errors.js';
import type { Logger, PcmAudio } from '../../core/ports.js';
import { DiscordFramer } from '../../audio/discord-frames.js';

export interface VoicePlaybackOptions {
  /** Leave a voice channel after this long with nothing to play. */
  idleMs: number;
  /** End a resource that has played nothing new for this long. */
  stallMs: number;
  /** How long joining (or rejoining) a voice channel may take. */
  joinTimeoutMs: number;
  /**
   * Whether a voice call (/voice talk) holds, or is taking, the guild's voice. Discord gives a
   * bot one voice connection per guild: joining it here would deafen the call and unhook its player.
   */
  heldByCall?: (guildId: string) => boolean;
}

interface QueuedSpeech {
  channelId: string;
  queuedAt: number;
  audio: () => AsyncIterable<PcmAudio>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

interface GuildVoice {
  guild: Guild;
  connection: VoiceConnection | undefined;
  channelId: string | undefined;
  player: AudioPlayer;
  queue: QueuedSpeech[];
  playing: boolean;
  /** Set when the bot itself stops the player, so the stop is not taken for a stall. */
  stopping: boolean;
  idleTimer: NodeJS.Timeout | undefined;
}

/**
 * Speech in voice channels, one queue per guild: requests play in order, the bot joins (or
 * moves to) the requester's channel for each, and leaves when idle or alone. A dropped
 * connection fails what was queued and is forgotten, so the next request joins afresh; a
 * resource that stops making progress is ended rather than left hanging.
 */
export class VoicePlayback {
  readonly #guilds = new Map<string, GuildVoice>();
  /** Connections whose drops are already being watched. */
  readonly #watched = new WeakSet<VoiceConnection>();

  constructor(
    private readonly logger: Logger,
    private readonly options: VoicePlaybackOptions,
  ) {}

  /** Queues speech for `channelId`; resolves once it has been played to the end. */
  play(guild: Guild, channelId: string, audio: () => AsyncIterable<PcmAudio>): Promise<void> {
    const state = this.#state(guild);
    clearTimeout(state.idleTimer);
    return new Promise<void>((resolve, reject) => {
      state.queue.push({ channelId, queuedAt: Date.now(), audio, resolve, reject });
      if (!state.playing) void this.#drain(state);
    });
  }

  /** How many requests are waiting in a guild, the one playing included. */
  pending(guildId: string): number {
    const state = this.#guilds.get(guildId);
    return state ? state.queue.length + (state.playing ? 1 : 0) : 0;
  }

  /** Stops what plays and drops what waits; returns whether anything was stopped. */
  stop(guildId: string): boolean {
    const state = this.#guilds.get(guildId);
    if (!state || (!state.playing && state.queue.length === 0)) return false;
    for (const item of state.queue.splice(0)) item.reject(new AppError('CONFLICT', 'Stopped with /voice stop.'));
    state.stopping = true;
    state.player.stop(true);
    return true;
  }

  /** Leaves the guild's voice channel; returns whether the bot was in one. */
  leave(guildId: string, reason = 'Left the voice channel.'): boolean {
    const state = this.#guilds.get(guildId);
    if (!state) return false;
    this.#guilds.delete(guildId);
    clearTimeout(state.idleTimer);
    for (const item of state.queue.splice(0)) item.reject(new AppError('CONFLICT', reason));
    state.stopping = true;
    state.player.stop(true);
    const wasConnected = state.connection !== undefined;
    if (state.connection) this.#release(state.guild.id, state.connection);
    return wasConnected;
  }

  /** Called when someone's voice state changes: leaves a channel the bot is alone in. */
  leaveIfAlone(guild: Guild): void {
    const state = this.#guilds.get(guild.id);
    if (!state?.channelId) return;
    const channel = guild.channels.cache.get(state.channelId);
    const humans = channel?.isVoiceBased() ? channel.members.filter((member) => !member.user.bot).size : 0;
    if (humans === 0) this.leave(guild.id, 'Everyone left the voice channel.');
  }

  /** Leaves every channel (shutdown). */
  leaveAll(): void {
    for (const guildId of [...this.#guilds.keys()]) this.leave(guildId);
  }

  #state(guild: Guild): GuildVoice {
    let state = this.#guilds.get(guild.id);
    if (!state) {
      // A busy moment (another guild's sentence being resampled) may leave a frame unready; up to
      // a second of misses is a short gap to the listener rather than the end of the speech.
      const player = createAudioPlayer({ behaviors: { noSubscriber: NoSubscriberBehavior.Pause, maxMissedFrames: 50 } });
      player.on('error', (error) => this.logger.warn({ err: error, guildId: guild.id }, 'audio player error'));
      state = { guild, connection: undefined, channelId: undefined, player, queue: [], playing: false, stopping: false, idleTimer: undefined };
      this.#guilds.set(guild.id, state);
    }
    return state;
  }

  async #drain(state: GuildVoice): Promise<void> {
    state.playing = true;
    for (let item = state.queue.shift(); item; item = state.queue.shift()) {
      try {
        await this.#connect(state, item.channelId);
        await this.#playOne(state, item.audio);
        item.resolve();
      } catch (error) {
        item.reject(error);
      }
    }
    state.playing = false;
    if (this.#guilds.get(state.guild.id) === state) {
      state.idleTimer = setTimeout(() => this.leave(state.guild.id, 'Left after being idle.'), this.options.idleMs);
      state.idleTimer.unref();
    }
  }

  /** Destroys a connection of ours, unless it is already gone or no longer ours (a call holds the guild's voice). */
  #release(guildId: string, connection: VoiceConnection): void {
    if (connection.state.status === VoiceConnectionStatus.Destroyed) return;
    if (getVoiceConnection(guildId) !== connection || this.options.heldByCall?.(guildId)) return;
    connection.destroy();
  }

  async #connect(state: GuildVoice, channelId: string): Promise<void> {
    const current = state.connection;
    // One owner of a guild's voice at a time: while a call holds it, speech from elsewhere
    // (/speak, a followed thread) is not played; joinVoiceChannel would take over the call's connection.
    const other = getVoiceConnection(state.guild.id);
    if (this.options.heldByCall?.(state.guild.id) || (other && other !== current)) {
      throw new AppError('CONFLICT', 'A voice call holds my voice in this server; this is not spoken over it.');
    }
    if (current && state.channelId === channelId && current.state.status === VoiceConnectionStatus.Ready) return;
    // Before the first encoder of any guild's playback exists (see opus-memory.ts).
    reserveOpusMemory();
    // Joining again also revives a connection Discord dropped (joinVoiceChannel rejoins it).
    const connection = joinVoiceChannel({
      channelId,
      guildId: state.guild.id,
      adapterCreator: state.guild.voiceAdapterCreator,
      selfDeaf: true,
    });
    state.connection = connection;
    state.channelId = channelId;
    connection.subscribe(state.player);
    if (!this.#watched.has(connection)) {
      this.#watched.add(connection);
      connection.on(VoiceConnectionStatus.Disconnected, () => {
        const droppedAt = Date.now();
        // A move or a resumable drop recovers on its own; otherwise the connection is given up,
        // what waited fails, and the next request joins afresh.
        void Promise.race([
          entersState(connection, VoiceConnectionStatus.Signalling, 5_000),
          entersState(connection, VoiceConnectionStatus.Connecting, 5_000),
        ]).catch(() => {
          if (state.connection === connection && connection.state.status === VoiceConnectionStatus.Disconnected) {
            this.#dropped(state, connection, droppedAt);
          }
        });
      });
    }
    try {
      await entersState(connection, VoiceConnectionStatus.Ready, this.options.joinTimeoutMs);
    } catch (error) {
      this.leave(state.guild.id, 'Could not join the voice channel.');
      throw joinTimedOut(channelId, this.options.joinTimeoutMs, error);
    }
  }

  /**
   * Gives up a dropped connection: what played and what was asked before the drop fail with
   * that reason; requests made since stay queued and join afresh.
   */
  #dropped(state: GuildVoice, connection: VoiceConnection, droppedAt: number): void {
    const reason = new AppError('ENGINE_UNAVAILABLE', 'The voice connection dropped.');
    for (const item of state.queue.filter((entry) => entry.queuedAt <= droppedAt)) item.reject(reason);
    state.queue = state.queue.filter((entry) => entry.queuedAt > droppedAt);
    state.connection = undefined;
    state.channelId = undefined;
    this.#release(state.guild.id, connection);
    state.stopping = true;
    state.player.stop(true);
  }

  async #playOne(state: GuildVoice, audio: () => AsyncIterable<PcmAudio>): Promise<void> {
    const progress = { complete: false };
    const resource = createAudioResource(Readable.from(discordFrames(audio(), progress)), { inputType: StreamType.Raw });
    state.stopping = false;
    state.player.play(resource);
    const stalled = new AppError('ENGINE_TIMEOUT', 'The speech stopped coming from the speech engine, so I ended it.');
    await new Promise<void>((resolve, reject) => {
      let lastProgress = -1;
      let stalledSince = Date.now();
      const watchdog = setInterval(() => {
        if (resource.playbackDuration !== lastProgress) {
          lastProgress = resource.playbackDuration;
          stalledSince = Date.now();
        } else if (Date.now() - stalledSince > this.options.stallMs) {
          finish(stalled);
          state.player.stop(true);
        }
      }, 250);
      const finish = (error?: unknown) => {
        clearInterval(watchdog);
        state.player.off('stateChange', onChange);
        state.player.off('error', onError);
        if (error) reject(error);
        else resolve();
      };
      const onChange = (_old: unknown, next: { status: AudioPlayerStatus; resource?: AudioResource }) => {
        if (next.status !== AudioPlayerStatus.Idle) return;
        // The player also goes idle when audio stops arriving (missed frames), and then calls
        // the resource ended too: only our own stream knows whether all the speech was made.
        if (progress.complete || state.stopping) finish();
        else finish(stalled);
        if (!progress.complete) resource.playStream.destroy();
      };
      const onError = (error: Error) => finish(new AppError('ENGINE_FAILED', `Playback failed: ${error.message}`, { cause: error }));
      state.player.on('stateChange', onChange);
      state.player.on('error', onError);
    });
  }
}

/** What a voice channel the bot could not join in time is told as (playback and calls alike). */
export function joinTimedOut(channelId: string, timeoutMs: number, cause: unknown): AppError {
  return new AppError('ENGINE_UNAVAILABLE', `I could not join <#${channelId}> within ${timeoutMs / 1000} s; check that I may Connect and Speak there.`, { cause });
}

/** Samples converted at a time: a whole sentence at once would hold the event loop for tens of ms. */
const conversionSamples = 4096;

/**
 * Speech pieces as Discord's raw input: 48 kHz stereo s16le, 20 ms at a time, as they are made.
 * Each piece is converted in small slices as the player asks for audio, so the work spreads
 * between the 20 ms frames of every guild instead of stalling them.
 */
async function* discordFrames(pieces: AsyncIterable<PcmAudio>, progress: { complete: boolean }): AsyncGenerator<Buffer> {
  const framer = new DiscordFramer();
  for await (const piece of pieces) {
    for (let start = 0; start < piece.samples.length; start += conversionSamples) {
      yield* framer.push({ sampleRate: piece.sampleRate, samples: piece.samples.subarray(start, start + conversionSamples) });
    }
  }
  yield* framer.end();
  progress.complete = true;
}
