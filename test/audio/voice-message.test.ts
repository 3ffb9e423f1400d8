import { describe, expect, it } from 'vitest';
import type { PcmAudio } from '../../src/core/ports.js';
import { OPUS_PRE_SKIP, muxOggOpus, oggCrc } from '../../src/audio/ogg-opus.js';
import { encodeVoiceMessage, waveformOf } from '../../src/audio/voice-message.js';
import { decode, demux, rms } from './ogg-opus-reader.js';

/** espeak's rate: 22 050 Hz mono. Tone, silence, tone, so the waveform has a shape to check. */
function toneSilenceTone(sampleRate = 22_050, seconds = [0.6, 0.4, 0.53]): PcmAudio {
  const [first = 0, gap = 0, second = 0] = seconds.map((length) => Math.round(length * sampleRate));
  const samples = new Int16Array(first + gap + second);
  for (let index = 0; index < samples.length; index += 1) {
    const inGap = index >= first && index < first + gap;
    samples[index] = inGap ? 0 : Math.round(12_000 * Math.sin((2 * Math.PI * 440 * index) / sampleRate));
  }
  return { sampleRate, samples };
}

interface Page {
  flags: number;
  granule: bigint;
  serial: number;
  sequence: number;
  crcMatches: boolean;
}

/** Reads pages independently of the muxer: header fields, and the CRC recomputed bit by bit. */
function readPages(file: Uint8Array): Page[] {
  const bytes = Buffer.from(file);
  const pages: Page[] = [];
  let offset = 0;
  while (offset < bytes.length) {
    expect(bytes.toString('latin1', offset, offset + 4)).toBe('OggS');
    const segments = bytes.readUInt8(offset + 26);
    let bodyLength = 0;
    for (let index = 0; index < segments; index += 1) bodyLength += bytes.readUInt8(offset + 27 + index);
    const length = 27 + segments + bodyLength;
    const page = Buffer.from(bytes.subarray(offset, offset + length));
    const stored = page.readUInt32LE(22);
    page.writeUInt32LE(0, 22);
    pages.push({ flags: page.readUInt8(5), granule: page.readBigUInt64LE(6), serial: page.readUInt32LE(14), sequence: page.readUInt32LE(18), crcMatches: bitwiseCrc(page) === stored });
    offset += length;
  }
  return pages;
}

function bitwiseCrc(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 24;
    for (let bit = 0; bit < 8; bit += 1) crc = crc & 0x8000_0000 ? (crc << 1) ^ 0x04c1_1db7 : crc << 1;
    crc >>>= 0;
  }
  return crc;
}

