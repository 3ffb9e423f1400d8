import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeVoiceMessage } from '../../src/audio/voice-message.js';
import type { PcmAudio } from '../../src/core/ports.js';
import type { FakeRequestBody } from '../fakes/fake-openai.js';
import { type FakeTranscription, startFakeTranscription } from '../fakes/stt/fake-transcription.js';
import { type Harness, readEvents, startHarness } from './harness.js';

const isChat = (request: { path: string; body: FakeRequestBody }) => request.path.endsWith('/chat/completions');

function tone(seconds: number, sampleRate = 48_000): PcmAudio {
  const samples = Int16Array.from({ length: Math.round(seconds * sampleRate) }, (_, index) => Math.round(8_000 * Math.sin((2 * Math.PI * 300 * index) / sampleRate)));
  return { sampleRate, samples };
}

describe('voice messages over HTTP, written down by a transcription server on the real multipart wire', () => {
  let api: Harness;
  let stt: FakeTranscription;
  let person: { id: string; characterId: string; key: string };
  let route: string;
  let voice: Buffer;
  const logLines: string[] = [];

  beforeAll(async () => {
    stt = await startFakeTranscription({ apiKey: 'stt-secret-key' });
    api = await startHarness({
      environment: { STT_ENGINE: 'openai', STT_BASE_URL: stt.apiURL, STT_API_KEY: 'stt-secret-key', STT_MODEL: 'whisper-test' },
      logDestination: { write: (line: string) => void logLines.push(line) },
    });
    person = await api.account('voice-sender');
    const created = await api.call('POST', '/api/v0/conversations', { key: person.key, body: { characterId: person.characterId } });
    route = `/api/v0/conversations/${created.body.id}`;
    voice = Buffer.from((await encodeVoiceMessage(tone(1.2))).file);
  });
  afterAll(async () => {
    await api?.close();
    await stt?.close();
  });

  const messages = async () => (await api.call('GET', route, { key: person.key })).body.messages as { content: string; mimetype: string; transcript?: string; participant_type: string }[];
  const send = (data: string, mimeType = 'audio/ogg') => api.call('POST', `${route}/chat`, { key: person.key, body: { data, mimeType } });

  it('transcribes the recording, answers the words, and keeps the audio readable by its signed URL', async () => {
    stt.script = { text: 'Tell me about the sea.' };
    const answer = await send(voice.toString('base64'));
    expect(answer.status).toBe(200);
    // The fake chat engine echoes the last user turn: the character heard the words.
    expect(answer.body.data).toBe('Tell me about the sea.');
    const heard = stt.transcriptions.at(-1)!;
    expect(heard.contentType).toMatch(/^multipart\/form-data; boundary=/);
    expect(heard.fields).toMatchObject({ model: 'whisper-test', response_format: 'json' });
    expect(heard.file).toMatchObject({ name: 'voice-message.ogg', type: 'audio/ogg' });
    expect(heard.file!.bytes.equals(voice)).toBe(true);
    const prompt = api.llm.requests.filter(isChat).at(-1)!.body.messages!;
    expect(prompt.at(-1)).toEqual({ role: 'user', content: 'Tell me about the sea.' });

    const [sent, reply] = await messages();
    expect(sent).toMatchObject({ mimetype: 'audio/ogg', transcript: 'Tell me about the sea.', participant_type: 'account' });
    expect(sent!.content).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/files\//);
    const file = await fetch(sent!.content);
    expect(file.status).toBe(200);
    expect(Buffer.from(await file.arrayBuffer()).equals(voice)).toBe(true);
    expect(reply).toMatchObject({ content: 'Tell me about the sea.', participant_type: 'character' });
    expect(reply).not.toHaveProperty('transcript');
  });

  it('takes a data: URL and streams the answer', async () => {
    stt.script = { text: 'And the mountains?' };
    const response = await fetch(`${api.url}${route}/chat/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${person.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ data: `data:audio/ogg;base64,${voice.toString('base64')}`, mimeType: 'audio/ogg' }),
    });
    expect(response.status).toBe(200);
    expect((await readEvents(response)).at(-1)).toBe('[DONE]');
    expect((await messages()).at(-2)?.transcript).toBe('And the mountains?');
  });

  it('answers nothing when no speech was heard, with a stable code', async () => {
    const before = (await messages()).length;
    const chats = api.llm.requests.filter(isChat).length;
    stt.script = { text: '' };
    const refused = await send(voice.toString('base64'));
    expect(refused.status).toBe(422);
    expect(refused.body.error.code).toBe('NO_SPEECH_HEARD');
    expect(await messages()).toHaveLength(before);
    expect(api.llm.requests.filter(isChat)).toHaveLength(chats);
  });

  it("keeps the engine's own words about a failure out of the answer, and the recording, unheard, in the conversation", async () => {
    stt.script = { failWith: { status: 500, message: 'internal trace at /srv/whisper/worker.py line 12' } };
    const before = (await messages()).length;
    const failed = await send(voice.toString('base64'));
    expect(failed.status).toBeGreaterThanOrEqual(500);
    expect(failed.body.error.code).toMatch(/^ENGINE_/);
    // Nothing the person sent is lost: the audio is stored, with no words.
    const kept = (await messages()).slice(before);
    expect(kept).toHaveLength(1);
    expect(kept[0]).toMatchObject({ transcript: '', participant_type: 'account' });
    expect(JSON.stringify(failed.body)).not.toContain('worker.py');
    expect(logLines.some((line) => line.includes('worker.py'))).toBe(true);
    expect(logLines.some((line) => line.includes('stt-secret-key'))).toBe(false);
  });

  it('answers 415 when the engine cannot read the recording, and 502 when it refuses our request, so a client knows whose to fix', async () => {
    stt.script = { failWith: { status: 400, message: 'Audio file might be corrupted or unsupported' } };
    const unreadable = await send(voice.toString('base64'));
    expect(unreadable.status).toBe(415);
    expect(unreadable.body.error).toMatchObject({ code: 'UNSUPPORTED_MEDIA_TYPE', message: expect.stringContaining('could not read this audio') });
    expect(JSON.stringify(unreadable.body)).not.toContain('corrupted');
    stt.script = { failWith: { status: 400, message: "Invalid value for 'response_format': must be one of json, text" } };
    const ours = await send(voice.toString('base64'));
    expect(ours.status).toBe(502);
    expect(ours.body.error).toMatchObject({ code: 'ENGINE_FAILED', message: expect.stringContaining('nothing in your recording is at fault') });
    stt.script = {};
  });

  it('refuses an oversized, a hostile or a non-audio body before it is transcribed', async () => {
    stt.script = {};
    const asked = stt.transcriptions.length;
    // 14 MB of base64 fits the 15 MB body limit but not the 10 MB recording limit: refused undecoded.
    const oversized = await send('A'.repeat(14 * 1024 * 1024));
    expect(oversized.status).toBe(413);
    expect(oversized.body.error).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', message: expect.stringContaining('recording') });
    const hostile = await send('not base64 at all %%%');
    expect(hostile.status).toBe(400);
    expect(hostile.body.error.code).toBe('VALIDATION_FAILED');
    const image = new PNG({ width: 4, height: 4 });
    const notAudio = await send(PNG.sync.write(image).toString('base64'));
    expect(notAudio.status).toBe(415);
    expect(notAudio.body.error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
    const unknownType = await send(voice.toString('base64'), 'application/zip');
    expect(unknownType.status).toBe(400);
    expect(unknownType.body.error.message).toContain('mimeType');
    expect(stt.transcriptions).toHaveLength(asked);
  });
});

describe('voice messages without a speech-to-text engine', () => {
  let api: Harness;
  beforeAll(async () => {
    api = await startHarness();
  });
  afterAll(async () => {
    await api?.close();
  });

  it('are refused with a stable code and a message saying what to set', async () => {
    const person = await api.account('no-stt');
    const created = await api.call('POST', '/api/v0/conversations', { key: person.key, body: { characterId: person.characterId } });
    const voice = Buffer.from((await encodeVoiceMessage(tone(0.5))).file);
    const refused = await api.call('POST', `/api/v0/conversations/${created.body.id}/chat`, { key: person.key, body: { data: voice.toString('base64'), mimeType: 'audio/ogg' } });
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe('TRANSCRIPTION_UNAVAILABLE');
    expect(refused.body.error.message).toContain('STT_ENGINE');
    expect((await api.call('GET', `/api/v0/conversations/${created.body.id}`, { key: person.key })).body.messages).toEqual([]);
  });
});
