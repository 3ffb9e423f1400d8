/** The fake's own wire, checked with plain fetch, so adapter tests rest on a server that behaves like the real ones. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeTranscription, startFakeTranscription } from '../fakes/stt/fake-transcription.js';

function form(fields: Record<string, string>, file?: { name: string; bytes?: Uint8Array }): FormData {
  const body = new FormData();
  for (const [name, value] of Object.entries(fields)) body.append(name, value);
  if (file !== undefined) body.append('file', new Blob([file.bytes ?? new TextEncoder().encode('OggS and then some audio')], { type: 'audio/ogg' }), file.name);
  return body;
}

describe('fake transcription server', () => {
  let fake: FakeTranscription;
  beforeAll(async () => {
    fake = await startFakeTranscription({ maxBodyBytes: 2_000 });
  });
  afterAll(async () => {
    await fake.close();
  });

  const post = (body: FormData | string, path = '/audio/transcriptions') => fetch(`${fake.apiURL}${path}`, { method: 'POST', body });

  it('answers text as plain text with a line end', async () => {
    fake.script = { text: 'Plain words.' };
    const response = await post(form({ model: 'whisper-1', response_format: 'text' }, { name: 'a.ogg' }));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await response.text()).toBe('Plain words.\n');
    fake.script = {};
  });

  it('answers verbose_json with OpenAI\'s shape', async () => {
    const response = await post(form({ model: 'whisper-1', response_format: 'verbose_json' }, { name: 'a.mp3' }));
    const body = (await response.json()) as Record<string, unknown>;
    expect(Object.keys(body)).toEqual(['task', 'language', 'duration', 'text', 'segments']);
    expect(body['language']).toBe('english');
  });

  it('refuses a request without a file, an unknown extension, an unknown format and a non-multipart body with 400', async () => {
    const missing = await post(form({ model: 'whisper-1' }));
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as { error: { message: string } }).error.message).toMatch(/body -> file\n {2}field required/);
    const extension = await post(form({ model: 'whisper-1' }, { name: 'a.aiff' }));
    expect(extension.status).toBe(400);
    expect(await extension.json()).toEqual({ error: { message: "Invalid file format. Supported formats: ['flac', 'm4a', 'mp3', 'mp4', 'mpeg', 'mpga', 'oga', 'ogg', 'wav', 'webm']", type: 'invalid_request_error', param: 'file', code: null } });
    const format = await post(form({ model: 'whisper-1', response_format: 'xml' }, { name: 'a.ogg' }));
    expect(format.status).toBe(400);
    const corrupted = await post(form({ model: 'whisper-1' }, { name: 'a.ogg', bytes: new TextEncoder().encode('<html>not audio</html>') }));
    expect(await corrupted.json()).toEqual({ error: { message: 'Audio file might be corrupted or unsupported', type: 'invalid_request_error', param: 'file', code: 'invalid_value' } });
    const notMultipart = await post('{"file":"x"}');
    expect(notMultipart.status).toBe(400);
  });

  it('refuses a body past its limit with 413, and serves whisper.cpp\'s /inference route', async () => {
    const tooLarge = await post(form({ model: 'whisper-1' }, { name: 'a.ogg', bytes: new Uint8Array(3_000).fill(0x4f) }));
    expect(tooLarge.status).toBe(413);
    const inference = await fetch(`${fake.loopback.url}/inference`, { method: 'POST', body: form({ model: 'whisper-1' }, { name: 'a.wav' }) });
    expect(await inference.json()).toEqual({ text: 'Hello there.' });
  });
});
