import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeMp3 } from '../../src/audio/mp3.js';
import { durationMs } from '../../src/audio/pcm.js';
import { createEspeakSpeechEngine } from '../../src/engines/speech/espeak.js';
import { type FakeElevenLabs, startFakeElevenLabs } from '../fakes/speech/fake-elevenlabs.js';
import { type Harness, startHarness } from './harness.js';

function rms(samples: Int16Array): number {
  let sum = 0;
  for (const sample of samples) sum += sample * sample;
  return Math.sqrt(sum / Math.max(1, samples.length)) / 32768;
}

describe('speech API on the embedded espeak engine', () => {
  let api: Harness;
  let owner: { id: string; characterId: string; key: string };
  let other: { id: string; characterId: string; key: string };
  let firstVoice: string;
  beforeAll(async () => {
    api = await startHarness({ script: { reply: 'Good evening, traveller.' } });
    owner = await api.account('singer');
    other = await api.account('listener');
  });
  afterAll(async () => {
    await api.close();
  });

  it('lists the engine’s voices', async () => {
    const answer = await api.call('GET', '/api/v0/voices', { key: owner.key });
    expect(answer.status).toBe(200);
    expect(answer.body.engine).toBe('espeak');
    expect(answer.body.voices.length).toBeGreaterThan(5);
    firstVoice = answer.body.voices[0].id;
    expect(typeof answer.body.voices[0].name).toBe('string');
  });

  it('refuses to speak before the character has a voice, with 409 VOICE_NOT_TRAINED', async () => {
    const answer = await api.call('POST', `/api/v0/characters/${owner.characterId}/speak`, { key: owner.key, body: { text: 'Hello' } });
    expect(answer.status).toBe(409);
    expect(answer.body.error.code).toBe('VOICE_NOT_TRAINED');
    expect(answer.body.error.message).toContain('/voice');
  });

  it('trains a voice from a preset for the owner only, and names bad input', async () => {
    const refused = await api.call('POST', `/api/v0/characters/${owner.characterId}/voice`, { key: other.key, body: { voiceId: firstVoice } });
    expect(refused.status).toBe(404);
    const badPreset = await api.call('POST', `/api/v0/characters/${owner.characterId}/voice`, { key: owner.key, body: { voiceId: 'xx-nowhere+q9' } });
    expect(badPreset.status).toBe(400);
    expect(badPreset.body.error.message).toContain('xx-nowhere');
    const form = new FormData();
    form.append('samples', new Blob([Buffer.from('ID3 fake')], { type: 'audio/mpeg' }), 'me.mp3');
    const cloning = await api.call('POST', `/api/v0/characters/${owner.characterId}/voice`, { key: owner.key, raw: form });
    expect(cloning.status).toBe(400);
    expect(cloning.body.error.details.fields[0].field).toBe('samples');
    const trained = await api.call('POST', `/api/v0/characters/${owner.characterId}/voice`, { key: owner.key, body: { voiceId: firstVoice } });
    expect(trained.status).toBe(200);
    expect(trained.body.tts_voice_id).toBe(firstVoice);
  });

  it('speaks as an mp3 behind a signed URL, reusing the audio for the same text', async () => {
    const spoken = await api.call('POST', `/api/v0/characters/${owner.characterId}/speak`, { key: owner.key, body: { text: 'Hello there, how are you today?' } });
    expect(spoken.status).toBe(200);
    expect(spoken.body.success).toBe(true);
    const file = await fetch(spoken.body.url);
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe('audio/mpeg');
    const pcm = await decodeMp3(new Uint8Array(await file.arrayBuffer()));
    // What espeak itself makes of the text in that voice: the mp3 must carry all of it.
    const engine = createEspeakSpeechEngine();
    const source = await engine.synthesize({ text: 'Hello there, how are you today?', voiceId: firstVoice }).finally(() => engine.close());
    expect(Math.abs(durationMs(pcm) - durationMs(source)) / durationMs(source)).toBeLessThan(0.05);
    expect(rms(pcm.samples)).toBeGreaterThan(0.01);
    const again = await api.call('POST', `/api/v0/characters/${owner.characterId}/speak`, { key: owner.key, body: { text: 'Hello there, how are you today?' } });
    expect(new URL(again.body.url).pathname).toBe(new URL(spoken.body.url).pathname);
    const other = await api.call('POST', `/api/v0/characters/${owner.characterId}/speak`, { key: owner.key, body: { text: 'Something else entirely.' } });
    expect(new URL(other.body.url).pathname).not.toBe(new URL(spoken.body.url).pathname);
  });

  it('names empty and over-long text', async () => {
    const empty = await api.call('POST', `/api/v0/characters/${owner.characterId}/speak`, { key: owner.key, body: { text: '  ' } });
    expect(empty.status).toBe(400);
    const long = await api.call('POST', `/api/v0/characters/${owner.characterId}/speak`, { key: owner.key, body: { text: 'a'.repeat(6000) } });
    expect(long.status).toBe(400);
    expect(long.body.error.message).toMatch(/at most \d+ characters/);
  });

  it('answers a chat in audio when only audio/mp3 is allowed, storing the text', async () => {
    const created = await api.call('POST', '/api/v0/conversations', { key: owner.key, body: { characterId: owner.characterId } });
    const answer = await api.call('POST', `/api/v0/conversations/${created.body.id}/chat`, { key: owner.key, body: { data: 'Hi', allow: ['audio/mp3'] } });
    expect(answer.status).toBe(200);
    expect(answer.body.mimeType).toBe('audio/mp3');
    const pcm = await decodeMp3(Buffer.from(answer.body.data, 'base64'));
    expect(durationMs(pcm)).toBeGreaterThan(500);
    const read = await api.call('GET', `/api/v0/conversations/${created.body.id}`, { key: owner.key });
    expect(read.body.messages[1].content).toBe('Good evening, traveller.');
    const untrained = await api.call('POST', '/api/v0/conversations', { key: other.key, body: { characterId: other.characterId } });
    const refused = await api.call('POST', `/api/v0/conversations/${untrained.body.id}/chat`, { key: other.key, body: { data: 'Hi', allow: ['audio/mp3'] } });
    expect(refused.status).toBe(409);
    const kept = await api.call('GET', `/api/v0/conversations/${untrained.body.id}`, { key: other.key });
    expect(kept.body.messages).toEqual([]);
  });
});

