import { describe, expect, it } from 'vitest';
import { createAudioEncoder, decodeMp3, encodeMp3 } from '../../src/audio/mp3.js';
import { durationMs } from '../../src/audio/pcm.js';
import { decodeWav, encodeWav } from '../../src/audio/wav.js';
import { chirp, tone } from '../fakes/speech/tones.js';
import { bestCorrelation, rms } from './signal-measures.js';

describe('mp3', () => {
  it('round-trips 22 050 Hz speech-like audio, keeping its duration within 5% and its shape', async () => {
    const source = chirp({ sampleRate: 22050, durationMs: 2000, from: 150, to: 3000 });
    const bytes = encodeMp3(source);
    // An MPEG audio frame starts with 11 set sync bits.
    expect(bytes[0]).toBe(0xff);
    expect((bytes[1] ?? 0) & 0xe0).toBe(0xe0);
    // 64 kb/s for two seconds, give or take a frame.
    expect(bytes.length).toBeGreaterThan(14_000);
    expect(bytes.length).toBeLessThan(18_000);

    const decoded = await decodeMp3(bytes);
    expect(decoded.sampleRate).toBe(22050);
    expect(Math.abs(durationMs(decoded) - 2000) / 2000).toBeLessThan(0.05);
    const { correlation } = bestCorrelation(source.samples, decoded.samples, 3000, 2000, 40000);
    expect(correlation).toBeGreaterThan(0.9);
  });

  it('encodes 24 kHz and 44.1 kHz as they are, and a rate MP3 cannot carry at the next one up', async () => {
    for (const sampleRate of [24000, 44100]) {
      const decoded = await decodeMp3(encodeMp3(tone({ sampleRate, durationMs: 1000 })));
      expect(decoded.sampleRate).toBe(sampleRate);
    }
    const odd = await decodeMp3(encodeMp3(tone({ sampleRate: 20000, durationMs: 1000 })));
    expect(odd.sampleRate).toBe(22050);
    expect(Math.abs(durationMs(odd) - 1000)).toBeLessThan(100);
  });

  it('gives the core an encoder that keeps the event loop turning through long audio', async () => {
    const source = tone({ sampleRate: 22050, durationMs: 60_000 });
    let turns = 0;
    const ticker = setInterval(() => turns++, 1);
    const bytes = await createAudioEncoder().mp3(source);
    clearInterval(ticker);
    // A minute of speech is encoded in dozens of slices, each followed by a turn of the loop.
    expect(turns).toBeGreaterThan(20);
    const decoded = await decodeMp3(bytes);
    const reference = await decodeMp3(encodeMp3(source));
    expect(Math.abs(durationMs(decoded) - durationMs(reference))).toBeLessThan(60);
    expect(Math.abs(durationMs(decoded) - 60_000) / 60_000).toBeLessThan(0.01);
  });

  it('refuses bytes that hold no MP3 frame', async () => {
    await expect(decodeMp3(new TextEncoder().encode('<html>not audio</html>'.repeat(50)))).rejects.toThrow(/cannot decode MP3/);
  });
});

describe('wav', () => {
  it('round-trips 16-bit mono exactly', () => {
    const source = chirp({ sampleRate: 24000, durationMs: 250 });
    const decoded = decodeWav(encodeWav(source));
    expect(decoded.sampleRate).toBe(24000);
    expect(decoded.samples).toEqual(source.samples);
  });

  it('reads a streamed header with an unknown size, and averages stereo float', () => {
    const streamed = Buffer.from(encodeWav(tone({ sampleRate: 16000, durationMs: 100 })));
    streamed.writeUInt32LE(0xffffffff, 4);
    streamed.writeUInt32LE(0xffffffff, 40);
    expect(decodeWav(streamed).samples.length).toBe(1600);

    const frames = 100;
    const float = Buffer.alloc(44 + frames * 8);
    float.write('RIFF', 0, 'ascii');
    float.writeUInt32LE(36 + frames * 8, 4);
    float.write('WAVEfmt ', 8, 'ascii');
    float.writeUInt32LE(16, 16);
    float.writeUInt16LE(3, 20);
    float.writeUInt16LE(2, 22);
    float.writeUInt32LE(44100, 24);
    float.writeUInt32LE(44100 * 8, 28);
    float.writeUInt16LE(8, 32);
    float.writeUInt16LE(32, 34);
    float.write('data', 36, 'ascii');
    float.writeUInt32LE(frames * 8, 40);
    for (let frame = 0; frame < frames; frame++) {
      float.writeFloatLE(0.5, 44 + frame * 8);
      float.writeFloatLE(-0.25, 48 + frame * 8);
    }
    const decoded = decodeWav(float);
    expect(decoded).toMatchObject({ sampleRate: 44100 });
    expect(rms(decoded.samples)).toBe(4096);
  });

  it('refuses what is not WAV', () => {
    expect(() => decodeWav(new Uint8Array(100))).toThrow(/not a WAV file/);
  });
});
