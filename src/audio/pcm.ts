/**
 * Small helpers over `PcmAudio` (mono, signed 16-bit): durations, joining pieces, and moving
 * between raw s16le bytes, float channels and samples.
 */
import type { PcmAudio } from '../core/ports.js';

/** How long `pcm` plays, in milliseconds. */
export function durationMs(pcm: PcmAudio): number {
  return pcm.sampleRate > 0 ? (pcm.samples.length * 1000) / pcm.sampleRate : 0;
}

/** Joins pieces of one rate into one; `sampleRate` names the rate when there are no pieces. */
export function concatPcm(pieces: readonly PcmAudio[], sampleRate = pieces[0]?.sampleRate ?? 0): PcmAudio {
  let length = 0;
  for (const piece of pieces) {
    if (piece.sampleRate !== sampleRate) throw new RangeError(`cannot join ${piece.sampleRate} Hz audio to ${sampleRate} Hz audio`);
    length += piece.samples.length;
  }
  const samples = new Int16Array(length);
  let offset = 0;
  for (const piece of pieces) {
    samples.set(piece.samples, offset);
    offset += piece.samples.length;
  }
  return { sampleRate, samples };
}

/**
 * Reads signed 16-bit little-endian samples. A trailing odd byte (half a sample) is ignored.
 * Read through a DataView so the result does not depend on the machine's byte order.
 */
export function pcmFromBytes(bytes: Uint8Array, sampleRate: number): PcmAudio {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const samples = new Int16Array(bytes.byteLength >> 1);
  for (let index = 0; index < samples.length; index++) samples[index] = view.getInt16(index * 2, true);
  return { sampleRate, samples };
}

/** The samples as signed 16-bit little-endian bytes. */
export function pcmToBytes(pcm: PcmAudio): Buffer {
  const bytes = Buffer.alloc(pcm.samples.length * 2);
  for (let index = 0; index < pcm.samples.length; index++) bytes.writeInt16LE(pcm.samples[index] ?? 0, index * 2);
  return bytes;
}

/** Rounds and clips a sample in the 16-bit range. */
export function clipToInt16(value: number): number {
  const rounded = Math.round(value);
  return rounded > 32767 ? 32767 : rounded < -32768 ? -32768 : rounded;
}

/** Averages float channels (-1..1) of `length` frames into mono 16-bit samples. */
export function downmixFloat(channels: readonly Float32Array[], length: number): Int16Array {
  const samples = new Int16Array(length);
  if (channels.length === 0) return samples;
  const scale = 32768 / channels.length;
  for (let index = 0; index < length; index++) {
    let sum = 0;
    for (const channel of channels) sum += channel[index] ?? 0;
    samples[index] = clipToInt16(sum * scale);
  }
  return samples;
}
