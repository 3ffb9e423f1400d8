/**
 * A test user talking in a voice channel, as Discord relays it to the bot: op 5 Speaking maps the
 * user's SSRC when a stretch of talk starts, then one RTP packet per 20 ms frame (sequence +1,
 * timestamp +960, the clock running on through pauses), padded at the boundaries of talk and
 * carrying a one-byte header extension as Discord clients send them, five silence frames at the
 * end of each stretch, and nothing during pauses.
 */
import { setImmediate as nextTurn, setTimeout as delay } from 'node:timers/promises';
import { VoiceOpcodes } from 'discord-api-types/voice/v8';
import { FRAME_SAMPLES } from './audio-analysis.js';
import { encryptAes256GcmRtpSize, SILENCE_FRAME } from './rtp.js';
import type { PreparedSpeech } from './speech.js';
import type { VoiceSession } from './voice-session.js';

const FRAME_MS = 20;
/** A client stops transmitting after five silence frames. */
export const TRAILING_SILENCE_FRAMES = 5;
/** Padding on the first and last audio packet of a stretch; any size a receiver must strip. */
const BOUNDARY_PADDING = 7;
/** RFC 6464 audio level (one-byte form, id 1, one data byte): voice flag and level in -dBov. */
const AUDIO_LEVEL_EXTENSION = Buffer.from([0x10, 0x80 | 30]);
/** Packets sent in one go in burst mode before the event loop gets a turn (the bot may share it). */
const BURST_BATCH = 16;

/** How a user's client sends. */
export interface SpeakOptions {
  /** `realtime` (default): one frame per 20 ms; `burst`: as fast as the receiver reads them. */
  pace?: 'realtime' | 'burst';
  /** Send op 5 before talking (default true); false plays a rejoin after which Discord sent none. */
  announce?: boolean;
  /** Pad the first and last audio packet of each stretch (default true). */
  padding?: boolean;
  /** The audio-level header extension on every packet (default true). */
  headerExtension?: boolean;
  /**
   * With DAVE on, encrypt each frame end to end once the user's client has keys (default true);
   * false sends plain Opus into an end-to-end encrypted call, as a broken client would.
   */
  endToEnd?: boolean;
}

/** One stretch of talk as sent: the Opus frames before padding and encryption. */
export interface SpokenStretch {
  opus: Buffer[];
  /** Length of the speech itself, before the last frame was padded to 20 ms. */
  pcmMs: number;
  firstPacketAt: number;
  lastPacketAt: number;
  /** Audio frames that went out end-to-end encrypted (DAVE); 0 with DAVE off or before the user's client had keys. */
  endToEndFrames: number;
}

/** What `speak` sent. */
export interface SpokenSpeech {
  userId: string;
  ssrc: number;
  talk: SpokenStretch[];
  /** UDP packets sent to the bot, silence frames included (0 when the bot was not there). */
  packets: number;
  /** True when the user left the channel before the end, which stopped their client. */
  cutShort: boolean;
  /** In real time, the most a packet went out after its time: this process was busy (a client's machine is not). */
  maxLateMs: number;
}

/** What a speaker needs from the voice server. */
export interface SpeakerHost {
  /** The bot's voice sessions hearing a channel now: ready, with an address and a key. */
  listeners(guildId: string, channelId: string): VoiceSession[];
  /** The channel a user is in now, or null. */
  channelOf(guildId: string, userId: string): string | null;
  sendDatagram(packet: Buffer, address: { address: string; port: number }): void;
  changed(): void;
  /** The user's DAVE client, which encrypts their frames end to end; null with DAVE off. */
  endToEnd(guildId: string, userId: string): { encrypt(frame: Buffer): Buffer } | null;
}

/** One user's audio stream in one guild; its SSRC lasts until the user leaves voice there. */
export class Speaker {
  #sequence = Math.floor(Math.random() * 2 ** 16);
  #timestamp = Math.floor(Math.random() * 2 ** 32);
  #lastPacketAt: number | null = null;

  constructor(
    readonly guildId: string,
    readonly userId: string,
    readonly ssrc: number,
    readonly host: SpeakerHost,
  ) {}

