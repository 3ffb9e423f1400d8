import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EngineError } from '../../src/core/errors.js';
import type { TranscriptionRequest } from '../../src/core/ports.js';
import { createOpenAITranscriber, type OpenAITranscriber, type OpenAITranscriptionOptions } from '../../src/engines/stt/openai-transcription.js';
import { type FakeTranscription, type FakeTranscriptionOptions, startFakeTranscription } from '../fakes/stt/fake-transcription.js';

/** A few bytes that start like an Ogg file; the fake does not decode audio. */
const OGG = new Uint8Array([0x4f, 0x67, 0x67, 0x53, 0, 2, ...Array.from({ length: 200 }, (_, index) => index % 251)]);
const VOICE_MESSAGE: TranscriptionRequest = { audio: OGG, mimeType: 'audio/ogg', filename: 'voice-message.ogg' };

async function failure(promise: Promise<unknown>): Promise<EngineError> {
  const thrown = await promise.then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(thrown).toBeInstanceOf(EngineError);
  return thrown as EngineError;
}

async function withTranscriber(fakeOptions: FakeTranscriptionOptions, options: Partial<OpenAITranscriptionOptions>, test: (transcriber: OpenAITranscriber, fake: FakeTranscription) => Promise<void>): Promise<void> {
  const fake = await startFakeTranscription(fakeOptions);
  const transcriber = createOpenAITranscriber({ baseURL: fake.apiURL, ...options });
  try {
    await test(transcriber, fake);
  } finally {
    await transcriber.close();
    await fake.close();
  }
}

