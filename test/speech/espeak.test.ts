import { afterAll, describe, expect, it } from 'vitest';
import { durationMs } from '../../src/audio/pcm.js';
import { AppError } from '../../src/core/errors.js';
import type { PcmAudio } from '../../src/core/ports.js';
import { createEspeakSpeechEngine } from '../../src/engines/speech/espeak.js';
import { parseEspeakVoiceId } from '../../src/engines/speech/espeak-voices.js';
import { medianPitch, rms } from './signal-measures.js';
import { collect, validationFailure } from './speech-helpers.js';

const engine = createEspeakSpeechEngine();
afterAll(() => engine.close());

/** espeak adds a little randomness (its voicing noise), so the same request varies slightly. */
function expectAbout(actual: number, expected: number, tolerance = 0.05): void {
  expect(Math.abs(actual - expected) / expected).toBeLessThan(tolerance);
}

describe('espeak speech engine', () => {
  it('speaks "Hello world" as 22 050 Hz mono PCM of a plausible length that is not silence', async () => {
    const pcm = await engine.synthesize({ text: 'Hello world', voiceId: 'en-us' });
    expect(engine.provider).toBe('espeak');
    expect(pcm.sampleRate).toBe(22050);
    expect(pcm.samples).toBeInstanceOf(Int16Array);
    expect(durationMs(pcm)).toBeGreaterThan(500);
    expect(durationMs(pcm)).toBeLessThan(3000);
    expect(rms(pcm.samples)).toBeGreaterThan(500);
  });

  it('sounds different with another variant or pitch, and is shorter at a higher rate', async () => {
    const text = 'The quick brown fox jumps over the lazy dog.';
    const [male, female, low, high, slow, fast] = await Promise.all(
      ['en-us+m1', 'en-us+f3', 'en-us;pitch=10', 'en-us;pitch=90', 'en-us;rate=100', 'en-us;rate=250'].map((voiceId) => engine.synthesize({ text, voiceId })),
    );
    expect(medianPitch(female!.samples, 22050)).toBeGreaterThan(1.3 * medianPitch(male!.samples, 22050));
    expect(medianPitch(high!.samples, 22050)).toBeGreaterThan(1.3 * medianPitch(low!.samples, 22050));
    expect(durationMs(slow!)).toBeGreaterThan(1.8 * durationMs(fast!));
  });

  it('gives each caller its own voice and rate when calls overlap', async () => {
    const text = 'Two voices at once, in one worker.';
    const alone = await engine.synthesize({ text, voiceId: 'en-us+f3;rate=300' });
    const slowAlone = await engine.synthesize({ text, voiceId: 'en-us+m3;rate=90' });
    const [together, slowTogether] = await Promise.all([
      engine.synthesize({ text, voiceId: 'en-us+f3;rate=300' }),
      engine.synthesize({ text, voiceId: 'en-us+m3;rate=90' }),
      collect(engine.stream({ text: 'Ein Satz. Noch ein Satz. Und ein dritter.', voiceId: 'de+m3;rate=120' })),
    ]);
    expect(durationMs(slowAlone)).toBeGreaterThan(2.5 * durationMs(alone));
    expectAbout(together!.samples.length, alone.samples.length);
    expectAbout((slowTogether as PcmAudio).samples.length, slowAlone.samples.length);
  });

  it('streams one piece per sentence, which together are the whole speech', async () => {
    const request = { text: 'This is the first sentence. Is this the second one? Yes, it is the third!', voiceId: 'en-gb+f4' };
    const pieces = await collect(engine.stream(request));
    expect(pieces).toHaveLength(3);
    for (const piece of pieces) expect(rms(piece.samples)).toBeGreaterThan(500);
    const whole = await engine.synthesize(request);
    expectAbout(pieces.reduce((total, piece) => total + piece.samples.length, 0), whole.samples.length);
  });

  it('speaks markup in the text instead of obeying it', async () => {
    const pcm = await engine.synthesize({ text: 'one <break time="9s"/> two', voiceId: 'en-us;rate=300' });
    expect(durationMs(pcm)).toBeLessThan(5000);
  });

  it('refuses a bad preset with a validation error naming it', async () => {
    for (const voiceId of ['en-us+f3;pitch=200', 'en-us;rate=20', 'en-us;speed=2', 'en us', 'xx-yy', 'en-us+nosuchvariant', 'en-us;pitch=5;pitch=6']) {
      const error = await validationFailure(engine.synthesize({ text: 'Hi', voiceId }));
      expect(error.code).toBe('VALIDATION_FAILED');
      expect(error.message).toContain(voiceId);
      expect(error.issues[0]?.field).toBe('voiceId');
    }
    await validationFailure(collect(engine.stream({ text: 'Hi', voiceId: 'zz' })));
  });

  it('refuses empty and overlong text', async () => {
    await validationFailure(engine.synthesize({ text: '  ', voiceId: 'en-us' }));
    const error = await validationFailure(engine.synthesize({ text: 'a'.repeat(5001), voiceId: 'en-us' }));
    expect(error.message).toMatch(/at most 5000/);
    expect(engine.maxTextLength).toBe(5000);
  });

  it('lists a few dozen curated presets, each of which it accepts', async () => {
    const voices = await engine.listVoices();
    expect(voices.length).toBeGreaterThanOrEqual(24);
    expect(voices.length).toBeLessThanOrEqual(60);
    expect(new Set(voices.map((voice) => voice.id)).size).toBe(voices.length);
    expect(voices).toContainEqual(expect.objectContaining({ id: 'en-us+f3', name: 'English (US), female 3', language: 'en-US' }));
    expect(voices).toContainEqual(expect.objectContaining({ id: 'pt-br+m3', name: 'Portuguese (Brazil), male 3', language: 'pt-BR' }));
    for (const voice of voices) expect(() => parseEspeakVoiceId(voice.id)).not.toThrow();
    const sample = voices.filter((_, index) => index % 7 === 0);
    for (const voice of sample) expect((await engine.synthesize({ text: 'Hello.', voiceId: voice.id })).samples.length).toBeGreaterThan(0);
  });

  it('stops waiting when the caller aborts', async () => {
    const controller = new AbortController();
    controller.abort(new AppError('INTERNAL', 'gave up'));
    await expect(engine.synthesize({ text: 'Hello', voiceId: 'en-us' }, { signal: controller.signal })).rejects.toThrow('gave up');
  });

  it('starts a new worker after being closed', async () => {
    const own = createEspeakSpeechEngine({ maxTextLength: 100 });
    const first = await own.synthesize({ text: 'Again', voiceId: 'en-us' });
    await own.close();
    const second = await own.synthesize({ text: 'Again', voiceId: 'en-us' });
    expectAbout(second.samples.length, first.samples.length);
    await own.close();
  });
});