  async say(channelId: string, parts: readonly PreparedSpeech[], options: SpeakOptions = {}): Promise<SpokenSpeech> {
    const spoken: SpokenSpeech = { userId: this.userId, ssrc: this.ssrc, talk: [], packets: 0, cutShort: false, maxLateMs: 0 };
    for (const part of parts) {
      if (part.kind === 'pause') {
        // The scripted pause is real time even in burst mode: what the receiver makes of silence is the point.
        await delay(part.pauseMs);
        continue;
      }
      if (!(await this.#talk(channelId, part.opus, part.pcmMs, options, spoken))) {
        spoken.cutShort = true;
        break;
      }
    }
    return spoken;
  }

  async #talk(channelId: string, opus: Buffer[], pcmMs: number, options: SpeakOptions, spoken: SpokenSpeech): Promise<boolean> {
    // RTP timestamps are the sender's sampling clock: a pause advances them though nothing was sent.
    if (this.#lastPacketAt !== null) this.#timestamp += FRAME_SAMPLES * Math.max(0, Math.round((performance.now() - this.#lastPacketAt) / FRAME_MS) - 1);
    if (options.announce !== false) this.#announce(channelId);
    const frames = [...opus, ...Array.from({ length: TRAILING_SILENCE_FRAMES }, () => SILENCE_FRAME)];
    const stretch: SpokenStretch = { opus, pcmMs, firstPacketAt: performance.now(), lastPacketAt: performance.now(), endToEndFrames: 0 };
    spoken.talk.push(stretch);
    const startedAt = performance.now();
    for (const [index, frame] of frames.entries()) {
      if (this.host.channelOf(this.guildId, this.userId) !== channelId) return false;
      const boundary = index === 0 || index === opus.length - 1;
      // End-to-end encryption happens once, in the sender's client; the SFU relays the same frame to everyone.
      const client = options.endToEnd === false ? null : this.host.endToEnd(this.guildId, this.userId);
      const payload = client?.encrypt(frame) ?? frame;
      if (index < opus.length && payload !== frame) stretch.endToEndFrames += 1;
      const sentTo = this.#send(channelId, payload, options.padding !== false && boundary ? BOUNDARY_PADDING : 0, options.headerExtension !== false);
      spoken.packets += sentTo;
      stretch.lastPacketAt = this.#lastPacketAt = performance.now();
      this.#sequence += 1;
      this.#timestamp += FRAME_SAMPLES;
      if (options.pace === 'burst') {
        if ((index + 1) % BURST_BATCH === 0) await nextTurn();
      } else {
        // Scheduled on absolute times, as clients do, so a late timer does not stretch the speech.
        spoken.maxLateMs = Math.max(spoken.maxLateMs, performance.now() - (startedAt + index * FRAME_MS));
        await delay(Math.max(0, startedAt + (index + 1) * FRAME_MS - performance.now()));
      }
    }
    this.host.changed();
    return true;
  }

  /** Op 5 to each listening session that has not had this SSRC; sessions joining mid-stretch get none. */
  #announce(channelId: string): void {
    for (const session of this.host.listeners(this.guildId, channelId)) {
      if (session.announced.has(this.ssrc)) continue;
      session.announced.add(this.ssrc);
      session.sendSequenced(VoiceOpcodes.Speaking, { user_id: this.userId, ssrc: this.ssrc, speaking: 1 });
    }
  }

  /** Encrypts the frame for every listening session with its own key and counter; returns how many. */
  #send(channelId: string, opus: Buffer, padding: number, headerExtension: boolean): number {
    let sent = 0;
    for (const session of this.host.listeners(this.guildId, channelId)) {
      const { secretKey, clientAddress } = session.record;
      if (secretKey === null || clientAddress === null) continue;
      const packet = encryptAes256GcmRtpSize(
        { sequence: this.#sequence, timestamp: this.#timestamp, ssrc: this.ssrc, opus, padding, extension: headerExtension ? AUDIO_LEVEL_EXTENSION : null, counter: session.outgoingCounter++ },
        secretKey,
      );
      this.host.sendDatagram(packet, clientAddress);
      sent += 1;
    }
    return sent;
  }
}
