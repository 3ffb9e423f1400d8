/**
 * One person's side of a voice call, from Opus packets to turns: their own Opus decoder (Opus
 * decoding keeps state between frames, so decoders are never shared between people), their own
 * voice activity detector and turn detector. The caller keys one listener per user id.
 */
import OpusScript from 'opusscript';
import type { PcmAudio } from '../core/ports.js';
import { DISCORD_CHANNELS, DISCORD_FRAME_SAMPLES, DISCORD_SAMPLE_RATE } from './discord-frames.js';
import { claimOpusInstance, releaseOpusInstance } from './opus-memory.js';
import { resample } from './resample.js';
import { SPEECH_TO_TEXT_SAMPLE_RATE, TurnDetector, type TurnEvent, type TurnOptions } from './turn-detector.js';
import { downmixStereo, type VoiceActivityDetector } from './voice-activity.js';

export { SPEECH_TO_TEXT_SAMPLE_RATE };

export class SpeakerListener {
  readonly turns: TurnDetector;
  readonly #decoder: OpusScript;
  readonly #voiceActivity: VoiceActivityDetector;
  /** Decoded mono samples not yet a whole 20 ms frame (clients may send 10, 40 or 60 ms packets). */
  #pending = new Int16Array(0);
  #closed = false;
  /** Packets the decoder refused; they are skipped as if lost. */
  undecodable = 0;

  /**
   * Takes ownership of `voiceActivity` (closed with the listener). Throws `OpusReserveFull` (and
   * closes `voiceActivity`) when the process already holds as many Opus instances as it reserved.
   */
  constructor(voiceActivity: VoiceActivityDetector, options: Partial<TurnOptions> = {}) {
    if (!claimOpusInstance()) {
      voiceActivity.close();
      throw new OpusReserveFull();
    }
    this.#decoder = new OpusScript(DISCORD_SAMPLE_RATE, DISCORD_CHANNELS, OpusScript.Application.VOIP);
    this.#voiceActivity = voiceActivity;
    this.turns = new TurnDetector(voiceActivity, options);
  }

  /** One received Opus packet, at clock time `now`. */
  receive(packet: Uint8Array, now: number): TurnEvent[] {
    if (this.#closed) return [];
    let interleaved: Buffer;
    try {
      interleaved = this.#decoder.decode(Buffer.from(packet.buffer, packet.byteOffset, packet.byteLength));
    } catch {
      this.undecodable++;
      return this.turns.tick(now);
    }
    // An Int16Array view needs an even offset; a pooled Buffer usually has one, else copy.
    const bytes = interleaved.byteOffset % 2 === 0 ? interleaved : Buffer.from(interleaved);
    const samples = new Int16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >> 1);
    const mono = downmixStereo(samples);
    const joined = new Int16Array(this.#pending.length + mono.length);
    joined.set(this.#pending);
    joined.set(mono, this.#pending.length);
    const events: TurnEvent[] = [];
    let start = 0;
    for (; start + DISCORD_FRAME_SAMPLES <= joined.length; start += DISCORD_FRAME_SAMPLES) {
      events.push(...this.turns.push(joined.slice(start, start + DISCORD_FRAME_SAMPLES), now));
    }
    this.#pending = joined.slice(start);
    return events;
  }

  tick(now: number): TurnEvent[] {
    return this.#closed ? [] : this.turns.tick(now);
  }

  /** Ends listening: a turn under way is returned if long enough; the decoder is freed. */
  close(now: number): TurnEvent[] {
    if (this.#closed) return [];
    const events = this.turns.flush(now);
    this.#closed = true;
    this.#decoder.delete();
    releaseOpusInstance();
    this.#voiceActivity.close();
    return events;
  }
}

/** One more decoder would grow the Opus memory the live ones share and break them all. */
export class OpusReserveFull extends Error {
  override readonly name = 'OpusReserveFull';
  constructor() {
    super('as many Opus decoders are alive as this process reserved memory for');
  }
}

/**
 * Any audio as speech-to-text wants it: 16 kHz mono, band-limited. A call's turns come with
 * theirs already made, frame by frame (`Turn.speech`); this converts a whole recording at once.
 */
export function speechToTextAudio(audio: PcmAudio): PcmAudio {
  return resample(audio, SPEECH_TO_TEXT_SAMPLE_RATE);
}
