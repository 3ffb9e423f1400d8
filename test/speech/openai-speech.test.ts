import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { durationMs } from '../../src/audio/pcm.js';
import { createOpenAISpeechEngine, type OpenAISpeechEngine, type OpenAISpeechOptions } from '../../src/engines/speech/openai-speech.js';
import { type FakeOpenAISpeech, type FakeOpenAISpeechOptions, KOKORO_VOICES, startFakeOpenAISpeech } from '../fakes/speech/fake-openai-speech.js';
import { FAKE_MS_PER_CHARACTER, chirp } from '../fakes/speech/tones.js';
import { bestCorrelation } from './signal-measures.js';
import { collect, engineFailure, sampleCount, validationFailure } from './speech-helpers.js';

/** Starts a fake and an engine on it, closing both after the test. */
async function withEngine(fakeOptions: FakeOpenAISpeechOptions, engineOptions: Partial<OpenAISpeechOptions>, test: (engine: OpenAISpeechEngine, fake: FakeOpenAISpeech) => Promise<void>): Promise<void> {
  const fake = await startFakeOpenAISpeech(fakeOptions);
  const engine = createOpenAISpeechEngine({ baseURL: fake.apiURL, ...engineOptions });
  try {
    await test(engine, fake);
  } finally {
    await engine.close();
    await fake.close();
  }
}

describe('OpenAI-style speech engine against OpenAI', () => {
  let fake: FakeOpenAISpeech;
  let engine: OpenAISpeechEngine;
  beforeAll(async () => {
    fake = await startFakeOpenAISpeech({ apiKey: 'sk-test' });
    engine = createOpenAISpeechEngine({ baseURL: fake.apiURL, apiKey: 'sk-test', headersTimeoutMs: 300, bodyTimeoutMs: 300 });
  });
  afterEach(() => {
    fake.script = {};
    fake.requests.length = 0;
  });
  afterAll(async () => {
    await engine.close();
    await fake.close();
  });

  it('speaks as 24 kHz PCM, sending model, voice, input and format with the key', async () => {
    const text = 'Hello from the other side.';
    const pcm = await engine.synthesize({ text, voiceId: 'nova' });

    expect(engine.provider).toBe('openai-compatible');
    expect(engine.maxTextLength).toBe(4096);
    expect(pcm.sampleRate).toBe(24000);
    expect(durationMs(pcm)).toBeCloseTo(text.length * FAKE_MS_PER_CHARACTER, 0);
    const speech = fake.requests.find((request) => request.path === '/v1/audio/speech')!;
    expect(speech.headers.authorization).toBe('Bearer sk-test');
    expect(speech.json).toEqual({ model: 'tts-1', voice: 'nova', input: text, response_format: 'pcm' });
  });

  it('streams PCM pieces as they arrive', async () => {
    fake.script = { chunkBytes: 2047 };
    const text = 'Streaming is the point of this sentence, and of this one too.';
    const pieces = await collect(engine.stream({ text, voiceId: 'alloy' }));
    expect(pieces.length).toBeGreaterThan(10);
    expect(sampleCount(pieces)).toBe(chirp({ sampleRate: 24000, durationMs: text.length * FAKE_MS_PER_CHARACTER }).samples.length);
  });

  it('offers OpenAI\'s voices when the server lists none, and refuses others before asking', async () => {
    const voices = await engine.listVoices();
    expect(voices.map((voice) => voice.id)).toEqual(['alloy', 'ash', 'ballad', 'coral', 'echo', 'fable', 'nova', 'onyx', 'sage', 'shimmer', 'verse']);
    expect(voices[0]).toEqual({ id: 'alloy', name: 'Alloy' });
    fake.requests.length = 0;
    const error = await validationFailure(engine.synthesize({ text: 'Hi', voiceId: 'marvin' }));
    expect(error.message).toContain('"marvin"');
    expect(fake.requests.filter((request) => request.path === '/v1/audio/speech')).toHaveLength(0);
  });

  it('turns the server\'s refusal of a configured voice into a validation error', async () => {
    await withEngine({}, { voices: ['alloy', 'retired'] }, async (own) => {
      const error = await validationFailure(own.synthesize({ text: 'Hi', voiceId: 'retired' }));
      expect(error.message).toContain('no voice "retired"');
    });
  });

  it('keeps status and message of 401, 422, 429 and 500', async () => {
    await withEngine({ apiKey: 'right' }, { apiKey: 'wrong' }, async (wrong) => {
      const error = await engineFailure(wrong.synthesize({ text: 'Hi', voiceId: 'nova' }));
      expect(error).toMatchObject({ status: 401, retryable: false, code: 'ENGINE_MISCONFIGURED' });
      expect(error.upstream).toMatch(/^Speech engine answered 401: Incorrect API key provided/);
    });
    for (const [status, retryable] of [[422, false], [429, true], [500, true]] as const) {
      fake.script = { failure: { kind: 'http', status, message: `failure ${status}` } };
      const error = await engineFailure(engine.synthesize({ text: 'Hi', voiceId: 'nova' }));
      expect(error).toMatchObject({ status, retryable, provider: 'openai-compatible', upstream: `Speech engine answered ${status}: failure ${status}` });
    }
  });

  it('times out on a hung server and fails on a dropped stream', async () => {
    fake.script = { failure: { kind: 'hang' } };
    expect(await engineFailure(engine.synthesize({ text: 'Hi', voiceId: 'nova' }))).toMatchObject({ code: 'ENGINE_TIMEOUT', retryable: true });
    fake.script = { failure: { kind: 'drop', afterBytes: 5000 }, chunkBytes: 1000 };
    const dropped = await engineFailure(collect(engine.stream({ text: 'x'.repeat(50), voiceId: 'nova' })));
    expect(dropped).toMatchObject({ code: 'ENGINE_FAILED', retryable: true });
    expect(sampleCount(dropped.pieces ?? [])).toBe(2500);
  });

  it('refuses text longer than 4096 characters', async () => {
    const error = await validationFailure(engine.synthesize({ text: 'a'.repeat(4097), voiceId: 'nova' }));
    expect(error.message).toMatch(/at most 4096/);
  });
});

