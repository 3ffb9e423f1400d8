/**
 * Speech as a Discord voice message: one Ogg Opus file (48 kHz mono, 20 ms frames), its
 * `duration_secs` and its `waveform` (base64 of up to 256 one-byte amplitudes), which the
 * message's attachment metadata carries next to the `IS_VOICE_MESSAGE` flag.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import OpusScript from 'opusscript';
import type { PcmAudio } from '../core/ports.js';
import { OGG_OPUS_GRANULE_RATE, OPUS_PRE_SKIP, muxOggOpus } from './ogg-opus.js';
import { Resampler } from './resample.js';

export const VOICE_MESSAGE_MIME_TYPE = 'audio/ogg';
export const VOICE_MESSAGE_FILENAME = 'voice-message.ogg';
/** Discord draws at most 256 bars. */
export const MAXIMUM_WAVEFORM_SAMPLES = 256;
/** One bar per 100 ms, as Discord's own clients record them, until the 256 are used. */
const WAVEFORM_SECONDS_PER_SAMPLE = 0.1;
const FRAME_SAMPLES = (OGG_OPUS_GRANULE_RATE * 20) / 1000;
/** Speech needs no more; Discord's own voice messages are about this rate. */
const DEFAULT_BITRATE = 32_000;
const OPUS_SET_BITRATE = 4002;

export interface VoiceMessageAudio {
  /** The Ogg Opus file to upload. */
  file: Uint8Array;
  mimeType: typeof VOICE_MESSAGE_MIME_TYPE;
  filename: typeof VOICE_MESSAGE_FILENAME;
  /** The attachment's `duration_secs`: the speech's own length, not the padded frames'. */
  durationSeconds: number;
  /** The attachment's `waveform`: base64 of the amplitude bars. */
  waveform: string;
}

export interface VoiceMessageOptions {
  /** Opus bitrate in bits per second; default 32 000. */
  bitrate?: number;
}

export async function encodeVoiceMessage(pcm: PcmAudio, options: VoiceMessageOptions = {}): Promise<VoiceMessageAudio> {
  if (!(pcm.sampleRate > 0)) throw new RangeError(`a voice message needs a sample rate, not ${pcm.sampleRate}`);
  const durationSeconds = pcm.samples.length / pcm.sampleRate;
  const { packets, totalSamples } = await encodeOpus(pcm, options.bitrate ?? DEFAULT_BITRATE);
  const file = muxOggOpus(packets, { channels: 1, inputSampleRate: pcm.sampleRate, samplesPerPacket: FRAME_SAMPLES, totalSamples });
  return {
    file,
    mimeType: VOICE_MESSAGE_MIME_TYPE,
    filename: VOICE_MESSAGE_FILENAME,
    durationSeconds,
    waveform: Buffer.from(waveformOf(pcm)).toString('base64'),
  };
}

/**
 * 20 ms Opus frames of the speech at 48 kHz, the last padded with silence. The input is
 * resampled and encoded a second at a time with a turn of the event loop between, so a minute
 * of speech does not stall voice playback (a frame each 20 ms) in every guild meanwhile.
 */
async function encodeOpus(pcm: PcmAudio, bitrate: number): Promise<{ packets: Uint8Array[]; totalSamples: number }> {
  const resampler = pcm.sampleRate === OGG_OPUS_GRANULE_RATE ? undefined : new Resampler(pcm.sampleRate, OGG_OPUS_GRANULE_RATE);
  const encoder = new OpusScript(OGG_OPUS_GRANULE_RATE, 1, OpusScript.Application.VOIP);
  const packets: Uint8Array[] = [];
  const frame = Buffer.alloc(FRAME_SAMPLES * 2);
  let pending = new Int16Array(0);
  let totalSamples = 0;
  const encode = (samples: Int16Array, final: boolean) => {
    totalSamples += samples.length;
    // The encoder's output lags its input by its lookahead (the pre-skip a decoder drops at the
    // start): the last samples come out only after that much more input, so silence follows them.
    const flush = final ? OPUS_PRE_SKIP : 0;
    const joined = new Int16Array(pending.length + samples.length + flush);
    joined.set(pending);
    joined.set(samples, pending.length);
    let start = 0;
    for (; start + FRAME_SAMPLES <= joined.length || (final && start < joined.length); start += FRAME_SAMPLES) {
      frame.fill(0);
      const part = joined.subarray(start, start + FRAME_SAMPLES);
      for (let index = 0; index < part.length; index += 1) frame.writeInt16LE(part[index] ?? 0, index * 2);
      // Copied out: opusscript's answer is a view of its WebAssembly memory, reused by the next call.
      packets.push(Uint8Array.from(encoder.encode(frame, FRAME_SAMPLES)));
    }
    pending = joined.slice(Math.min(start, joined.length));
  };
  try {
    encoder.encoderCTL(OPUS_SET_BITRATE, bitrate);
    for (let start = 0; start < pcm.samples.length; start += pcm.sampleRate) {
      const slice = pcm.samples.subarray(start, start + pcm.sampleRate);
      encode(resampler ? resampler.push(slice) : slice, false);
      await nextTurn();
    }
    encode(resampler ? resampler.flush() : new Int16Array(0), true);
    return { packets, totalSamples };
  } finally {
    encoder.delete();
  }
}

/**
 * One byte per 100 ms (at most 256 bars, each then spanning more), each the root mean square
 * of its stretch scaled so the loudest bar is 255: Discord draws the bars relative to each
 * other, and quiet speech would otherwise show as a flat line.
 */
export function waveformOf(pcm: PcmAudio): Uint8Array {
  const { samples } = pcm;
  const durationSeconds = samples.length / pcm.sampleRate;
  const count = Math.min(MAXIMUM_WAVEFORM_SAMPLES, Math.max(1, Math.round(durationSeconds / WAVEFORM_SECONDS_PER_SAMPLE)));
  const levels = new Float64Array(count);
  for (let bar = 0; bar < count; bar += 1) {
    const start = Math.floor((bar * samples.length) / count);
    const end = Math.floor(((bar + 1) * samples.length) / count);
    let sum = 0;
    for (let index = start; index < end; index += 1) sum += (samples[index] ?? 0) ** 2;
    levels[bar] = end > start ? Math.sqrt(sum / (end - start)) : 0;
  }
  const loudest = Math.max(...levels);
  return Uint8Array.from(levels, (level) => (loudest === 0 ? 0 : Math.round((255 * level) / loudest)));
}
