/**
 * MP3 in and out: lamejs (pure JS) encodes, mpg123 (WASM) decodes. Speech is mono, so both
 * directions speak mono `PcmAudio`.
 */
import { Mp3Encoder } from '@breezystack/lamejs';
import { MPEGDecoder } from 'mpg123-decoder';
import type { AudioEncoder, PcmAudio } from '../core/ports.js';
import { downmixFloat } from './pcm.js';
import { Resampler, resample } from './resample.js';
import { setImmediate as nextTurn } from 'node:timers/promises';

/** The rates MPEG-1, 2 and 2.5 layer III can carry. */
const MP3_SAMPLE_RATES = [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000];
/** lamejs takes its input in blocks of one MPEG-1 frame. */
const BLOCK_SAMPLES = 1152;
/** Plenty for mono speech, and valid at every MP3 rate. */
export const DEFAULT_MP3_BITRATE_KBPS = 64;

/**
 * Encodes mono PCM as constant-bitrate MP3. A rate MP3 cannot carry is first resampled to the
 * next one up (48 kHz at most). The file has no LAME gapless header, so decoders add the
 * encoder's delay (about 50 ms) and pad the last frame.
 */
export function encodeMp3(pcm: PcmAudio, bitrateKbps = DEFAULT_MP3_BITRATE_KBPS): Uint8Array {
  const rate = MP3_SAMPLE_RATES.find((candidate) => candidate >= pcm.sampleRate) ?? 48000;
  const source = rate === pcm.sampleRate ? pcm : resample(pcm, rate);
  const encoder = new Mp3Encoder(1, rate, bitrateKbps);
  const parts: Uint8Array[] = [];
  for (let start = 0; start < source.samples.length; start += BLOCK_SAMPLES) {
    parts.push(encoder.encodeBuffer(source.samples.subarray(start, start + BLOCK_SAMPLES)));
  }
  parts.push(encoder.flush());
  return joinFrames(parts);
}

/**
 * Decodes MP3 (or MP2/MP1) to mono PCM at the file's own rate; stereo is averaged. Fails when
 * the bytes hold no decodable frame.
 */
export async function decodeMp3(bytes: Uint8Array): Promise<PcmAudio> {
  const decoder = new MPEGDecoder();
  try {
    await decoder.ready;
    const decoded = decoder.decode(bytes);
    if (decoded.samplesDecoded === 0 && bytes.byteLength > 0) {
      const reason = decoded.errors[0]?.message ?? 'no MPEG audio frame found';
      throw new Error(`cannot decode MP3 (${reason})`);
    }
    return { sampleRate: decoded.sampleRate || 44100, samples: downmixFloat(decoded.channelData, decoded.samplesDecoded) };
  } finally {
    decoder.free();
  }
}

/** About 0.7 s of 22 kHz speech: some 15 ms of work between two turns of the event loop. */
const SLICE_SAMPLES = BLOCK_SAMPLES * 14;

/**
 * `encodeMp3`, giving the event loop a turn after each slice: minutes of speech take seconds
 * to encode, and voice playback in every guild needs a frame each 20 ms meanwhile.
 */
export async function encodeMp3Gradually(pcm: PcmAudio, bitrateKbps = DEFAULT_MP3_BITRATE_KBPS): Promise<Uint8Array> {
  const rate = MP3_SAMPLE_RATES.find((candidate) => candidate >= pcm.sampleRate) ?? 48000;
  const resampler = rate === pcm.sampleRate ? undefined : new Resampler(pcm.sampleRate, rate);
  const encoder = new Mp3Encoder(1, rate, bitrateKbps);
  const parts: Uint8Array[] = [];
  const encode = (samples: Int16Array) => {
    for (let offset = 0; offset < samples.length; offset += BLOCK_SAMPLES) {
      parts.push(encoder.encodeBuffer(samples.subarray(offset, offset + BLOCK_SAMPLES)));
    }
  };
  for (let start = 0; start < pcm.samples.length; start += SLICE_SAMPLES) {
    const slice = pcm.samples.subarray(start, start + SLICE_SAMPLES);
    encode(resampler ? resampler.push(slice) : slice);
    await nextTurn();
  }
  if (resampler) encode(resampler.flush());
  parts.push(encoder.flush());
  return joinFrames(parts);
}

/** The core's `AudioEncoder`, over `encodeMp3Gradually`. */
export function createAudioEncoder(bitrateKbps = DEFAULT_MP3_BITRATE_KBPS): AudioEncoder {
  return { mp3: (pcm) => encodeMp3Gradually(pcm, bitrateKbps) };
}

/** lamejs hands out Int8Array frames: Buffer.concat joins byte views of them, given back as plain bytes. */
function joinFrames(parts: readonly Uint8Array[]): Uint8Array {
  const joined = Buffer.concat(parts.map((part) => new Uint8Array(part.buffer, part.byteOffset, part.byteLength)));
  return new Uint8Array(joined.buffer, joined.byteOffset, joined.byteLength);
}
