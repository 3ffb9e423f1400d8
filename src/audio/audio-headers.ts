/**
 * What an audio file's first and last bytes say about it, read without decoding: the container
 * (by its magic bytes) and, where the header states it, the duration. Every read is bounded by
 * the buffer, and every size a file claims is checked against it, so a lying header costs nothing.
 */
import { oggCrc } from './ogg-opus.js';

export type AudioFormat = 'ogg-opus' | 'ogg-vorbis' | 'mp3' | 'wav' | 'm4a' | 'webm' | 'flac';

/** The container of `bytes`, or undefined when it is none we take. */
export function sniffAudioFormat(bytes: Uint8Array): AudioFormat | undefined {
  const data = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (ascii(data, 0, 4) === 'OggS') {
    const first = firstOggPacket(data);
    if (first !== undefined && ascii(first, 0, 8) === 'OpusHead') return 'ogg-opus';
    if (first !== undefined && first[0] === 1 && ascii(first, 1, 6) === 'vorbis') return 'ogg-vorbis';
    return undefined;
  }
  if (ascii(data, 0, 4) === 'RIFF' && ascii(data, 8, 4) === 'WAVE') return 'wav';
  if (ascii(data, 0, 4) === 'fLaC') return 'flac';
  if (ascii(data, 4, 4) === 'ftyp') return 'm4a';
  if (data.length >= 4 && data.readUInt32BE(0) === 0x1a45dfa3) return 'webm';
  if (ascii(data, 0, 3) === 'ID3' || mp3FrameAt(data, 0) !== undefined) return 'mp3';
  return undefined;
}

/** Seconds of audio as the header states them; undefined where that is not cheap (WebM) or not stated. */
export function headerDuration(bytes: Uint8Array, format: AudioFormat): number | undefined {
  const data = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  switch (format) {
    case 'ogg-opus':
    case 'ogg-vorbis':
      return oggDuration(data, format);
    case 'wav':
      return wavDuration(data);
    case 'flac':
      return flacDuration(data);
    case 'm4a':
      return mp4Duration(data);
    case 'mp3':
      return mp3Duration(data);
    case 'webm':
      // Matroska's Duration sits in Segment/Info as a variable-size float and MediaRecorder
      // (what browsers record voice notes with) leaves it out: the byte limit bounds WebM.
      return undefined;
  }
}

function ascii(data: Buffer, offset: number, length: number): string {
  return offset + length <= data.length ? data.toString('latin1', offset, offset + length) : '';
}

function firstOggPacket(data: Buffer): Buffer | undefined {
  if (data.length < 28) return undefined;
  const segments = data.readUInt8(26);
  if (data.length < 27 + segments) return undefined;
  let length = 0;
  for (let index = 0; index < segments; index += 1) {
    const lacing = data.readUInt8(27 + index);
    length += lacing;
    if (lacing < 255) break;
  }
  const start = 27 + segments;
  return start + length <= data.length ? data.subarray(start, start + length) : undefined;
}

/** How far back from the end the last page is looked for: a page is at most 65 307 bytes. */
const OGG_TAIL_BYTES = 65_307 * 2;

/** The granule of the last page whose CRC holds, over the rate: Opus counts 48 kHz samples after pre-skip. */
function oggDuration(data: Buffer, format: 'ogg-opus' | 'ogg-vorbis'): number | undefined {
  const first = firstOggPacket(data);
  if (first === undefined || first.length < 16) return undefined;
  const rate = format === 'ogg-opus' ? 48_000 : first.readUInt32LE(12);
  const preSkip = format === 'ogg-opus' ? first.readUInt16LE(10) : 0;
  if (rate === 0) return undefined;
  for (let offset = data.lastIndexOf('OggS'); offset >= 0 && offset >= data.length - OGG_TAIL_BYTES; offset = offset === 0 ? -1 : data.lastIndexOf('OggS', offset - 1)) {
    const page = oggPageAt(data, offset);
    if (page === undefined) continue;
    const granule = page.readBigInt64LE(6);
    // -1: no packet ends on this page; look at the one before.
    if (granule < 0n) continue;
    return Math.max(0, Number(granule) - preSkip) / rate;
  }
  return undefined;
}

/** The whole page at `offset` when its CRC matches, so a stray `OggS` inside audio is not read as one. */
function oggPageAt(data: Buffer, offset: number): Buffer | undefined {
  if (offset + 27 > data.length) return undefined;
  const segments = data.readUInt8(offset + 26);
  if (offset + 27 + segments > data.length) return undefined;
  let length = 27 + segments;
  for (let index = 0; index < segments; index += 1) length += data.readUInt8(offset + 27 + index);
  if (offset + length > data.length) return undefined;
  const page = Buffer.from(data.subarray(offset, offset + length));
  const stored = page.readUInt32LE(22);
  page.writeUInt32LE(0, 22);
  return oggCrc(page) === stored ? page : undefined;
}

