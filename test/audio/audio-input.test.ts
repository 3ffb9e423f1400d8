import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/core/errors.js';
import type { PcmAudio } from '../../src/core/ports.js';
import { checkDeclaredAudio, inspectAudio, isDeclaredAudio, type AudioInputLimits } from '../../src/audio/audio-input.js';
import { encodeMp3 } from '../../src/audio/mp3.js';
import { oggCrc } from '../../src/audio/ogg-opus.js';
import { encodeVoiceMessage } from '../../src/audio/voice-message.js';
import { encodeWav } from '../../src/audio/wav.js';

const LIMITS: AudioInputLimits = { maxBytes: 1024 * 1024, maxDurationSeconds: 60 };

function tone(seconds: number, sampleRate = 22_050): PcmAudio {
  const samples = Int16Array.from({ length: Math.round(seconds * sampleRate) }, (_, index) => Math.round(8_000 * Math.sin((2 * Math.PI * 300 * index) / sampleRate)));
  return { sampleRate, samples };
}

function refusal(run: () => unknown): AppError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error('expected a refusal');
}

/** One Ogg page holding one packet, with a correct CRC. */
function oggPage(packet: Uint8Array, granule: bigint, sequence: number, flags = 0): Buffer {
  const lacing = [...Array<number>(Math.floor(packet.length / 255)).fill(255), packet.length % 255];
  const page = Buffer.alloc(27 + lacing.length + packet.length);
  page.write('OggS', 0, 'latin1');
  page.writeUInt8(flags, 5);
  page.writeBigInt64LE(granule, 6);
  page.writeUInt32LE(99, 14);
  page.writeUInt32LE(sequence, 18);
  page.writeUInt8(lacing.length, 26);
  page.set(lacing, 27);
  page.set(packet, 27 + lacing.length);
  page.writeUInt32LE(oggCrc(page), 22);
  return page;
}

function box(type: string, content: Buffer): Buffer {
  const header = Buffer.alloc(8);
  header.writeUInt32BE(8 + content.length, 0);
  header.write(type, 4, 'latin1');
  return Buffer.concat([header, content]);
}

describe('audio input: what it is and how long', () => {
  it('reads an Ogg Opus voice message\'s duration from its last granule, less the pre-skip', async () => {
    const { file } = await encodeVoiceMessage(tone(3.2));
    expect(inspectAudio(file, LIMITS)).toEqual({ format: 'ogg-opus', mimeType: 'audio/ogg', filename: 'voice-message.ogg', durationSeconds: expect.closeTo(3.2, 4) as number });
  });

  it('ignores a stray OggS whose CRC does not hold, and a last page that ends no packet', async () => {
    const { file } = await encodeVoiceMessage(tone(2));
    // A page header inside the data, claiming 2^28 samples (93 minutes), with no CRC.
    const fake = Buffer.from('OggS\0\0\x00\x00\x00\x10\x00\x00\x00\x00', 'latin1');
    const unfinished = oggPage(new Uint8Array(10), -1n, 999);
    expect(inspectAudio(Buffer.concat([file, unfinished, fake, Buffer.alloc(40)]), LIMITS).durationSeconds).toBeCloseTo(2, 4);
  });

  it('reads Ogg Vorbis at its own rate', () => {
    const identification = Buffer.alloc(30);
    identification.writeUInt8(1, 0);
    identification.write('vorbis', 1, 'latin1');
    identification.writeUInt8(1, 11);
    identification.writeUInt32LE(44_100, 12);
    const file = Buffer.concat([oggPage(identification, 0n, 0, 2), oggPage(new Uint8Array(300), 44_100n * 7n, 1, 4)]);
    expect(inspectAudio(file, LIMITS)).toMatchObject({ format: 'ogg-vorbis', durationSeconds: 7 });
  });

  it('reads WAV by its data size, a streamed header by what arrived, and a lying size by what is there', () => {
    const wav = Buffer.from(encodeWav(tone(2.5)));
    expect(inspectAudio(wav, LIMITS)).toMatchObject({ format: 'wav', mimeType: 'audio/wav', filename: 'voice-message.wav', durationSeconds: 2.5 });
    const dataAt = wav.indexOf('data');
    const streamed = Buffer.from(wav);
    streamed.writeUInt32LE(0xffff_ffff, dataAt + 4);
    expect(inspectAudio(streamed, LIMITS).durationSeconds).toBe(2.5);
    const lying = Buffer.from(wav);
    lying.writeUInt32LE(0x7fff_0000, dataAt + 4);
    expect(inspectAudio(lying, LIMITS).durationSeconds).toBe(2.5);
  });

  it('estimates a constant-bitrate MP3 from its first frame, and reads a VBR MP3\'s Xing frame count', () => {
    const mp3 = encodeMp3(tone(4));
    const found = inspectAudio(mp3, LIMITS);
    expect(found).toMatchObject({ format: 'mp3', mimeType: 'audio/mpeg', filename: 'voice-message.mp3' });
    expect(Math.abs(found.durationSeconds! - 4)).toBeLessThan(0.1);

    // ID3v2 (10 + 20 bytes), then an MPEG-1 layer III stereo frame whose side information is followed by `Xing`.
    const id3 = Buffer.concat([Buffer.from('ID3\x04\x00\x00\x00\x00\x00\x14', 'latin1'), Buffer.alloc(20)]);
    const frame = Buffer.alloc(417);
    frame.writeUInt32BE(0xfffb9000, 0); // 128 kb/s, 44.1 kHz, stereo
    frame.write('Xing', 36, 'latin1');
    frame.writeUInt32BE(1, 40); // frames field present
    frame.writeUInt32BE(2_000, 44);
    expect(inspectAudio(Buffer.concat([id3, frame]), { ...LIMITS, maxDurationSeconds: 100 }).durationSeconds).toBeCloseTo((2_000 * 1152) / 44_100, 6);
  });

  it('reads M4A from moov/mvhd, even after a large mdat', () => {
    const mvhd = Buffer.alloc(100);
    mvhd.writeUInt32BE(44_100, 12);
    mvhd.writeUInt32BE(44_100 * 5, 16);
    const file = Buffer.concat([box('ftyp', Buffer.from('M4A \0\0\0\0isomM4A ', 'latin1')), box('mdat', Buffer.alloc(50_000)), box('moov', box('mvhd', mvhd))]);
    expect(inspectAudio(file, LIMITS)).toMatchObject({ format: 'm4a', mimeType: 'audio/mp4', filename: 'voice-message.m4a', durationSeconds: 5 });
    const broken = Buffer.from(file);
    broken.writeUInt32BE(0xffff_fff0, file.indexOf('mdat') - 4); // the mdat box claims 4 GB
    expect(inspectAudio(broken, LIMITS).durationSeconds).toBeUndefined();
  });

  it('reads FLAC\'s STREAMINFO', () => {
    const info = Buffer.alloc(34);
    info.writeBigUInt64BE((16_000n << 44n) | (0n << 41n) | (15n << 36n) | 16_000n * 9n, 10);
    const file = Buffer.concat([Buffer.from('fLaC\x80\x00\x00\x22', 'latin1'), info]);
    expect(inspectAudio(file, LIMITS)).toMatchObject({ format: 'flac', filename: 'voice-message.flac', durationSeconds: 9 });
  });

  it('takes WebM by its EBML magic, with no duration', () => {
    const file = Buffer.concat([Buffer.from([0x1a, 0x45, 0xdf, 0xa3]), Buffer.from('\x9f\x42\x86\x81\x01webm', 'latin1'), Buffer.alloc(100)]);
    expect(inspectAudio(file, LIMITS)).toEqual({ format: 'webm', mimeType: 'audio/webm', filename: 'voice-message.webm' });
  });
});

