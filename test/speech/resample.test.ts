import { describe, expect, it } from 'vitest';
import { durationMs } from '../../src/audio/pcm.js';
import { Resampler, resample } from '../../src/audio/resample.js';
import { chirp, tone } from '../fakes/speech/tones.js';
import { rms, zeroCrossingFrequency } from './signal-measures.js';

describe('resample', () => {
  it('keeps the duration, frequency and loudness of a 440 Hz tone from 22 050 Hz to 48 kHz', () => {
    const source = tone({ sampleRate: 22050, durationMs: 1000, frequency: 440, amplitude: 10000 });
    const output = resample(source, 48000);

    expect(output.sampleRate).toBe(48000);
    expect(output.samples.length).toBe(48000);
    expect(durationMs(output)).toBeCloseTo(durationMs(source), 3);
    // The edges see silence before and after the tone, so measure the middle.
    expect(zeroCrossingFrequency(output.samples, 48000, 4800, 43200)).toBeCloseTo(440, 0);
    expect(rms(output.samples, 4800, 43200) / rms(source.samples, 2205, 19845)).toBeCloseTo(1, 2);
  });

  it('interpolates the tone itself, with no images of the old rate (unlike repeating samples)', () => {
    const source = tone({ sampleRate: 22050, durationMs: 500, frequency: 440, amplitude: 10000 });
    const output = resample(source, 48000);
    const ideal = tone({ sampleRate: 48000, durationMs: 500, frequency: 440, amplitude: 10000 });
    const residual = output.samples.map((sample, index) => sample - (ideal.samples[index] ?? 0));
    expect(rms(residual, 4800, 19200) / rms(ideal.samples, 4800, 19200)).toBeLessThan(0.01);

    const repeated = Int16Array.from(ideal.samples, (_, index) => source.samples[Math.floor((index * 22050) / 48000)] ?? 0);
    const repeatedResidual = repeated.map((sample, index) => sample - (ideal.samples[index] ?? 0));
    expect(rms(repeatedResidual, 4800, 19200) / rms(ideal.samples, 4800, 19200)).toBeGreaterThan(0.05);
  });

  it('attenuates what lies above the new Nyquist frequency when downsampling, and keeps what is below', () => {
    const high = resample(tone({ sampleRate: 48000, durationMs: 500, frequency: 15000, amplitude: 10000 }), 22050);
    const low = resample(tone({ sampleRate: 48000, durationMs: 500, frequency: 1000, amplitude: 10000 }), 22050);

    expect(high.samples.length).toBe(11025);
    expect(rms(high.samples, 1000, 10000)).toBeLessThan(10000 * Math.SQRT1_2 * 0.01);
    expect(rms(low.samples, 1000, 10000) / (10000 * Math.SQRT1_2)).toBeCloseTo(1, 2);
    expect(zeroCrossingFrequency(low.samples, 22050, 1000, 10000)).toBeCloseTo(1000, 0);
  });

  it('gives the same samples when the input arrives in uneven pieces', () => {
    const source = chirp({ sampleRate: 24000, durationMs: 700 });
    const whole = resample(source, 48000).samples;
    const resampler = new Resampler(24000, 48000);
    const parts: Int16Array[] = [];
    for (const [start, end] of [[0, 1], [1, 500], [500, 513], [513, 9000], [9000, source.samples.length]] as const) {
      parts.push(resampler.push(source.samples.subarray(start, end)));
    }
    parts.push(resampler.flush());
    const joined = Int16Array.from(parts.flatMap((part) => [...part]));
    expect(joined).toEqual(whole);
  });

  it('returns a copy at the same rate and rejects impossible rates', () => {
    const source = tone({ sampleRate: 16000, durationMs: 100 });
    const same = resample(source, 16000);
    expect(same.samples).toEqual(source.samples);
    expect(same.samples).not.toBe(source.samples);
    expect(() => resample(source, 0)).toThrow(RangeError);
  });
});