describe('voice message audio', () => {
  it('is an Ogg Opus file players read back to the speech, with its duration', async () => {
    const pcm = toneSilenceTone();
    const message = await encodeVoiceMessage(pcm);
    expect(message.mimeType).toBe('audio/ogg');
    expect(message.filename).toBe('voice-message.ogg');
    expect(message.durationSeconds).toBeCloseTo(pcm.samples.length / 22_050, 6);

    const { head, tags, packets } = await demux(message.file);
    expect(head.toString('latin1', 0, 8)).toBe('OpusHead');
    expect(head.readUInt8(8)).toBe(1);
    expect(head.readUInt8(9)).toBe(1); // mono
    expect(head.readUInt16LE(10)).toBe(OPUS_PRE_SKIP);
    expect(head.readUInt32LE(12)).toBe(22_050);
    expect(tags.toString('latin1', 0, 8)).toBe('OpusTags');

    const decoded = decode(packets);
    expect(decoded.length).toBe(packets.length * 960); // 20 ms frames, each one packet
    const pages = readPages(message.file);
    const playedSeconds = (Number(pages.at(-1)!.granule) - OPUS_PRE_SKIP) / 48_000;
    expect(Math.abs(playedSeconds - message.durationSeconds)).toBeLessThan(0.02);
    expect(Math.abs(decoded.length / 48_000 - message.durationSeconds)).toBeLessThan(0.02 + OPUS_PRE_SKIP / 48_000);

    // The tone is heard where it was, the silence where it was (past the 312-sample delay).
    const at = (seconds: number) => OPUS_PRE_SKIP + Math.round(seconds * 48_000);
    expect(rms(decoded.subarray(at(0.1), at(0.5)))).toBeGreaterThan(5_000);
    expect(rms(decoded.subarray(at(0.7), at(0.95)))).toBeLessThan(300);
    expect(rms(decoded.subarray(at(1.1), at(1.45)))).toBeGreaterThan(5_000);
  });

  it('writes proper pages: head alone and first, tags alone, granules rising, the last marked, every CRC right', async () => {
    const message = await encodeVoiceMessage(toneSilenceTone(24_000, [1.5, 0.5, 1.5]));
    const pages = readPages(message.file);
    expect(pages.length).toBeGreaterThan(3);
    expect(pages.map((page) => page.sequence)).toEqual(pages.map((_, index) => index));
    expect(new Set(pages.map((page) => page.serial)).size).toBe(1);
    expect(pages.every((page) => page.crcMatches)).toBe(true);
    expect(pages.map((page) => page.flags)).toEqual([2, ...Array<number>(pages.length - 2).fill(0), 4]);
    expect(pages[0]!.granule).toBe(0n);
    expect(pages[1]!.granule).toBe(0n);
    const granules = pages.slice(2).map((page) => page.granule);
    for (let index = 1; index < granules.length; index += 1) expect(granules[index]! > granules[index - 1]!).toBe(true);
    expect(pages.at(-1)!.granule).toBe(BigInt(OPUS_PRE_SKIP + 3.5 * 48_000));
  });

  it('computes Ogg\'s CRC (CRC-32, polynomial 0x04C11DB7, initial 0, no final xor)', () => {
    // CRC-32/CKSUM's check value 0x765E7680 without its final inversion.
    expect(oggCrc(Buffer.from('123456789'))).toBe(0x89a1897f);
  });

  it('laces packets of 255 bytes and more with a closing value', async () => {
    const packets = [new Uint8Array(255).fill(1), new Uint8Array(600).fill(2), new Uint8Array(3).fill(3)];
    const file = muxOggOpus(packets, { channels: 1, inputSampleRate: 48_000, samplesPerPacket: 960, totalSamples: 2_880, serial: 7 });
    const read = await demux(file);
    expect(read.packets.map((packet) => packet.length)).toEqual([255, 600, 3]);
    expect(readPages(file).every((page) => page.crcMatches && page.serial === 7)).toBe(true);
  });

  it('draws one waveform bar per 100 ms, loud where the speech is and flat in the silence', async () => {
    const pcm = toneSilenceTone(22_050, [1, 1, 1]);
    const message = await encodeVoiceMessage(pcm);
    const bars = Buffer.from(message.waveform, 'base64');
    expect(bars.length).toBe(30);
    expect(Math.max(...bars)).toBe(255);
    expect([...bars.subarray(1, 9)].every((bar) => bar > 240)).toBe(true);
    expect([...bars.subarray(11, 19)].every((bar) => bar === 0)).toBe(true);
    expect([...bars.subarray(21, 29)].every((bar) => bar > 240)).toBe(true);
  });

  it('keeps the waveform to 256 bars for long speech, and to one bar for a blip', () => {
    const long: PcmAudio = { sampleRate: 8_000, samples: new Int16Array(8_000 * 60).fill(1000) };
    expect(waveformOf(long).length).toBe(256);
    expect(waveformOf({ sampleRate: 8_000, samples: new Int16Array(100).fill(1) })).toEqual(Uint8Array.from([255]));
    expect(waveformOf({ sampleRate: 8_000, samples: new Int16Array(800) })).toEqual(Uint8Array.from([0]));
  });
});

describe('voice message encoding and the event loop', () => {
  it('gives the event loop a turn while it encodes, so playback elsewhere keeps its pace', async () => {
    let finished = false;
    const encoding = encodeVoiceMessage(toneSilenceTone(22_050, [1, 0.5, 1])).then(() => (finished = true));
    const finishedAtFirstTurn = await new Promise<boolean>((resolve) => setImmediate(() => resolve(finished)));
    await encoding;
    expect(finishedAtFirstTurn).toBe(false);
    expect(finished).toBe(true);
  });

  it('encodes 48 kHz input as it is, its last samples included, and audio shorter than a frame as one padded frame', async () => {
    const samples = Int16Array.from({ length: 48_000 * 2 }, (_, index) => Math.round(8000 * Math.sin((2 * Math.PI * 440 * index) / 48_000)));
    const exact = await encodeVoiceMessage({ sampleRate: 48_000, samples });
    const { packets } = await demux(exact.file);
    // Two seconds are 100 frames; the encoder's 312-sample lookahead needs one more to let the end out.
    expect(packets).toHaveLength(101);
    expect(readPages(exact.file).at(-1)!.granule).toBe(BigInt(OPUS_PRE_SKIP + 96_000));
    const decoded = decode(packets);
    expect(decoded.length).toBeGreaterThanOrEqual(OPUS_PRE_SKIP + 96_000);
    // The last 5 ms of the tone are heard, not cut.
    expect(rms(decoded.subarray(OPUS_PRE_SKIP + 96_000 - 240, OPUS_PRE_SKIP + 96_000))).toBeGreaterThan(3_000);
    const blip = await encodeVoiceMessage({ sampleRate: 16_000, samples: new Int16Array(80).fill(3000) });
    expect((await demux(blip.file)).packets).toHaveLength(1);
    expect(blip.durationSeconds).toBe(0.005);
    expect(readPages(blip.file).at(-1)!.granule).toBe(BigInt(OPUS_PRE_SKIP + 240));
  });
});