/** `data` size over `fmt`'s byte rate; a streamed header's unknown size (0 or 0xFFFFFFFF) counts what arrived. */
function wavDuration(data: Buffer): number | undefined {
  let byteRate: number | undefined;
  for (let offset = 12; offset + 8 <= data.length; ) {
    const id = ascii(data, offset, 4);
    const size = data.readUInt32LE(offset + 4);
    if (id === 'fmt ' && offset + 20 <= data.length) byteRate = data.readUInt32LE(offset + 16);
    if (id === 'data') {
      if (byteRate === undefined || byteRate === 0) return undefined;
      const available = data.length - offset - 8;
      return (size === 0 || size === 0xffff_ffff || size > available ? available : size) / byteRate;
    }
    offset += 8 + size + (size % 2);
  }
  return undefined;
}

/** STREAMINFO: 20-bit sample rate and 36-bit total samples (0 when unknown). */
function flacDuration(data: Buffer): number | undefined {
  if (data.length < 8 + 34) return undefined;
  const info = data.subarray(8, 8 + 34);
  const rate = (info.readUInt16BE(10) << 4) | (info.readUInt8(12) >> 4);
  const total = (info.readUInt8(13) & 0x0f) * 2 ** 32 + info.readUInt32BE(14);
  return rate === 0 || total === 0 ? undefined : total / rate;
}

/** `moov/mvhd`'s duration over its timescale, walking boxes by their sizes (moov may come last). */
function mp4Duration(data: Buffer): number | undefined {
  const moov = findBox(data, 0, data.length, 'moov');
  if (moov === undefined) return undefined;
  const mvhd = findBox(data, moov.start, moov.end, 'mvhd');
  if (mvhd === undefined || mvhd.start + 32 > mvhd.end) return undefined;
  const version = data.readUInt8(mvhd.start);
  const timescale = version === 1 ? data.readUInt32BE(mvhd.start + 20) : data.readUInt32BE(mvhd.start + 12);
  const duration = version === 1 ? Number(data.readBigUInt64BE(mvhd.start + 24)) : data.readUInt32BE(mvhd.start + 16);
  return timescale === 0 ? undefined : duration / timescale;
}

/** The content range of the first box named `type` between `start` and `end`. */
function findBox(data: Buffer, start: number, end: number, type: string): { start: number; end: number } | undefined {
  for (let offset = start; offset + 8 <= end; ) {
    let size = data.readUInt32BE(offset);
    let header = 8;
    if (size === 1) {
      if (offset + 16 > end) return undefined;
      size = Number(data.readBigUInt64BE(offset + 8));
      header = 16;
    } else if (size === 0) {
      size = end - offset;
    }
    if (size < header) return undefined;
    if (ascii(data, offset + 4, 4) === type) return { start: offset + header, end: Math.min(end, offset + size) };
    offset += size;
  }
  return undefined;
}

const MP3_BITRATES_KBPS = {
  mpeg1: [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],
  mpeg2: [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
};
const MP3_RATES: Record<number, number[]> = { 3: [44_100, 48_000, 32_000], 2: [22_050, 24_000, 16_000], 0: [11_025, 12_000, 8_000] };

interface Mp3Frame {
  bitrateKbps: number;
  sampleRate: number;
  samplesPerFrame: number;
  mpeg1: boolean;
  mono: boolean;
}

/** A layer III frame header at `offset`, or undefined. */
function mp3FrameAt(data: Buffer, offset: number): Mp3Frame | undefined {
  if (offset + 4 > data.length) return undefined;
  const header = data.readUInt32BE(offset);
  if (header >>> 21 !== 0x7ff) return undefined;
  const version = (header >>> 19) & 3;
  const layer = (header >>> 17) & 3;
  const bitrateIndex = (header >>> 12) & 15;
  const rateIndex = (header >>> 10) & 3;
  if (version === 1 || layer !== 1 || bitrateIndex === 0 || bitrateIndex === 15 || rateIndex === 3) return undefined;
  const mpeg1 = version === 3;
  const bitrateKbps = (mpeg1 ? MP3_BITRATES_KBPS.mpeg1 : MP3_BITRATES_KBPS.mpeg2)[bitrateIndex] ?? 0;
  const sampleRate = MP3_RATES[version]?.[rateIndex] ?? 0;
  return { bitrateKbps, sampleRate, samplesPerFrame: mpeg1 ? 1152 : 576, mpeg1, mono: ((header >>> 6) & 3) === 3 };
}

/** From the Xing/Info frame count when the encoder wrote one (VBR), else from the first frame's bitrate (CBR). */
function mp3Duration(data: Buffer): number | undefined {
  let offset = 0;
  if (ascii(data, 0, 3) === 'ID3' && data.length >= 10) {
    // The ID3v2 size is four 7-bit bytes.
    offset = 10 + ((data[6]! & 0x7f) << 21 | (data[7]! & 0x7f) << 14 | (data[8]! & 0x7f) << 7 | (data[9]! & 0x7f));
  }
  const frame = mp3FrameAt(data, offset);
  if (frame === undefined) return undefined;
  const sideInformation = frame.mpeg1 ? (frame.mono ? 17 : 32) : frame.mono ? 9 : 17;
  const xing = offset + 4 + sideInformation;
  const tag = ascii(data, xing, 4);
  if ((tag === 'Xing' || tag === 'Info') && xing + 12 <= data.length && (data.readUInt32BE(xing + 4) & 1) === 1) {
    return (data.readUInt32BE(xing + 8) * frame.samplesPerFrame) / frame.sampleRate;
  }
  return ((data.length - offset) * 8) / (frame.bitrateKbps * 1000);
}