describe('OpenAI-compatible transcriber against OpenAI', () => {
  let fake: FakeTranscription;
  let transcriber: OpenAITranscriber;
  beforeAll(async () => {
    fake = await startFakeTranscription({ apiKey: 'sk-test-key-0123456789' });
    transcriber = createOpenAITranscriber({ baseURL: fake.apiURL, apiKey: 'sk-test-key-0123456789', headersTimeoutMs: 300, bodyTimeoutMs: 300 });
  });
  afterEach(() => {
    fake.script = {};
    fake.transcriptions.length = 0;
    fake.loopback.requests.length = 0;
  });
  afterAll(async () => {
    await transcriber.close();
    await fake.close();
  });

  it('sends the file, model and format as multipart/form-data and reads the text', async () => {
    fake.script = { text: '  Good evening, Ada.  ' };
    const result = await transcriber.transcribe({ ...VOICE_MESSAGE, language: 'en' });

    expect(result).toEqual({ text: 'Good evening, Ada.' });
    expect(transcriber.provider).toBe('openai-compatible');
    expect(transcriber.maxAudioBytes).toBe(25 * 1024 * 1024);
    const [sent] = fake.transcriptions;
    expect(sent?.contentType).toMatch(/^multipart\/form-data; boundary=/);
    expect(sent?.fields).toEqual({ model: 'whisper-1', response_format: 'json', language: 'en' });
    expect(sent?.file?.name).toBe('voice-message.ogg');
    expect(sent?.file?.type).toBe('audio/ogg');
    expect(new Uint8Array(sent!.file!.bytes)).toEqual(OGG);
    expect(fake.loopback.requests[0]?.headers.authorization).toBe('Bearer sk-test-key-0123456789');
  });

  it('leaves the language out when it is not known, so the engine detects it', async () => {
    await transcriber.transcribe(VOICE_MESSAGE);
    expect(fake.transcriptions[0]?.fields).toEqual({ model: 'whisper-1', response_format: 'json' });
  });

  it('refuses empty audio and audio over the limit without sending it', async () => {
    const empty = await failure(transcriber.transcribe({ ...VOICE_MESSAGE, audio: new Uint8Array(0) }));
    expect(empty.message).toMatch(/empty/);
    const small = createOpenAITranscriber({ baseURL: fake.apiURL, apiKey: 'sk-test-key-0123456789', maxAudioBytes: 100 });
    const large = await failure(small.transcribe(VOICE_MESSAGE));
    await small.close();
    expect(large.status).toBe(413);
    expect(large.retryable).toBe(false);
    expect(large.message).toMatch(/too large/);
    expect(fake.loopback.requests).toHaveLength(0);
  });

  it('says the credentials are wrong without repeating the key or the engine', async () => {
    const wrong = createOpenAITranscriber({ baseURL: fake.apiURL, apiKey: 'sk-wrong-key-9876543210' });
    const error = await failure(wrong.transcribe(VOICE_MESSAGE));
    await wrong.close();
    expect(error.code).toBe('ENGINE_MISCONFIGURED');
    expect(error.status).toBe(401);
    expect(error.purpose).toBe('transcription');
    expect(error.message).toMatch(/^The transcription engine is not set up correctly/);
    expect(error.message).not.toMatch(/sk-|Incorrect|platform\.openai/);
    expect(error.upstream).toMatch(/Incorrect API key/);
    expect(error.upstream).not.toContain('sk-wrong-key-9876543210');
  });

  it('answers a format the engine refuses in our words, keeping the engine\'s for the log', async () => {
    const error = await failure(transcriber.transcribe({ audio: OGG, mimeType: 'audio/aiff', filename: 'speech.aiff' }));
    expect(error.status).toBe(400);
    expect(error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
    expect(error.retryable).toBe(false);
    expect(error.message).toBe('The transcription engine could not read this audio. Send it as Ogg, MP3, WAV, M4A or WebM; if it keeps failing, tell the operator.');
    expect(error.upstream).toMatch(/Invalid file format/);
    expect(JSON.stringify(error)).not.toMatch(/Invalid file format/);
  });

  it('says so in our words when the engine cannot decode the bytes', async () => {
    const error = await failure(transcriber.transcribe({ ...VOICE_MESSAGE, audio: new TextEncoder().encode('<html>a proxy page saved as .ogg</html>') }));
    expect(error.status).toBe(400);
    expect(error.message).toMatch(/^The transcription engine could not read this audio\./);
    expect(error.upstream).toMatch(/corrupted or unsupported/);
  });

  it('says a refused parameter is the operator\'s to fix, not the recording\'s', async () => {
    fake.script = { failWith: { status: 400, message: "Invalid value for 'temperature': must be between 0 and 1." } };
    const error = await failure(transcriber.transcribe(VOICE_MESSAGE));
    expect(error.retryable).toBe(false);
    expect(error.message).toBe('The transcription engine refused our request; nothing in your recording is at fault. If it keeps happening, tell the operator.');
    expect(error.code).toBe('ENGINE_FAILED');
    // A refused response_format is ours too, though it says "format".
    fake.script = { failWith: { status: 400, message: "Invalid value for 'response_format': must be one of json, text" } };
    expect((await failure(transcriber.transcribe(VOICE_MESSAGE))).message).toMatch(/nothing in your recording is at fault/);
  });

  it('never lets the engine\'s words into the message, whatever it says', async () => {
    fake.script = { failWith: { status: 500, message: 'Traceback: secret prompt about Ada at /srv/whisper/models' } };
    const error = await failure(transcriber.transcribe(VOICE_MESSAGE));
    expect(error.code).toBe('ENGINE_FAILED');
    expect(error.retryable).toBe(true);
    expect(error.message).toBe('The transcription engine failed to answer. Try again; if it keeps failing, tell the operator.');
    expect(error.upstream).toContain('secret prompt');
    expect(`${error.message} ${JSON.stringify(error)}`).not.toMatch(/secret|Traceback|srv/);
  });

  it('marks a busy engine as worth retrying', async () => {
    fake.script = { failWith: { status: 503, message: 'overloaded' } };
    const error = await failure(transcriber.transcribe(VOICE_MESSAGE));
    expect(error.code).toBe('ENGINE_UNAVAILABLE');
    expect(error.retryable).toBe(true);
  });

  it('gives up on a server that does not start answering in time', async () => {
    fake.script = { delayMs: 1_000 };
    const error = await failure(transcriber.transcribe(VOICE_MESSAGE));
    expect(error.code).toBe('ENGINE_TIMEOUT');
    expect(error.message).toBe('The transcription engine took too long to answer. Try again in a moment.');
  });

  it('stops when the caller aborts, with the caller\'s reason', async () => {
    fake.script = { delayMs: 200 };
    const reason = new Error('the person left');
    const controller = new AbortController();
    const pending = transcriber.transcribe(VOICE_MESSAGE, { signal: controller.signal });
    setTimeout(() => controller.abort(reason), 20);
    await expect(pending).rejects.toBe(reason);
  });

  it('refuses a 200 answer without a text', async () => {
    fake.script = { rawAnswer: { body: '{"detail":"model is loading, secret"}', contentType: 'application/json' } };
    const error = await failure(transcriber.transcribe(VOICE_MESSAGE));
    expect(error.code).toBe('ENGINE_FAILED');
    expect(error.message).not.toMatch(/secret|loading/);
  });

  it('refuses a 200 answer that is not JSON (a proxy\'s page)', async () => {
    fake.script = { rawAnswer: { body: '<html>captive portal</html>', contentType: 'text/html' } };
    const error = await failure(transcriber.transcribe(VOICE_MESSAGE));
    expect(error.retryable).toBe(false);
    expect(error.message).not.toMatch(/portal/);
  });
});

describe('OpenAI-compatible transcriber: formats and limits', () => {
  it('reads the language and duration of verbose_json, turning OpenAI\'s language name into a code', async () => {
    await withTranscriber({ flavor: 'openai' }, { responseFormat: 'verbose_json', model: 'whisper-1' }, async (transcriber, fake) => {
      fake.script = { text: 'Bonjour.', language: 'fr', duration: 2.36 };
      expect(await transcriber.transcribe(VOICE_MESSAGE)).toEqual({ text: 'Bonjour.', language: 'fr', durationSeconds: 2.36 });
      expect(fake.transcriptions[0]?.fields['response_format']).toBe('verbose_json');
    });
  });

  it('reads speaches\' verbose_json, which sends the code, and passes the model and prompt', async () => {
    await withTranscriber({ flavor: 'speaches' }, { responseFormat: 'verbose_json', model: 'Systran/faster-whisper-small', prompt: 'Ada, Lovelace' }, async (transcriber, fake) => {
      fake.script = { text: 'Hallo.', language: 'de', duration: 0.9 };
      expect(await transcriber.transcribe(VOICE_MESSAGE)).toEqual({ text: 'Hallo.', language: 'de', durationSeconds: 0.9 });
      expect(fake.transcriptions[0]?.fields).toEqual({ model: 'Systran/faster-whisper-small', response_format: 'verbose_json', prompt: 'Ada, Lovelace' });
    });
  });

  it('gives up on a server that takes longer than its timeout, saying it took too long', async () => {
    await withTranscriber({}, { headersTimeoutMs: 200 }, async (transcriber, fake) => {
      fake.script = { text: 'late', delayMs: 2_000 };
      const error = await failure(transcriber.transcribe(VOICE_MESSAGE));
      expect(error.code).toBe('ENGINE_TIMEOUT');
      expect(error.message).toMatch(/^The transcription engine took too long to answer/);
    });
  });

  it('says the file is too large when the server answers 413', async () => {
    await withTranscriber({ maxBodyBytes: 100 }, {}, async (transcriber) => {
      const error = await failure(transcriber.transcribe(VOICE_MESSAGE));
      expect(error.status).toBe(413);
      expect(error.code).toBe('PAYLOAD_TOO_LARGE');
      expect(error.retryable).toBe(false);
      expect(error.message).toBe('The audio is too large for the transcription engine. Send a shorter recording.');
      expect(error.upstream).toMatch(/Maximum content size limit \(100\) exceeded/);
    });
  });

  it('reads no more than maxAnswerBytes of an answer', async () => {
    await withTranscriber({}, { maxAnswerBytes: 1_000, responseFormat: 'verbose_json' }, async (transcriber, fake) => {
      fake.script = { paddingBytes: 10_000 };
      const error = await failure(transcriber.transcribe(VOICE_MESSAGE));
      expect(error.upstream).toMatch(/larger than 1000 bytes/);
      fake.script = {};
      expect((await transcriber.transcribe(VOICE_MESSAGE)).text).toBe('Hello there.');
    });
  });
});
