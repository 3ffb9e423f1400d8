/**
 * WAV (RIFF) in and out, for engines that only answer WAV (LocalAI) and for tests. Reads
 * integer PCM of 8 to 32 bits and 32-bit float, plain or WAVE_FORMAT_EXTENSIBLE.
 */
import type { PcmAudio } from '../core/ports.js';
import { clipToInt16 } from './pcm.js';

const FORMAT_PCM = 1;
const FORMAT_FLOAT = 3;
const FORMAT_EXTENSIBLE = 0xfffe;

interface WavFormat {
  format: number;
  channels: number;
  sampleRate: number;
  bitsPerSample: number;
}

/** Decodes a WAV file to mono PCM at its own rate; channels are averaged. */
export function decodeWav(bytes: Uint8Array): PcmAudio {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.byteLength < 12 || tag(view, 0) !== 'RIFF' || tag(view, 8) !== 'WAVE') throw new Error('not a WAV file (no RIFF/WAVE header)');
  let format: WavFormat | undefined;
  for (let offset = 12; offset + 8 <= bytes.byteLength; ) {
    const id = tag(view, offset);
    const declared = view.getUint32(offset + 4, true);
    const start = offset + 8;
    if (id === 'fmt ') format = readFormat(view, start, declared);
    if (id === 'data') {
      if (format === undefined) throw new Error('WAV data comes before its format');
      // Servers that stream WAV cannot know the size yet and write 0 or 0xFFFFFFFF: read to the end.
      const end = declared === 0 || start + declared > bytes.byteLength ? bytes.byteLength : start + declared;
      return { sampleRate: format.sampleRate, samples: readSamples(view, start, end, format) };
    }
    offset = start + declared + (declared % 2);
  }
  throw new Error('WAV file has no data chunk');
}

/** Encodes mono PCM as a 16-bit WAV file. */
export function encodeWav(pcm: PcmAudio): Uint8Array {
  const dataBytes = pcm.samples.length * 2;
  const bytes = Buffer.alloc(44 + dataBytes);
  bytes.write('RIFF', 0, 'ascii');
  bytes.writeUInt32LE(36 + dataBytes, 4);
  bytes.write('WAVEfmt ', 8, 'ascii');
  bytes.writeUInt32LE(16, 16);
  bytes.writeUInt16LE(FORMAT_PCM, 20);
  bytes.writeUInt16LE(1, 22);
  bytes.writeUInt32LE(pcm.sampleRate, 24);
  bytes.writeUInt32LE(pcm.sampleRate * 2, 28);
  bytes.writeUInt16LE(2, 32);
  bytes.writeUInt16LE(16, 34);
  bytes.write('data', 36, 'ascii');
  bytes.writeUInt32LE(dataBytes, 40);
  for (let index = 0; index < pcm.samples.length; index++) bytes.writeInt16LE(pcm.samples[index] ?? 0, 44 + index * 2);
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function tag(view: DataView, offset: number): string {
  return String.fromCharCode(view.getUint8(offset), view.getUint8(offset + 1), view.getUint8(offset + 2), view.getUint8(offset + 3));
}

function readFormat(view: DataView, start: number, size: number): WavFormat {
  if (size < 16) throw new Error('WAV format chunk is too short');
  let format = view.getUint16(start, true);
  // WAVE_FORMAT_EXTENSIBLE names the real format in the first two bytes of its sub-format GUID.
  if (format === FORMAT_EXTENSIBLE && size >= 26) format = view.getUint16(start + 24, true);
  const result = { format, channels: view.getUint16(start + 2, true), sampleRate: view.getUint32(start + 4, true), bitsPerSample: view.getUint16(start + 14, true) };
  const supported = (format === FORMAT_PCM && [8, 16, 24, 32].includes(result.bitsPerSample)) || (format === FORMAT_FLOAT && result.bitsPerSample === 32);
  if (!supported || result.channels === 0) throw new Error(`unsupported WAV encoding (format ${format}, ${result.bitsPerSample} bits, ${result.channels} channels)`);
  return result;
}

function readSamples(view: DataView, start: number, end: number, format: WavFormat): Int16Array {
  const sampleBytes = format.bitsPerSample / 8;
  const frameBytes = sampleBytes * format.channels;
  const frames = Math.floor((end - start) / frameBytes);
  const samples = new Int16Array(frames);
  for (let frame = 0; frame < frames; frame++) {
    let sum = 0;
    for (let channel = 0; channel < format.channels; channel++) sum += readOne(view, start + frame * frameBytes + channel * sampleBytes, format);
    samples[frame] = clipToInt16((sum / format.channels) * 32768);
  }
  return samples;
}

/** One sample as a float in -1..1. */
function readOne(view: DataView, offset: number, format: WavFormat): number {
  if (format.format === FORMAT_FLOAT) return view.getFloat32(offset, true);
  switch (format.bitsPerSample) {
    case 8:
      return (view.getUint8(offset) - 128) / 128;
    case 16:
      return view.getInt16(offset, true) / 32768;
    case 24:
      return ((view.getInt8(offset + 2) << 16) | (view.getUint8(offset + 1) << 8) | view.getUint8(offset)) / 8388608;
    default:
      return view.getInt32(offset, true) / 2147483648;
  }
}
