import OpusScript from 'opusscript';
import { describe, expect, it } from 'vitest';
import { DISCORD_FRAME_BYTES, DiscordFramer, toDiscordFrames } from '../../src/audio/discord-frames.js';
import { OpusFrameEncoder } from '../../src/audio/opus.js';
import { resample } from '../../src/audio/resample.js';
import { chirp, tone } from '../fakes/speech/tones.js';
import { bestCorrelation, zeroCrossingFrequency } from './signal-measures.js';

/** The left channel of stereo s16le frames. */
function leftChannel(frames: readonly Buffer[]): Int16Array {
  const joined = Buffer.concat(frames);
  return Int16Array.from({ length: joined.length / 4 }, (_, index) => joined.readInt16LE(index * 4));
}

describe('Discord frames', () => {
  it('cuts 22 050 Hz mono into 3840-byte 48 kHz stereo frames, one per 20 ms, the last padded', () => {
    const source = tone({ sampleRate: 22050, durationMs: 1010, frequency: 440 });
    const frames = toDiscordFrames(source);

    expect(frames).toHaveLength(Math.ceil(1010 / 20));
    for (const frame of frames) expect(frame.length).toBe(DISCORD_FRAME_BYTES);
    const last = frames.at(-1)!;
    // 1010 ms is 50 frames and about 480 samples (1920 bytes) of a 51st.
    expect(last.subarray(0, 1900).some((byte) => byte !== 0)).toBe(true);
    expect(last.subarray(2000).every((byte) => byte === 0)).toBe(true);
    const first = frames[0]!;
    for (let offset = 0; offset < first.length; offset += 4) expect(first.readInt16LE(offset)).toBe(first.readInt16LE(offset + 2));
    expect(zeroCrossingFrequency(leftChannel(frames), 48000, 4800, 43200)).toBeCloseTo(440, 0);
  });

  it('frames a stream of pieces as it would the whole, and follows a change of rate', () => {
    const source = chirp({ sampleRate: 24000, durationMs: 600 });
    const framer = new DiscordFramer();
    const streamed = [
      ...framer.push({ sampleRate: 24000, samples: source.samples.subarray(0, 3001) }),
      ...framer.push({ sampleRate: 24000, samples: source.samples.subarray(3001) }),
      ...framer.end(),
    ];
    expect(Buffer.concat(streamed)).toEqual(Buffer.concat(toDiscordFrames(source)));

    const mixed = new DiscordFramer();
    const frames = [...mixed.push(tone({ sampleRate: 22050, durationMs: 500 })), ...mixed.push(tone({ sampleRate: 48000, durationMs: 500 })), ...mixed.end()];
    expect(frames).toHaveLength(50);
  });
});

describe('Opus', () => {
  it('encodes frames that libopus decodes back to a similar signal', () => {
    const source = chirp({ sampleRate: 24000, durationMs: 1000, from: 200, to: 3000 });
    const frames = toDiscordFrames(source);
    const encoder = new OpusFrameEncoder({ application: 'audio', bitrate: 64_000 });
    const decoder = new OpusScript(48000, 2, OpusScript.Application.AUDIO);
    try {
      const packets = frames.map((frame) => encoder.encode(frame));
      for (const packet of packets) {
        expect(packet.length).toBeGreaterThan(0);
        expect(packet.length).toBeLessThan(1276);
      }
      const decoded = leftChannel(packets.map((packet) => decoder.decode(packet)));
      expect(decoded.length).toBe(frames.length * 960);
      const reference = resample(source, 48000).samples;
      // libopus delays by its look-ahead, 6.5 ms (312 samples).
      const { correlation, lag } = bestCorrelation(reference, decoded, 1000, 2000, 40000);
      expect(correlation).toBeGreaterThan(0.95);
      expect(lag).toBe(312);
    } finally {
      encoder.delete();
      decoder.delete();
    }
  });

  it('refuses frames of the wrong size, and any frame once deleted', () => {
    const encoder = new OpusFrameEncoder({ application: 'voip' });
    expect(() => encoder.encode(Buffer.alloc(1920))).toThrow(/3840 bytes/);
    encoder.delete();
    encoder.delete();
    expect(() => encoder.encode(Buffer.alloc(DISCORD_FRAME_BYTES))).toThrow(/deleted/);
  });
});
