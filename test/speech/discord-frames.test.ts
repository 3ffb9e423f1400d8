import { describe, expect, it } from 'vitest';
import { DISCORD_FRAME_BYTES, DiscordFramer, toDiscordFrames } from '../../src/audio/discord-frames.js';
import { chirp, tone } from '../fakes/speech/tones.js';
import { zeroCrossingFrequency } from './signal-measures.js';

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