describe('OpenAI-style speech engine against other servers', () => {
  it('lists Kokoro\'s own voices, naming their language, and accepts mixes of them', async () => {
    await withEngine({ flavor: 'kokoro' }, { model: 'kokoro', voices: ['alloy'] }, async (engine, fake) => {
      const voices = await engine.listVoices();
      expect(voices.map((voice) => voice.id)).toEqual(KOKORO_VOICES);
      expect(voices[0]).toEqual({ id: 'af_heart', name: 'Heart (American English, female)', language: 'en-US' });
      const mixed = await engine.synthesize({ text: 'Mixed voices', voiceId: 'af_bella(2)+af_sky(1)' });
      expect(mixed.samples.length).toBeGreaterThan(0);
      await validationFailure(engine.synthesize({ text: 'Hi', voiceId: 'af_bella+nobody' }));
      expect(fake.requests.filter((request) => request.path === '/v1/audio/voices')).toHaveLength(1);
    });
  });

  it('decodes mp3 answers, and streams them sentence by sentence', async () => {
    await withEngine({}, { responseFormat: 'mp3', speed: 2 }, async (engine, fake) => {
      const text = 'One sentence here. And a second one there.';
      const pcm = await engine.synthesize({ text, voiceId: 'onyx' });
      expect(pcm.sampleRate).toBe(24000);
      expect(Math.abs(durationMs(pcm) - (text.length * FAKE_MS_PER_CHARACTER) / 2) / durationMs(pcm)).toBeLessThan(0.05);
      const reference = chirp({ sampleRate: 24000, durationMs: (text.length * FAKE_MS_PER_CHARACTER) / 2, amplitude: 10000 }).samples;
      expect(bestCorrelation(reference, pcm.samples, 3000, 2000, 20000).correlation).toBeGreaterThan(0.9);

      const pieces = await collect(engine.stream({ text, voiceId: 'onyx' }));
      expect(pieces).toHaveLength(2);
      const inputs = fake.requests.filter((request) => request.path === '/v1/audio/speech').map((request) => (request.json as { input: string }).input);
      expect(inputs).toEqual([text, 'One sentence here.', 'And a second one there.']);
      expect((fake.requests.at(-1)!.json as { speed: number; response_format: string })).toMatchObject({ speed: 2, response_format: 'mp3' });
    });
  });

  it('decodes wav answers with streamed headers, as LocalAI sends them', async () => {
    await withEngine({ formats: ['wav'], streamedWavHeader: true }, { responseFormat: 'wav', discoverVoices: false }, async (engine, fake) => {
      const text = 'A wav answer.';
      const pcm = await engine.synthesize({ text, voiceId: 'alloy' });
      expect(pcm.samples).toEqual(chirp({ sampleRate: 24000, durationMs: text.length * FAKE_MS_PER_CHARACTER, amplitude: 10000 }).samples);
      expect(fake.requests.map((request) => request.path)).toEqual(['/v1/audio/speech']);
    });
  });

  it('keeps the server\'s refusal of a format it cannot write', async () => {
    await withEngine({ formats: ['mp3'] }, { responseFormat: 'wav' }, async (engine) => {
      const error = await engineFailure(engine.synthesize({ text: 'Hi', voiceId: 'alloy' }));
      expect(error).toMatchObject({ status: 400, retryable: false });
      expect(error.upstream).toContain("Invalid value for 'response_format'");
    });
  });
});
