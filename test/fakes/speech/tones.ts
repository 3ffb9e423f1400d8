/**
 * Real audio for the fake speech engines and the audio tests: sines and chirps whose length
 * follows the text, so tests can check durations through every codec.
 */
import type { PcmAudio } from '../../../src/core/ports.js';

export interface ToneOptions {
  sampleRate: number;
  durationMs: number;
  frequency?: number;
  /** Peak value, 0..32767. */
  amplitude?: number;
}

/** A sine tone. */
export function tone(options: ToneOptions): PcmAudio {
  const { sampleRate, durationMs, frequency = 440, amplitude = 8000 } = options;
  const samples = new Int16Array(Math.round((sampleRate * durationMs) / 1000));
  for (let index = 0; index < samples.length; index++) samples[index] = Math.round(amplitude * Math.sin((2 * Math.PI * frequency * index) / sampleRate));
  return { sampleRate, samples };
}

/** A sweep from `from` to `to` Hz: unlike a sine, it matches itself at one lag only. */
export function chirp(options: ToneOptions & { from?: number; to?: number }): PcmAudio {
  const { sampleRate, durationMs, from = 200, to = 2000, amplitude = 8000 } = options;
  const samples = new Int16Array(Math.round((sampleRate * durationMs) / 1000));
  const seconds = samples.length / sampleRate;
  for (let index = 0; index < samples.length; index++) {
    const time = index / sampleRate;
    const phase = 2 * Math.PI * (from * time + ((to - from) * time * time) / (2 * Math.max(seconds, 1e-9)));
    samples[index] = Math.round(amplitude * Math.sin(phase));
  }
  return { sampleRate, samples };
}

/** How long the fakes speak per character of text. */
export const FAKE_MS_PER_CHARACTER = 60;

/** The fakes' speech of `text`: a chirp of 60 ms per character. */
export function speechOf(text: string, sampleRate: number): PcmAudio {
  return chirp({ sampleRate, durationMs: text.length * FAKE_MS_PER_CHARACTER, amplitude: 10000 });
}
