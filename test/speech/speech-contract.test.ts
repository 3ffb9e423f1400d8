/**
 * The `SpeechEngine` contract, run against every adapter: espeak for real, the HTTP engines
 * against their fakes on 127.0.0.1.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SpeechEngine } from '../../src/core/ports.js';
import { createElevenLabsSpeechEngine } from '../../src/engines/speech/elevenlabs.js';
import { createEspeakSpeechEngine } from '../../src/engines/speech/espeak.js';
import { createOpenAISpeechEngine } from '../../src/engines/speech/openai-speech.js';
import { startFakeElevenLabs } from '../fakes/speech/fake-elevenlabs.js';
import { startFakeOpenAISpeech } from '../fakes/speech/fake-openai-speech.js';
import { rms } from './signal-measures.js';
import { collect, validationFailure } from './speech-helpers.js';

interface Subject {
  engine: SpeechEngine;
  unknownVoice: string;
  close(): Promise<void>;
}

const subjects: Record<string, () => Promise<Subject>> = {
  espeak: async () => {
    const engine = createEspeakSpeechEngine();
    return { engine, unknownVoice: 'xx-nowhere+f3', close: () => engine.close() };
  },
  elevenlabs: async () => {
    const fake = await startFakeElevenLabs();
    const engine = createElevenLabsSpeechEngine({ baseURL: fake.baseURL, apiKey: 'test-key' });
    return { engine, unknownVoice: 'noSuchVoice0000000000', close: async () => (await engine.close(), await fake.close()) };
  },
  'openai-compatible (Kokoro)': async () => {
    const fake = await startFakeOpenAISpeech({ flavor: 'kokoro' });
    const engine = createOpenAISpeechEngine({ baseURL: fake.apiURL, model: 'kokoro' });
    return { engine, unknownVoice: 'zz_nobody', close: async () => (await engine.close(), await fake.close()) };
  },
};

describe.each(Object.keys(subjects))('SpeechEngine contract: %s', (name) => {
  let subject: Subject;
  beforeAll(async () => {
    subject = await subjects[name]!();
  });
  afterAll(() => subject.close());

  it('lists voices with ids and names, and speaks in the first one', async () => {
    const voices = await subject.engine.listVoices();
    expect(voices.length).toBeGreaterThan(0);
    for (const voice of voices) {
      expect(voice.id).not.toBe('');
      expect(voice.name).not.toBe('');
    }
    const pcm = await subject.engine.synthesize({ text: 'Hello world. How are you today?', voiceId: voices[0]!.id });
    expect(pcm.samples).toBeInstanceOf(Int16Array);
    expect(pcm.sampleRate).toBeGreaterThanOrEqual(16000);
    expect(pcm.samples.length / pcm.sampleRate).toBeGreaterThan(0.5);
    expect(rms(pcm.samples)).toBeGreaterThan(300);
  });

  it('streams pieces of one rate that add up to about the whole', async () => {
    const [voice] = await subject.engine.listVoices();
    const request = { text: 'This is the first sentence. This is the second one.', voiceId: voice!.id };
    const whole = await subject.engine.synthesize(request);
    const pieces = await collect(subject.engine.stream(request));
    expect(pieces.length).toBeGreaterThan(0);
    for (const piece of pieces) expect(piece.sampleRate).toBe(whole.sampleRate);
    const streamed = pieces.reduce((total, piece) => total + piece.samples.length, 0);
    expect(Math.abs(streamed - whole.samples.length) / whole.samples.length).toBeLessThan(0.1);
  });

  it('refuses an unknown voice, empty text and text over the limit as validation errors', async () => {
    const [voice] = await subject.engine.listVoices();
    const unknown = await validationFailure(subject.engine.synthesize({ text: 'Hi there', voiceId: subject.unknownVoice }));
    expect(unknown.message).toContain(subject.unknownVoice);
    await validationFailure(subject.engine.synthesize({ text: '', voiceId: voice!.id }));
    await validationFailure(collect(subject.engine.stream({ text: 'x'.repeat(subject.engine.maxTextLength + 1), voiceId: voice!.id })));
  });
});
