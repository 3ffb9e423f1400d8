/**
 * How long one call's turn holds the main thread (which plays every call's 20 ms frames) to
 * become the 16 kHz WAV the speech-to-text engine takes, for a 30 s turn: before, the whole
 * turn was resampled 48 to 16 kHz at each early transcription and again at its end; now each
 * frame is resampled as it arrives (`TurnDetector`, `Turn.speech`) and a transcription only
 * joins and encodes. The turn goes through the real `TurnDetector` with every frame voiced
 * (the VAD's own cost is not what is measured) and ends by the clock's 600 ms of silence.
 *
 * `npx tsx bench/turn-audio.ts` prints the figures; `npm run bench -- turn-audio` records them.
 */
import { DISCORD_FRAME_MS, DISCORD_FRAME_SAMPLES, DISCORD_SAMPLE_RATE } from '../src/audio/discord-frames.js';
import { resample } from '../src/audio/resample.js';
import { SPEECH_TO_TEXT_SAMPLE_RATE, type Turn, TurnDetector } from '../src/audio/turn-detector.js';
import { encodeWav } from '../src/audio/wav.js';
import { percentile, round } from './stats.js';

export interface TurnAudioFigures {
  turnSeconds: number;
  runs: number;
  /** Before: the whole turn resampled and encoded at once, per transcription (p50). */
  wholeTurnResampledMs: number;
  /** Now: the turn's end (its audio joined, the resampler's tail) and the WAV encoding, p50. */
  turnEndAndWavMs: number;
  /** Now: the cost added to each 20 ms frame as it arrives (its resampling), p50 and max. */
  perFrameP50Ms: number;
  perFrameMaxMs: number;
}

/** Speech-like audio: a few harmonics whose pitch wanders, and a little noise. */
function frame(index: number): Int16Array {
  const samples = new Int16Array(DISCORD_FRAME_SAMPLES);
  for (let offset = 0; offset < samples.length; offset++) {
    const time = (index * DISCORD_FRAME_SAMPLES + offset) / DISCORD_SAMPLE_RATE;
    const pitch = 140 + 30 * Math.sin(time * 3);
    let value = 0;
    for (let harmonic = 1; harmonic <= 5; harmonic++) value += Math.sin(2 * Math.PI * pitch * harmonic * time) / harmonic;
    samples[offset] = Math.round(value * 6000 + (Math.random() - 0.5) * 400);
  }
  return samples;
}

export function measureTurnAudio(options: { turnSeconds?: number; runs?: number } = {}): TurnAudioFigures {
  const turnSeconds = options.turnSeconds ?? 30;
  const runs = options.runs ?? 5;
  const frames = Array.from({ length: (turnSeconds * 1000) / DISCORD_FRAME_MS }, (_, index) => frame(index));
  const whole: number[] = [];
  const ends: number[] = [];
  const perFrame: number[] = [];
  for (let run = 0; run < runs + 1; run++) {
    const detector = new TurnDetector({ isVoiced: () => true }, { maximumTurnMs: (turnSeconds + 10) * 1000, speculateMs: 0 });
    let now = 0;
    const frameTimes: number[] = [];
    for (const samples of frames) {
      const started = performance.now();
      detector.push(samples, now);
      frameTimes.push(performance.now() - started);
      now += DISCORD_FRAME_MS;
    }
    const ending = performance.now();
    const event = detector.tick(now + 1000).find((candidate) => candidate.type === 'turn');
    const turn: Turn = event!.turn;
    encodeWav(turn.speech);
    const endMs = performance.now() - ending;
    const before = performance.now();
    encodeWav(resample(turn.audio, SPEECH_TO_TEXT_SAMPLE_RATE));
    const wholeMs = performance.now() - before;
    // The first run warms the JIT up and is not counted.
    if (run === 0) continue;
    whole.push(wholeMs);
    ends.push(endMs);
    perFrame.push(...frameTimes);
  }
  return {
    turnSeconds,
    runs,
    wholeTurnResampledMs: round(percentile(whole, 0.5)),
    turnEndAndWavMs: round(percentile(ends, 0.5)),
    perFrameP50Ms: round(percentile(perFrame, 0.5), 3),
    perFrameMaxMs: round(Math.max(...perFrame)),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(measureTurnAudio());
