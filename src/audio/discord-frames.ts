/**
 * Turns mono speech at any rate into what Discord voice plays: 48 kHz stereo signed 16-bit
 * little-endian, in 20 ms frames of 3840 bytes, ready for an Opus encoder.
 */
import type { PcmAudio } from '../core/ports.js';
import { Resampler } from './resample.js';

export const DISCORD_SAMPLE_RATE = 48_000;
export const DISCORD_CHANNELS = 2;
export const DISCORD_FRAME_MS = 20;
/** Samples per channel in one frame. */
export const DISCORD_FRAME_SAMPLES = (DISCORD_SAMPLE_RATE * DISCORD_FRAME_MS) / 1000;
export const DISCORD_FRAME_BYTES = DISCORD_FRAME_SAMPLES * DISCORD_CHANNELS * 2;

/**
 * Frames a stream of mono pieces (for example what `SpeechEngine.stream` yields) for Discord.
 * One resampler runs across pieces of the same rate, so their joins stay smooth; a piece at a
 * new rate first finishes the old one. `end()` pads the last frame with silence.
 */
export class DiscordFramer {
  #resampler: Resampler | undefined;
  /** 48 kHz mono samples not yet framed (always fewer than one frame between calls). */
  #pending = new Int16Array(0);

  /** Takes the next piece; returns the frames now complete. */
  push(pcm: PcmAudio): Buffer[] {
    if (this.#resampler !== undefined && this.#resampler.inputRate !== pcm.sampleRate) this.#append(this.#resampler.flush());
    if (this.#resampler === undefined || this.#resampler.inputRate !== pcm.sampleRate) {
      this.#resampler = pcm.sampleRate === DISCORD_SAMPLE_RATE ? undefined : new Resampler(pcm.sampleRate, DISCORD_SAMPLE_RATE);
    }
    this.#append(this.#resampler ? this.#resampler.push(pcm.samples) : pcm.samples);
    return this.#takeFrames(false);
  }

  /** Ends the stream: the last frames, the final one padded to 20 ms. */
  end(): Buffer[] {
    if (this.#resampler !== undefined) this.#append(this.#resampler.flush());
    this.#resampler = undefined;
    return this.#takeFrames(true);
  }

  #append(samples: Int16Array): void {
    if (samples.length === 0) return;
    const joined = new Int16Array(this.#pending.length + samples.length);
    joined.set(this.#pending);
    joined.set(samples, this.#pending.length);
    this.#pending = joined;
  }

  #takeFrames(padLast: boolean): Buffer[] {
    const frames: Buffer[] = [];
    let start = 0;
    for (; start + DISCORD_FRAME_SAMPLES <= this.#pending.length; start += DISCORD_FRAME_SAMPLES) {
      frames.push(stereoFrame(this.#pending.subarray(start, start + DISCORD_FRAME_SAMPLES)));
    }
    if (padLast && start < this.#pending.length) {
      frames.push(stereoFrame(this.#pending.subarray(start)));
      start = this.#pending.length;
    }
    this.#pending = this.#pending.slice(start);
    return frames;
  }
}

/** All the Discord frames of one piece of audio, the last padded with silence. */
export function toDiscordFrames(pcm: PcmAudio): Buffer[] {
  const framer = new DiscordFramer();
  return [...framer.push(pcm), ...framer.end()];
}

/** One 3840-byte frame: each mono sample twice (left, right); missing samples are silence. */
function stereoFrame(mono: Int16Array): Buffer {
  const frame = Buffer.alloc(DISCORD_FRAME_BYTES);
  for (let index = 0; index < mono.length; index++) {
    const sample = mono[index] ?? 0;
    frame.writeInt16LE(sample, index * 4);
    frame.writeInt16LE(sample, index * 4 + 2);
  }
  return frame;
}
