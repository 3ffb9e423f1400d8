/**
 * Band-limited resampling of mono 16-bit audio: a Kaiser-windowed sinc interpolator, the same
 * idea as libsamplerate's sinc converters and the speex resampler. No well-kept resampler is
 * among our dependencies, and repeating or linearly interpolating samples would alias (espeak's
 * 22 050 Hz speech played at Discord's 48 kHz would buzz).
 */
import type { PcmAudio } from '../core/ports.js';
import { clipToInt16 } from './pcm.js';

/** Zero crossings of the sinc kept on each side, at the lower of the two rates. */
const ZERO_CROSSINGS = 32;
/** Table entries per zero crossing; values between entries are interpolated linearly. */
const TABLE_RESOLUTION = 512;
/** Kaiser window shape: about 85 dB of stop-band attenuation. */
const KAISER_BETA = 8.6;
/**
 * The pass band ends this far into the lower rate's Nyquist band; the rest is the transition,
 * so what lies above the new Nyquist frequency is attenuated instead of folded back.
 */
const CUTOFF = 0.9;

const kernel = buildKernel();

/** The windowed sinc from 0 to `ZERO_CROSSINGS`, with one zero past the end for interpolation. */
function buildKernel(): Float64Array {
  const size = ZERO_CROSSINGS * TABLE_RESOLUTION;
  const table = new Float64Array(size + 2);
  const scale = besselI0(KAISER_BETA);
  for (let index = 0; index <= size; index++) {
    const x = index / TABLE_RESOLUTION;
    const sinc = index === 0 ? 1 : Math.sin(Math.PI * x) / (Math.PI * x);
    const position = x / ZERO_CROSSINGS;
    table[index] = (sinc * besselI0(KAISER_BETA * Math.sqrt(Math.max(0, 1 - position * position)))) / scale;
  }
  return table;
}

/** The modified Bessel function of the first kind, order 0 (its power series). */
function besselI0(x: number): number {
  let sum = 1;
  let term = 1;
  for (let k = 1; k < 50 && term > sum * 1e-12; k++) {
    term *= (x / (2 * k)) ** 2;
    sum += term;
  }
  return sum;
}

/**
 * Resamples a stream of mono 16-bit audio piece by piece, keeping the filter's history across
 * pieces so joins do not click. Call `flush()` after the last piece for the tail.
 */
export class Resampler {
  readonly inputRate: number;
  readonly outputRate: number;
  /** Input samples per output sample. */
  readonly #step: number;
  /** How the kernel is stretched: below 1 when downsampling, to cut at the new Nyquist. */
  readonly #scale: number;
  /** How far, in input samples, the kernel reaches on each side. */
  readonly #reach: number;
  /** Input not yet fully used; `#pending[0]` is input sample number `#pendingStart`. */
  #pending = new Float64Array(0);
  #pendingStart = 0;
  #received = 0;
  #produced = 0;
  /** Weights by phase (see `#sampleAt`), made as each phase is first met. */
  readonly #phases = new Map<number, { first: number; weights: Float64Array }>();

  constructor(inputRate: number, outputRate: number) {
    if (!(Number.isInteger(inputRate) && Number.isInteger(outputRate) && inputRate > 0 && outputRate > 0)) throw new RangeError(`cannot resample from ${inputRate} Hz to ${outputRate} Hz`);
    this.inputRate = inputRate;
    this.outputRate = outputRate;
    this.#step = inputRate / outputRate;
    this.#scale = Math.min(1, outputRate / inputRate) * CUTOFF;
    this.#reach = ZERO_CROSSINGS / this.#scale;
  }

  /** Takes the next input samples; returns the output they complete. */
  push(samples: Int16Array): Int16Array {
    const joined = new Float64Array(this.#pending.length + samples.length);
    joined.set(this.#pending);
    for (let index = 0; index < samples.length; index++) joined[this.#pending.length + index] = samples[index] ?? 0;
    this.#pending = joined;
    this.#received += samples.length;
    // An output sample is complete once every input sample its kernel touches has arrived.
    const available = Math.floor((this.#received - 1 - this.#reach) / this.#step) + 1;
    return this.#produce(Math.max(this.#produced, available));
  }

  /** Ends the stream: the remaining output, reading silence past the last input sample. */
  flush(): Int16Array {
    const total = Math.round((this.#received * this.outputRate) / this.inputRate);
    return this.#produce(Math.max(this.#produced, total));
  }

  #produce(until: number): Int16Array {
    const output = new Int16Array(until - this.#produced);
    for (let index = 0; index < output.length; index++) output[index] = clipToInt16(this.#sampleAt(this.#produced + index));
    this.#produced = until;
    this.#forgetBefore(Math.ceil(this.#produced * this.#step - this.#reach));
    return output;
  }

  /**
   * The band-limited value of the input under output sample `output`. Rates are whole numbers,
   * so its position between input samples takes one of at most `outputRate` phases, each with
   * the same weights every time: they are computed once (a polyphase filter), not per sample.
   */
  #sampleAt(output: number): number {
    const numerator = output * this.inputRate;
    const base = Math.floor(numerator / this.outputRate);
    const { first, weights } = this.#phase(numerator - base * this.outputRate);
    let sum = 0;
    const start = base + first - this.#pendingStart;
    for (let tap = 0; tap < weights.length; tap++) {
      const offset = start + tap;
      if (offset >= 0 && offset < this.#pending.length && base + first + tap >= 0) sum += (weights[tap] ?? 0) * (this.#pending[offset] ?? 0);
    }
    return sum;
  }

  /** The weights for input samples `first`… after the one below an output at `phase / outputRate` past it, summing to 1. */
  #phase(phase: number): { first: number; weights: Float64Array } {
    const known = this.#phases.get(phase);
    if (known) return known;
    const fraction = phase / this.outputRate;
    const first = Math.ceil(fraction - this.#reach);
    const last = Math.floor(fraction + this.#reach);
    const weights = new Float64Array(last - first + 1);
    let total = 0;
    for (let tap = 0; tap < weights.length; tap++) {
      const position = Math.abs(fraction - (first + tap)) * this.#scale * TABLE_RESOLUTION;
      const entry = Math.floor(position);
      const below = kernel[entry] ?? 0;
      weights[tap] = below + (position - entry) * ((kernel[entry + 1] ?? 0) - below);
      total += weights[tap]!;
    }
    // Dividing by the weights' sum keeps a constant signal exactly constant whatever the phase.
    for (let tap = 0; tap < weights.length; tap++) weights[tap] = total === 0 ? 0 : weights[tap]! / total;
    const computed = { first, weights };
    this.#phases.set(phase, computed);
    return computed;
  }

  #forgetBefore(index: number): void {
    const drop = Math.min(this.#pending.length, index - this.#pendingStart);
    if (drop <= 0) return;
    this.#pending = this.#pending.slice(drop);
    this.#pendingStart += drop;
  }
}

/** `pcm` at `targetRate`, same duration, band-limited. */
export function resample(pcm: PcmAudio, targetRate: number): PcmAudio {
  if (pcm.sampleRate === targetRate) return { sampleRate: targetRate, samples: pcm.samples.slice() };
  const resampler = new Resampler(pcm.sampleRate, targetRate);
  const head = resampler.push(pcm.samples);
  const tail = resampler.flush();
  const samples = new Int16Array(head.length + tail.length);
  samples.set(head);
  samples.set(tail, head.length);
  return { sampleRate: targetRate, samples };
}