describe('voice cloning through ElevenLabs', () => {
  let api: Harness;
  let elevenLabs: FakeElevenLabs;
  beforeAll(async () => {
    elevenLabs = await startFakeElevenLabs({ apiKey: 'xi-test-key' });
    api = await startHarness({ environment: { TTS_ENGINE: 'elevenlabs', ELEVENLABS_API_KEY: 'xi-test-key', ELEVENLABS_BASE_URL: elevenLabs.baseURL } });
  });
  afterAll(async () => {
    await api.close();
    await elevenLabs.close();
  });

  it('clones a voice from uploaded samples and speaks with it', async () => {
    const owner = await api.account('clone-owner');
    const form = new FormData();
    form.append('name', 'My voice');
    for (const index of [1, 2, 3]) form.append('samples', new Blob([Buffer.from(`RIFF sample ${index}`)], { type: 'audio/wav' }), `take${index}.wav`);
    const trained = await api.call('POST', `/api/v0/characters/${owner.characterId}/voice`, { key: owner.key, raw: form });
    expect(trained.status).toBe(200);
    expect(elevenLabs.clones).toHaveLength(1);
    expect(elevenLabs.clones[0]!.name).toBe('My voice');
    expect(elevenLabs.clones[0]!.files.map((file) => file.filename)).toEqual(['take1.wav', 'take2.wav', 'take3.wav']);
    expect(trained.body.tts_voice_id).toBeTruthy();
    const spoken = await api.call('POST', `/api/v0/characters/${owner.characterId}/speak`, { key: owner.key, body: { text: 'Cloned and talking.' } });
    expect(spoken.status).toBe(200);
    const pcm = await decodeMp3(new Uint8Array(await (await fetch(spoken.body.url)).arrayBuffer()));
    expect(durationMs(pcm)).toBeGreaterThan(300);
  });

  it('deletes at ElevenLabs the voice it cloned once replaced, and a deleted character’s, never a preset', async () => {
    const owner = await api.account('clone-keeper');
    const clone = async (characterId: string) => {
      const form = new FormData();
      form.append('samples', new Blob([Buffer.from('RIFF sample')], { type: 'audio/wav' }), 'take.wav');
      return (await api.call('POST', `/api/v0/characters/${characterId}/voice`, { key: owner.key, raw: form })).body.tts_voice_id as string;
    };
    const first = await clone(owner.characterId);
    const second = await clone(owner.characterId);
    expect(elevenLabs.deleted).toEqual([first]);
    // A preset replaces the clone: the clone goes; the preset stays at ElevenLabs.
    await api.call('POST', `/api/v0/characters/${owner.characterId}/voice`, { key: owner.key, body: { voiceId: '21m00Tcm4TlvDq8ikWAM' } });
    expect(elevenLabs.deleted).toEqual([first, second]);
    const extra = (await api.call('POST', '/api/v0/characters', { key: owner.key, body: { name: 'Understudy' } })).body.character.id as string;
    const third = await clone(extra);
    expect(elevenLabs.voices.some((voice) => voice.voice_id === third)).toBe(true);
    expect((await api.call('DELETE', `/api/v0/characters/${extra}`, { key: owner.key })).status).toBe(200);
    expect(elevenLabs.deleted).toEqual([first, second, third]);
    expect(elevenLabs.voices.some((voice) => voice.voice_id === third)).toBe(false);
    expect(elevenLabs.voices.some((voice) => voice.voice_id === '21m00Tcm4TlvDq8ikWAM')).toBe(true);
  });

  it('answers 502 with the engine’s reason when speech fails', async () => {
    const owner = await api.account('unlucky');
    const trained = await api.call('POST', `/api/v0/characters/${owner.characterId}/voice`, { key: owner.key, body: { voiceId: '21m00Tcm4TlvDq8ikWAM' } });
    expect(trained.status).toBe(200);
    elevenLabs.script = { failure: { kind: 'http', status: 500, message: 'synthesis cluster overloaded' } };
    try {
      const answer = await api.call('POST', `/api/v0/characters/${owner.characterId}/speak`, { key: owner.key, body: { text: 'Will this work?' } });
      expect(answer.status).toBe(502);
      expect(answer.body.error.code).toBe('ENGINE_FAILED');
      expect(answer.body.error.message).toBe('The speech engine failed to answer. Try again; if it keeps failing, tell the operator.');
    } finally {
      elevenLabs.script = {};
    }
  });

  it('says how many samples are needed', async () => {
    const owner = await api.account('too-many');
    const form = new FormData();
    for (let index = 0; index < 26; index++) form.append('samples', new Blob([Buffer.from('x')], { type: 'audio/wav' }), `s${index}.wav`);
    const answer = await api.call('POST', `/api/v0/characters/${owner.characterId}/voice`, { key: owner.key, raw: form });
    expect(answer.status).toBe(400);
    expect(answer.body.error.message).toContain('1 to 25');
  });
});