describe('audio input: refusals', () => {
  it('refuses what is not audio, and empty files', () => {
    const png = Buffer.from('\x89PNG\r\n\x1a\n\0\0\0\rIHDR', 'latin1');
    expect(refusal(() => inspectAudio(png, LIMITS)).code).toBe('UNSUPPORTED_MEDIA_TYPE');
    expect(refusal(() => inspectAudio(Buffer.from('OggS but not really an Ogg file at all, no.'), LIMITS)).code).toBe('UNSUPPORTED_MEDIA_TYPE');
    expect(refusal(() => inspectAudio(new Uint8Array(0), LIMITS)).code).toBe('VALIDATION_FAILED');
  });

  it('refuses too many bytes before reading them', () => {
    const error = refusal(() => inspectAudio(new Uint8Array(LIMITS.maxBytes + 1), LIMITS));
    expect(error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(error.message).toBe('The audio is larger than 1 MB; send a shorter recording.');
  });

  it('refuses a small file whose header says it is long', async () => {
    const { file } = await encodeVoiceMessage(tone(3));
    const error = refusal(() => inspectAudio(file, { ...LIMITS, maxDurationSeconds: 2 }));
    expect(error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(error.message).toBe('The audio is longer than 2 seconds; send a shorter recording.');
    expect(error.details).toMatchObject({ maxDurationSeconds: 2 });

    const wav = Buffer.from(encodeWav(tone(0.5)));
    wav.writeUInt32LE(1, wav.indexOf('fmt ') + 16); // one byte a second: 11 025 s of "audio"
    expect(refusal(() => inspectAudio(wav, { ...LIMITS, maxDurationSeconds: 600 })).message).toBe('The audio is longer than 10 minutes; send a shorter recording.');
  });

  it('refuses by what Discord declares, before downloading', () => {
    expect(() => checkDeclaredAudio({ name: 'voice-message.ogg', size: 50_000, contentType: 'audio/ogg', durationSeconds: 12.5 }, LIMITS)).not.toThrow();
    expect(refusal(() => checkDeclaredAudio({ name: 'voice-message.ogg', size: LIMITS.maxBytes + 1 }, LIMITS)).code).toBe('PAYLOAD_TOO_LARGE');
    expect(refusal(() => checkDeclaredAudio({ name: 'voice-message.ogg', size: 10, durationSeconds: 61 }, LIMITS)).message).toMatch(/longer than 1 minute;/);
  });

  it('knows audio attachments by type or name', () => {
    expect(isDeclaredAudio({ name: 'voice-message.ogg', contentType: 'audio/ogg' })).toBe(true);
    expect(isDeclaredAudio({ name: 'memo.M4A', contentType: null })).toBe(true);
    expect(isDeclaredAudio({ name: 'photo.png', contentType: 'image/png' })).toBe(false);
  });

  it('goes by the name only when no type was declared: a video named .mp4 or .webm is not audio', () => {
    expect(isDeclaredAudio({ name: 'clip.mp4', contentType: 'video/mp4' })).toBe(false);
    expect(isDeclaredAudio({ name: 'clip.webm', contentType: 'video/webm; codecs=vp9' })).toBe(false);
    expect(isDeclaredAudio({ name: 'notes.ogg', contentType: 'text/plain' })).toBe(false);
    expect(isDeclaredAudio({ name: 'memo.mp4', contentType: 'application/octet-stream' })).toBe(true);
    expect(isDeclaredAudio({ name: 'memo.mp4', contentType: 'audio/mp4' })).toBe(true);
    expect(isDeclaredAudio({ name: 'song.ogg', contentType: 'application/ogg' })).toBe(true);
  });
});
