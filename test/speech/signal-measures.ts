/** Measurements of test signals: loudness, pitch by zero crossings, similarity. */

/** Root mean square of the samples. */
export function rms(samples: ArrayLike<number>, start = 0, end = samples.length): number {
  let sum = 0;
  for (let index = start; index < end; index++) sum += (samples[index] ?? 0) ** 2;
  return end > start ? Math.sqrt(sum / (end - start)) : 0;
}

/** A tone's frequency from its rising zero crossings between `start` and `end`. */
export function zeroCrossingFrequency(samples: ArrayLike<number>, sampleRate: number, start = 0, end = samples.length): number {
  const crossings: number[] = [];
  for (let index = Math.max(1, start); index < end; index++) {
    const before = samples[index - 1] ?? 0;
    const after = samples[index] ?? 0;
    if (before < 0 && after >= 0) crossings.push(index - 1 + before / (before - after));
  }
  const first = crossings[0];
  const last = crossings.at(-1);
  if (first === undefined || last === undefined || crossings.length < 2) return 0;
  return ((crossings.length - 1) * sampleRate) / (last - first);
}

/**
 * The best normalised correlation of `candidate` against `reference` over lags 0..maxLag (the
 * candidate may start later, as codecs add delay), measured over `reference[from..to]`.
 */
export function bestCorrelation(reference: ArrayLike<number>, candidate: ArrayLike<number>, maxLag: number, from = 0, to = reference.length): { correlation: number; lag: number } {
  let best = { correlation: -1, lag: 0 };
  for (let lag = 0; lag <= maxLag; lag++) {
    let product = 0;
    let referenceEnergy = 0;
    let candidateEnergy = 0;
    for (let index = from; index < to && index + lag < candidate.length; index++) {
      const a = reference[index] ?? 0;
      const b = candidate[index + lag] ?? 0;
      product += a * b;
      referenceEnergy += a * a;
      candidateEnergy += b * b;
    }
    const correlation = referenceEnergy > 0 && candidateEnergy > 0 ? product / Math.sqrt(referenceEnergy * candidateEnergy) : 0;
    if (correlation > best.correlation) best = { correlation, lag };
  }
  return best;
}

/**
 * The median fundamental frequency of the loud 40 ms frames of speech, by autocorrelation
 * over 60 to 500 Hz: enough to tell a low voice from a high one.
 */
export function medianPitch(samples: ArrayLike<number>, sampleRate: number): number {
  const frame = Math.round(sampleRate * 0.04);
  const shortestLag = Math.floor(sampleRate / 500);
  const longestLag = Math.ceil(sampleRate / 60);
  const loudness = rms(samples);
  const pitches: number[] = [];
  for (let start = 0; start + frame + longestLag < samples.length; start += frame) {
    if (rms(samples, start, start + frame) < loudness) continue;
    let best = { score: 0, lag: 0 };
    for (let lag = shortestLag; lag <= longestLag; lag++) {
      let product = 0;
      let energy = 0;
      for (let index = start; index < start + frame; index++) {
        product += (samples[index] ?? 0) * (samples[index + lag] ?? 0);
        energy += (samples[index + lag] ?? 0) ** 2;
      }
      const score = energy > 0 ? product / Math.sqrt(energy) : 0;
      if (score > best.score) best = { score, lag };
    }
    if (best.lag > 0) pitches.push(sampleRate / best.lag);
  }
  pitches.sort((a, b) => a - b);
  return pitches[Math.floor(pitches.length / 2)] ?? 0;
}
