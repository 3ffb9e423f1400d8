/**
 * Hearing what the bot sent: Opus frames decoded with opusscript (the encoder @discordjs/voice
 * itself falls back to) into 48 kHz stereo PCM, and the two measures tests assert on: loudness
 * (root mean square) and pitch (the strongest frequency, found with the Goertzel algorithm).
 */
import OpusScript from 'opusscript';

/** Discord voice is always 48 kHz stereo; @discordjs/voice encodes 20 ms frames of 960 samples. */
export const SAMPLE_RATE = 48_000;
export const CHANNELS = 2;
export const FRAME_SAMPLES = 960;

/** One Opus decoder per RTP stream: Opus frames depend on the frames before them. */
export class OpusFrameDecoder {
  readonly #decoder = new OpusScript(SAMPLE_RATE, CHANNELS, OpusScript.Application.AUDIO);

  /** Interleaved stereo samples of one frame, or the decoder's complaint. */
  decode(frame: Buffer): Int16Array | string {
    try {
      const bytes = this.#decoder.decode(frame);
      // Copy into a fresh, aligned buffer: opusscript's result may sit at any byte offset.
      const samples = new Int16Array(bytes.length / 2);
      for (let index = 0; index < samples.length; index += 1) samples[index] = bytes.readInt16LE(index * 2);
      return samples;
    } catch (error) {
      return `Opus decode failed: ${error instanceof Error ? error.message : String(error)}`;
    }
  }

  /** Frees the WebAssembly memory. */
  close(): void {
    this.#decoder.delete();
  }
}

/** Joins sample arrays end to end. */
export function concatenateSamples(parts: readonly Int16Array[]): Int16Array {
  let length = 0;
  for (const part of parts) length += part.length;
  const joined = new Int16Array(length);
  let offset = 0;
  for (const part of parts) {
    joined.set(part, offset);
    offset += part.length;
  }
  return joined;
}

/** Root mean square of the samples as a fraction of full scale: 0 silence, ~0.354 a sine at half scale. */
export function rootMeanSquare(samples: Int16Array): number {
  if (samples.length === 0) return 0;
  let sum = 0;
  for (const sample of samples) sum += sample * sample;
  return Math.sqrt(sum / samples.length) / 32_768;
}

/** Where to look for a pitch. */
export interface FrequencySearch {
  /** Interleaved channels in `samples`; default 2. */
  channels?: number;
  sampleRate?: number;
  minimumHz?: number;
  maximumHz?: number;
}

/**
 * The strongest frequency in the samples, to about 0.5 Hz: a coarse 5 Hz scan over a 0.1 s window
 * (whose main lobe is 20 Hz wide, so the scan cannot step over the peak), then a 0.5 Hz scan around
 * the best coarse step over up to one second. Returns 0 for silence.
 */
export function dominantFrequency(samples: Int16Array, search: FrequencySearch = {}): number {
  const channels = search.channels ?? CHANNELS;
  const sampleRate = search.sampleRate ?? SAMPLE_RATE;
  const mono = new Float64Array(Math.floor(samples.length / channels));
  for (let frame = 0; frame < mono.length; frame += 1) {
    let sum = 0;
    for (let channel = 0; channel < channels; channel += 1) sum += samples[frame * channels + channel] ?? 0;
    mono[frame] = sum / channels;
  }
  if (mono.every((value) => value === 0)) return 0;
  const middle = (length: number): Float64Array => {
    const size = Math.min(length, mono.length);
    const start = Math.floor((mono.length - size) / 2);
    return mono.subarray(start, start + size);
  };
  const coarse = strongest(middle(sampleRate / 10), search.minimumHz ?? 20, search.maximumHz ?? 8000, 5, sampleRate);
  return strongest(middle(sampleRate), coarse - 6, coarse + 6, 0.5, sampleRate);
}

function strongest(window: Float64Array, fromHz: number, toHz: number, stepHz: number, sampleRate: number): number {
  let best = Math.max(fromHz, 0);
  let bestPower = -1;
  for (let frequency = Math.max(fromHz, 0); frequency <= toHz; frequency += stepHz) {
    const power = goertzelPower(window, frequency, sampleRate);
    if (power > bestPower) {
      bestPower = power;
      best = frequency;
    }
  }
  return best;
}

/** Power of one frequency: a single DFT term, computed without an FFT. */
function goertzelPower(window: Float64Array, frequency: number, sampleRate: number): number {
  const coefficient = 2 * Math.cos((2 * Math.PI * frequency) / sampleRate);
  let previous = 0;
  let beforePrevious = 0;
  for (const sample of window) {
    const current = sample + coefficient * previous - beforePrevious;
    beforePrevious = previous;
    previous = current;
  }
  return previous * previous + beforePrevious * beforePrevious - coefficient * previous * beforePrevious;
}
