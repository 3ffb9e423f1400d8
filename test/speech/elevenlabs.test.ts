import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { durationMs } from '../../src/audio/pcm.js';
import { createElevenLabsSpeechEngine, type ElevenLabsSpeechEngine } from '../../src/engines/speech/elevenlabs.js';
import { type FakeElevenLabs, startFakeElevenLabs } from '../fakes/speech/fake-elevenlabs.js';
import { FAKE_MS_PER_CHARACTER, speechOf, tone } from '../fakes/speech/tones.js';
import { encodeWav } from '../../src/audio/wav.js';
import { encodeMp3 } from '../../src/audio/mp3.js';
import { collect, engineFailure, sampleCount, validationFailure } from './speech-helpers.js';

const RACHEL = '21m00Tcm4TlvDq8ikWAM';
let fake: FakeElevenLabs;
let engine: ElevenLabsSpeechEngine;

beforeAll(async () => {
  fake = await startFakeElevenLabs({ apiKey: 'test-key' });
  engine = createElevenLabsSpeechEngine({ baseURL: fake.baseURL, apiKey: 'test-key', headersTimeoutMs: 300, bodyTimeoutMs: 300 });
});
afterEach(() => {
  fake.script = {};
  fake.requests.length = 0;
});
afterAll(async () => {
  await engine.close();
  await fake.close();
});

describe('ElevenLabs speech engine', () => {
  it('speaks text as 24 kHz PCM, sending the key, model and voice settings', async () => {
    const text = 'Hello there, how are you?';
    const pcm = await engine.synthesize({ text, voiceId: RACHEL });

    expect(engine.provider).toBe('elevenlabs');
    expect(pcm.sampleRate).toBe(24000);
    expect(durationMs(pcm)).toBeCloseTo(text.length * FAKE_MS_PER_CHARACTER, 0);
    expect(pcm.samples).toEqual(speechOf(text, 24000).samples);
    const [request] = fake.requests;
    expect(request).toMatchObject({ method: 'POST', path: `/v1/text-to-speech/${RACHEL}` });
    expect(request!.query.get('output_format')).toBe('pcm_24000');
    expect(request!.headers['xi-api-key']).toBe('test-key');
    expect(request!.json).toEqual({ text, model_id: 'eleven_multilingual_v2', voice_settings: { stability: 0.5, similarity_boost: 0.75 } });
  });

  it('streams PCM as it arrives, each piece whole samples, together the whole speech', async () => {
    fake.script = { chunkBytes: 3333 };
    const text = 'A longer sentence, so that the answer comes in many chunks.';
    const pieces = await collect(engine.stream({ text, voiceId: RACHEL }));

    expect(fake.requests[0]!.path).toBe(`/v1/text-to-speech/${RACHEL}/stream`);
    expect(pieces.length).toBeGreaterThan(10);
    expect(sampleCount(pieces)).toBe(speechOf(text, 24000).samples.length);
    expect(Int16Array.from(pieces.flatMap((piece) => [...piece.samples]))).toEqual(speechOf(text, 24000).samples);
  });

  it('yields the audio already received before a stream stalls, then times out', async () => {
    fake.script = { failure: { kind: 'stall', afterBytes: 20_000 }, chunkBytes: 4000 };
    const error = await engineFailure(collect(engine.stream({ text: 'x'.repeat(100), voiceId: RACHEL })));
    expect(error).toMatchObject({ code: 'ENGINE_TIMEOUT', provider: 'elevenlabs', retryable: true });
    expect(sampleCount(error.pieces ?? [])).toBe(10_000);
  });

  it('lists voices with their language and description', async () => {
    const voices = await engine.listVoices();
    expect(voices).toEqual([
      { id: RACHEL, name: 'Rachel', language: 'en-US', description: 'american, young, female, narration' },
      { id: 'pNInz6obpgDQGcFmaJgB', name: 'Adam', description: 'A deep, calm narrator.' },
    ]);
    expect(fake.requests[0]).toMatchObject({ method: 'GET', path: '/v1/voices' });
  });

  it('clones a voice from three samples sent as repeated multipart files, then speaks with it', async () => {
    const samples = [
      { filename: 'one.wav', mimeType: 'audio/wav', data: encodeWav(tone({ sampleRate: 16000, durationMs: 300 })) },
      { filename: 'two.mp3', mimeType: 'audio/mpeg', data: encodeMp3(tone({ sampleRate: 22050, durationMs: 300 })) },
      { filename: 'three "quoted".wav', mimeType: 'audio/wav', data: encodeWav(tone({ sampleRate: 24000, durationMs: 200, frequency: 300 })) },
    ];
    const cloning = createElevenLabsSpeechEngine({ baseURL: fake.baseURL, apiKey: 'test-key', cloneDescription: 'Made by a test', cloneLabels: { source: 'likeness' } });
    try {
      const voice = await cloning.cloneVoice({ name: ' Captain ', samples });
      expect(voice).toEqual({ id: expect.stringMatching(/^clonedVoice/), name: 'Captain' });

      const upload = fake.clones.at(-1)!;
      expect(upload).toMatchObject({ name: 'Captain', description: 'Made by a test', labels: { source: 'likeness' } });
      expect(upload.files.map((file) => [file.filename, file.contentType])).toEqual(samples.map((sample) => [sample.filename, sample.mimeType]));
      upload.files.forEach((file, index) => expect(new Uint8Array(file.bytes)).toEqual(samples[index]!.data));
      expect(String(fake.requests[0]!.headers['content-type'])).toMatch(/^multipart\/form-data; boundary=/);

      const spoken = await cloning.synthesize({ text: 'Ahoy', voiceId: voice.id });
      expect(spoken.samples.length).toBe(speechOf('Ahoy', 24000).samples.length);
      expect(await cloning.listVoices()).toContainEqual({ id: voice.id, name: 'Captain', description: 'Made by a test' });
    } finally {
      await cloning.close();
    }
  });

  it('has a fake that refuses a clone upload whose files lack a filename or content type', async () => {
    const form = new FormData();
    form.append('name', 'Nameless');
    form.append('files', 'just text, not a file');
    const answer = await fetch(`${fake.baseURL}/v1/voices/add`, { method: 'POST', headers: { 'xi-api-key': 'test-key' }, body: form });
    expect(answer.status).toBe(422);
    expect(JSON.stringify(await answer.json())).toContain('every files part must be a file with a filename');
  });

  it('keeps the message of a refused key, not retryable', async () => {
    const wrong = createElevenLabsSpeechEngine({ baseURL: fake.baseURL, apiKey: 'wrong' });
    try {
      const error = await engineFailure(wrong.synthesize({ text: 'Hi', voiceId: RACHEL }));
      expect(error).toMatchObject({ status: 401, retryable: false, code: 'ENGINE_MISCONFIGURED', upstream: 'ElevenLabs answered 401: Invalid API key' });
    } finally {
      await wrong.close();
    }
  });

  it('maps 422, 429 and 500 to engine errors keeping status and message', async () => {
    fake.script = { failure: { kind: 'http', status: 422, message: 'text is too long' } };
    const invalid = await engineFailure(engine.synthesize({ text: 'Hi', voiceId: RACHEL }));
    expect(invalid).toMatchObject({ status: 422, retryable: false });
    expect(invalid.upstream).toContain('text is too long');

    fake.script = { failure: { kind: 'http', status: 429 } };
    const limited = await engineFailure(collect(engine.stream({ text: 'Hi', voiceId: RACHEL })));
    expect(limited).toMatchObject({ status: 429, retryable: true });
    expect(limited.upstream).toBe('ElevenLabs answered 429: Too many concurrent requests for your subscription. Please upgrade or try again later.');

    fake.script = { failure: { kind: 'http', status: 500, message: 'Something broke.' } };
    const broken = await engineFailure(engine.cloneVoice({ name: 'x', samples: [{ filename: 'a.wav', mimeType: 'audio/wav', data: new Uint8Array(10) }] }));
    expect(broken).toMatchObject({ status: 500, retryable: true, upstream: 'ElevenLabs answered 500: Something broke.' });
  });

  it('names an unknown voice in a validation error', async () => {
    const error = await validationFailure(engine.synthesize({ text: 'Hi', voiceId: 'noSuchVoice123' }));
    expect(error.message).toBe('voiceId: ElevenLabs has no voice "noSuchVoice123".');
    await validationFailure(engine.synthesize({ text: 'Hi', voiceId: '../v1/voices' }));
    expect(fake.requests).toHaveLength(1);
  });

  it('times out on a hung engine and fails on a dropped connection', async () => {
    fake.script = { failure: { kind: 'hang' } };
    const hung = await engineFailure(engine.synthesize({ text: 'Hi', voiceId: RACHEL }));
    expect(hung).toMatchObject({ code: 'ENGINE_TIMEOUT', retryable: true });

    fake.script = { failure: { kind: 'drop', afterBytes: 1001 } };
    const dropped = await engineFailure(engine.synthesize({ text: 'Hello, dropped world', voiceId: RACHEL }));
    expect(dropped).toMatchObject({ code: 'ENGINE_FAILED', retryable: true, provider: 'elevenlabs' });
    expect(dropped.upstream).toMatch(/closed the connection/);
  });

  it('refuses empty text before calling the engine', async () => {
    await validationFailure(engine.synthesize({ text: ' ', voiceId: RACHEL }));
    expect(fake.requests).toHaveLength(0);
  });
});
